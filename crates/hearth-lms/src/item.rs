//! One thing a course site tells us about, in the same shape whatever the site.
//!
//! Every source turns its payloads into [`LmsItem`]s. The seen-store keys them
//! by `(source, id)` and compares [`LmsItem::content_hash`], so what the hash
//! covers decides what counts as a change worth a notice.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What kind of item it is; shown in notices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemKind {
    Assignment,
    Quiz,
    Announcement,
    Event,
    News,
    /// A file a course offers (with [`LmsItem::file`]).
    File,
    /// A grade released, with its feedback (and [`LmsItem::mark`]).
    Grade,
    /// A quiz that has opened (until [`LmsItem::closes`]).
    QuizOpen,
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Assignment => "assignment",
            Self::Quiz => "quiz",
            Self::Announcement => "announcement",
            Self::Event => "event",
            Self::News => "news",
            Self::File => "course file",
            Self::Grade => "grade",
            Self::QuizOpen => "open quiz",
        }
    }
}

/// A normalised LMS item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LmsItem {
    /// The configured source name.
    pub source: String,
    /// Stable within the source (a Moodle id, a Canvas id, an iCal UID, a
    /// feed guid), prefixed by what it identifies where ids could collide.
    pub id: String,
    pub kind: ItemKind,
    pub title: String,
    pub course: Option<String>,
    pub url: Option<String>,
    #[serde(with = "unix_seconds")]
    pub due: Option<DateTime<Utc>>,
    /// When the site last changed it, if it says.
    #[serde(with = "unix_seconds")]
    pub updated: Option<DateTime<Utc>>,
    /// Body text (announcement message, description), plain, for summaries.
    #[serde(default)]
    pub detail: Option<String>,
    /// The due date is a whole day (an iCal `VALUE=DATE`), shown as a date.
    #[serde(default)]
    pub all_day: bool,
    /// Handed in or marked done: no reminders. Not part of the hash, so
    /// handing in causes no notice.
    #[serde(default)]
    pub done: bool,
    /// The recurring series (iCal UID) an occurrence belongs to: the first
    /// occurrence is announced, later ones only get their reminders.
    #[serde(default)]
    pub series: Option<String>,
    /// The file a `File` item offers, fetched into the person's documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<super::CourseFile>,
    /// A released grade as the site formats it ("85.00 / 100"): part of the
    /// hash, so a regrade is told, but shown in a chat only where the
    /// source's `scores` is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<String>,
    /// When an open quiz closes (the user's own date where the site says).
    #[serde(default, with = "unix_seconds")]
    pub closes: Option<DateTime<Utc>>,
}

impl LmsItem {
    pub fn new(
        source: &str,
        id: impl Into<String>,
        kind: ItemKind,
        title: impl Into<String>,
    ) -> Self {
        Self {
            source: source.to_string(),
            id: id.into(),
            kind,
            title: title.into(),
            course: None,
            url: None,
            due: None,
            updated: None,
            detail: None,
            all_day: false,
            done: false,
            series: None,
            file: None,
            mark: None,
            closes: None,
        }
    }

    /// A hash of what a user would notice changing: kind, title, course, url,
    /// due date, body, mark and closing time. `updated` is left out, so a site that only touches
    /// its timestamp does not cause a notice.
    pub fn content_hash(&self) -> String {
        let mut h = Sha256::new();
        for part in [
            self.kind.as_str(),
            &self.title,
            self.course.as_deref().unwrap_or(""),
            self.url.as_deref().unwrap_or(""),
            &self
                .due
                .map(|d| d.timestamp().to_string())
                .unwrap_or_default(),
            self.detail.as_deref().unwrap_or(""),
        ] {
            h.update(part.as_bytes());
            h.update([0u8]);
        }
        // Only where present, so the items of an older release keep their hash.
        if let Some(mark) = &self.mark {
            h.update(b"mark\0");
            h.update(mark.as_bytes());
            h.update([0u8]);
        }
        if let Some(closes) = self.closes {
            h.update(b"closes\0");
            h.update(closes.timestamp().to_string().as_bytes());
            h.update([0u8]);
        }
        crate::hex::hex(&h.finalize())
    }
}

/// Whether a course filter lets an item through. `aliases` are the names
/// its site knows the course by (id, short name, full name); an empty filter,
/// or an item with no course (feeds seldom name one), passes.
pub fn course_allowed(filter: &[String], aliases: &[&str]) -> bool {
    filter.is_empty()
        || aliases.is_empty()
        || filter
            .iter()
            .any(|f| aliases.iter().any(|a| f.trim().eq_ignore_ascii_case(a)))
}

/// Times as Unix seconds in the store's JSON (chrono's own serde support is
/// not enabled in this crate).
mod unix_seconds {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_some(&t.timestamp()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        Ok(Option::<i64>::deserialize(d)?.and_then(|t| DateTime::from_timestamp(t, 0)))
    }
}

/// Strips HTML tags and decodes the common entities: enough to turn an
/// announcement body into text for a summary.
pub fn plain_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    let decoded = out
        .replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_follows_visible_changes_only() {
        let mut a = LmsItem::new("uni", "assign:1", ItemKind::Assignment, "Essay");
        a.due = DateTime::from_timestamp(1_700_000_000, 0);
        let before = a.content_hash();
        a.updated = DateTime::from_timestamp(1_700_000_500, 0);
        assert_eq!(
            a.content_hash(),
            before,
            "a new timestamp alone is no change"
        );
        a.due = DateTime::from_timestamp(1_700_086_400, 0);
        assert_ne!(a.content_hash(), before, "a new due date is a change");
    }

    #[test]
    fn an_older_release_s_hash_stays_and_a_regrade_is_a_change() {
        // The hash of this item as the releases before marks computed it
        // (sha256 of its six parts, each ended by a NUL).
        let mut a = LmsItem::new("uni", "assign:1", ItemKind::Assignment, "Essay");
        a.due = DateTime::from_timestamp(1_700_000_000, 0);
        assert_eq!(
            a.content_hash(),
            "ec96d66ff5be8827c147339794d4d8c30341e881502bffc9c1b2b101df5d5d21"
        );
        let mut g = LmsItem::new("uni", "grade:7:5", ItemKind::Grade, "Essay");
        g.mark = Some("8.00 / 10".into());
        let graded = g.content_hash();
        g.mark = Some("9.00 / 10".into());
        assert_ne!(g.content_hash(), graded, "a regrade is a change");
    }

    #[test]
    fn course_filter() {
        assert!(course_allowed(&[], &["7", "CS101"]));
        assert!(course_allowed(&["cs101".into()], &["7", "CS101"]));
        assert!(course_allowed(&["7".into()], &["7", "CS101"]));
        assert!(!course_allowed(&["MA200".into()], &["7", "CS101"]));
        assert!(course_allowed(&["MA200".into()], &[]));
    }

    #[test]
    fn html_to_text() {
        assert_eq!(
            plain_text("<p>Room&nbsp;change:</p><p>R&amp;D 101</p>"),
            "Room change: R&D 101"
        );
    }
}
