//! What the user is told, and the seam it leaves through: [`NoticeSink`].
//!
//! Notices are short and factual: what happened, the kind and course, the
//! title, the due date in the user's time zone, the link. The daemon
//! implements the sink over its channels; a notice counts as sent only when
//! `deliver` returns `Ok`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::{ItemKind, LmsItem};
use crate::config::{LmsTarget, format_span};
use futures::future::BoxFuture;

/// Why a notice is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoticeKind {
    /// First time this item is seen.
    New,
    /// It changed since the user was told (say, a new due date).
    Changed,
    /// Its due date is at most this far away.
    Reminder { before: Duration },
    /// A line about the source rather than one item (the first poll's
    /// "tracking N items"); `item` then only names the source.
    Source,
}

#[derive(Debug, Clone)]
pub struct Notice {
    pub kind: NoticeKind,
    pub item: LmsItem,
    /// The message text, ready to send.
    pub text: String,
    /// `[lms] deliver`, when configured.
    pub target: Option<LmsTarget>,
}

/// Where notices go. Return `Ok` only once the channel accepted the message:
/// on `Err` the notice is tried again on the next poll.
pub trait NoticeSink: Send + Sync {
    fn deliver<'a>(&'a self, notice: &'a Notice) -> BoxFuture<'a, Result<(), NoticeError>>;
}

/// Why a notice was not delivered (it is tried again later).
#[derive(Debug, thiserror::Error)]
pub enum NoticeError {
    #[error("no [lms] deliver target is configured")]
    NoTarget,
    /// The chat did not take it.
    #[error(transparent)]
    Refused(Box<dyn std::error::Error + Send + Sync>),
}

/// A due date in the user's zone: `Fri 14 Mar 2025 23:59 CET`, or
/// `Fri 18 Apr 2025` for a whole day.
pub fn format_due(due: DateTime<Utc>, all_day: bool, tz: Tz) -> String {
    let format = if all_day {
        "%a %-d %b %Y"
    } else {
        "%a %-d %b %Y %H:%M %Z"
    };
    due.with_timezone(&tz).format(format).to_string()
}

/// The line a first poll sends instead of a notice per past item.
pub fn tracking(source: &str, items: usize, past: usize) -> String {
    format!(
        "Tracking {items} item{} from {source}. {past} already past {} recorded without a notice each; new and changed items and reminders follow as usual.",
        if items == 1 { "" } else { "s" },
        if past == 1 { "was" } else { "were" },
    )
}

/// Feedback characters a grade's notice shows.
const FEEDBACK: usize = 400;

/// The plain notice text. `scores`: the source shows a grade's mark.
pub fn plain(
    kind: &NoticeKind,
    item: &LmsItem,
    previous: Option<&LmsItem>,
    tz: Tz,
    scores: bool,
) -> String {
    let Some(head) = head(kind, item) else {
        return item.title.clone();
    };
    let due = |d: DateTime<Utc>| format_due(d, item.all_day, tz);
    let mut lines = vec![match &item.course {
        Some(course) => format!("{head} · {course}"),
        None => format!("{head} · {}", item.source),
    }];
    lines.push(item.title.clone());
    if let Some(old) = previous.filter(|p| p.title != item.title) {
        lines.push(format!("(was: {})", old.title));
    }
    match (item.due, previous.map(|p| p.due)) {
        (Some(new), Some(old)) if old != Some(new) => lines.push(format!(
            "Due {} (was {})",
            due(new),
            old.map(due).unwrap_or_else(|| "none".into())
        )),
        (Some(new), _) => lines.push(format!("Due {}", due(new))),
        (None, Some(Some(old))) => lines.push(format!("No due date any more (was {})", due(old))),
        (None, _) => {}
    }
    if let Some(closes) = item.closes {
        lines.push(format!("Closes {}", format_due(closes, false, tz)));
    }
    if item.kind == ItemKind::Grade {
        if let Some(mark) = item.mark.as_ref().filter(|_| scores) {
            lines.push(format!("Grade: {mark}"));
        }
        if let Some(feedback) = item.detail.as_deref().filter(|d| !d.trim().is_empty()) {
            lines.push(format!(
                "Feedback: {}",
                crate::tools::cap(feedback.trim(), FEEDBACK)
            ));
        }
    }
    if let Some(url) = &item.url {
        lines.push(url.clone());
    }
    lines.join("\n")
}

/// The first words of a notice; `None` for a source's own line.
fn head(kind: &NoticeKind, item: &LmsItem) -> Option<String> {
    let what = item.kind.as_str();
    Some(match (kind, item.kind) {
        (NoticeKind::Source, _) => return None,
        (NoticeKind::New, ItemKind::Grade) => "Graded".into(),
        (NoticeKind::Changed, ItemKind::Grade) => "Grade updated".into(),
        (NoticeKind::New, ItemKind::QuizOpen) => "Quiz open".into(),
        (NoticeKind::New, _) => format!("New {what}"),
        (NoticeKind::Changed, _) => format!("Changed {what}"),
        (NoticeKind::Reminder { before }, _) => {
            format!("Due in {}: {what}", format_span(*before))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_notices_are_short_and_local() {
        let mut item = LmsItem::new("uni", "assign:1", ItemKind::Assignment, "Essay 1");
        item.course = Some("CS101".into());
        item.url = Some("https://m.example/a/1".into());
        item.due = DateTime::from_timestamp(1_741_993_140, 0); // 2025-03-14 22:59 UTC
        let tz = chrono_tz::Europe::Berlin;
        assert_eq!(
            plain(&NoticeKind::New, &item, None, tz, false),
            "New assignment · CS101\nEssay 1\nDue Fri 14 Mar 2025 23:59 CET\nhttps://m.example/a/1"
        );
        let mut old = item.clone();
        old.due = DateTime::from_timestamp(1_741_906_740, 0);
        let changed = plain(&NoticeKind::Changed, &item, Some(&old), tz, false);
        assert!(
            changed.starts_with("Changed assignment · CS101\n"),
            "{changed}"
        );
        assert!(
            changed.contains("(was Thu 13 Mar 2025 23:59 CET)"),
            "{changed}"
        );
        let reminder = plain(
            &NoticeKind::Reminder {
                before: Duration::from_secs(3600),
            },
            &item,
            None,
            tz,
            false,
        );
        assert!(
            reminder.starts_with("Due in 1h: assignment · CS101"),
            "{reminder}"
        );
    }

    #[test]
    fn a_whole_day_shows_as_a_date() {
        let mut item = LmsItem::new("cal", "h", ItemKind::Event, "Good Friday");
        item.due = DateTime::from_timestamp(1_744_927_200, 0); // 2025-04-18 00:00 CEST
        item.all_day = true;
        let text = plain(
            &NoticeKind::New,
            &item,
            None,
            chrono_tz::Europe::Berlin,
            false,
        );
        assert_eq!(text, "New event · cal\nGood Friday\nDue Fri 18 Apr 2025");
    }

    #[test]
    fn a_grade_shows_its_mark_only_where_scores_are_on() {
        let mut item = LmsItem::new("uni", "grade:7:5", ItemKind::Grade, "Essay 1");
        item.course = Some("CS101".into());
        item.mark = Some("85.00 / 100".into());
        item.detail = Some("Clear structure; cite your sources.".into());
        let tz = chrono_tz::Europe::Berlin;
        let quiet = plain(&NoticeKind::New, &item, None, tz, false);
        assert_eq!(
            quiet,
            "Graded · CS101\nEssay 1\nFeedback: Clear structure; cite your sources."
        );
        let told = plain(&NoticeKind::Changed, &item, None, tz, true);
        assert!(
            told.starts_with("Grade updated · CS101\nEssay 1\nGrade: 85.00 / 100\n"),
            "{told}"
        );

        let mut quiz = LmsItem::new("uni", "quizopen:12", ItemKind::QuizOpen, "Quiz 2");
        quiz.closes = DateTime::from_timestamp(1_741_798_800, 0); // 2025-03-12 17:00 UTC
        assert_eq!(
            plain(&NoticeKind::New, &quiz, None, tz, false),
            "Quiz open · uni\nQuiz 2\nCloses Wed 12 Mar 2025 18:00 CET"
        );
    }
}
