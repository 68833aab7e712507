//! The morning brief: one message a day, at `[brief] at` local time, with
//! today's and the next days' due dates, the person's reminders and
//! calendar events of today, and what changed since the last brief.
//!
//! It is assembled from the store, never generated, so it goes out when
//! the model is busy or down. A brief is due once its local hour has
//! passed on one of its weekdays; `briefs` in `lms.sqlite3` keys it by the
//! local date, and queuing it writes that row and the message into the
//! outbox in one transaction, so it is queued once a day whatever the
//! restarts, a clock set back, or a summer-time change (a time of day the
//! change skips is reached at the first instant after it). A box that was
//! off at the hour queues it when it starts, later the same day; the day
//! after, only that day's is due. The courier delivers it as it delivers
//! every outbox line: until a delivery is confirmed.

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use rusqlite::{OptionalExtension, params};

use super::notice::format_due;
use super::store::SeenStore;
use super::{ItemKind, LmsError, LmsItem, Notifier};
use crate::config::BriefConfig;

/// The outbox's name for the brief's lines (a source the config named
/// so would only share their queue).
pub const BRIEF: &str = "(brief)";
/// How far back "changed" reaches when there was no brief before.
const FIRST_LOOK_BACK: i64 = 24;
/// The longest "changed" reaches back.
const MOST_LOOK_BACK_DAYS: i64 = 7;
/// Lines per section, at most.
const MOST: usize = 12;

/// What the daemon adds to a brief from outside the LMS.
#[derive(Debug, Clone, Default)]
pub struct BriefExtras {
    /// The person's reminders (their one-off jobs) of the day: when, what.
    pub reminders: Vec<(DateTime<Utc>, String)>,
}

/// The local date whose brief is due at `now`, if its hour has passed on
/// one of its weekdays.
pub fn due_day(brief: &BriefConfig, tz: Tz, now: DateTime<Utc>) -> Option<NaiveDate> {
    let local = now.with_timezone(&tz);
    (brief.days.contains(&local.weekday()) && local.time() >= brief.at).then(|| local.date_naive())
}

/// The first instant of local date `day` in `tz`.
fn start_of(day: NaiveDate, tz: Tz) -> DateTime<Utc> {
    let midnight = day.and_hms_opt(0, 0, 0).unwrap_or_default();
    match tz.from_local_datetime(&midnight) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => {
            t.with_timezone(&Utc)
        }
        // Midnight skipped by a change: the hour after it.
        chrono::LocalResult::None => tz
            .from_local_datetime(&(midnight + Duration::hours(1)))
            .earliest()
            .map_or_else(|| midnight.and_utc(), |t| t.with_timezone(&Utc)),
    }
}

impl Notifier {
    /// The brief of `now`'s local day, whatever the hour: `None` when
    /// there is nothing to tell.
    pub async fn brief_text(
        &self,
        brief: &BriefConfig,
        extras: &BriefExtras,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, LmsError> {
        let tz = self.config.time_zone;
        let today = now.with_timezone(&tz).date_naive();
        let (start, end) = (start_of(today, tz), start_of(today + Duration::days(1), tz));
        let ahead_end = start_of(today + Duration::days(1 + i64::from(brief.ahead_days)), tz);
        let dated = self.store.upcoming(start, ahead_end)?;
        let (mut events, dated): (Vec<LmsItem>, Vec<LmsItem>) =
            dated.into_iter().partition(|i| i.kind == ItemKind::Event);
        events.retain(|e| e.due.is_some_and(|d| d < end));
        let mut notes = Vec::new();
        if let Some(url) = &brief.calendar {
            match calendar(url, tz, now).await {
                Ok(mine) => events.extend(
                    mine.into_iter()
                        .filter(|e| e.due.is_some_and(|d| d >= start && d < end)),
                ),
                Err(e) => notes.push(format!("Your calendar could not be read: {e}")),
            }
        }
        events.sort_by_key(|e| e.due);
        let since = self.store.last_brief()?.map_or_else(
            || now - Duration::hours(FIRST_LOOK_BACK),
            |last| last.max(now - Duration::days(MOST_LOOK_BACK_DAYS)),
        );
        let open = |i: &&LmsItem| !i.done;
        let parts = Parts {
            today,
            due_today: dated
                .iter()
                .filter(open)
                .filter(|i| i.due.is_some_and(|d| d < end))
                .cloned()
                .collect(),
            due_ahead: dated
                .iter()
                .filter(open)
                .filter(|i| i.due.is_some_and(|d| d >= end))
                .cloned()
                .collect(),
            reminders: extras
                .reminders
                .iter()
                .filter(|(at, _)| *at >= start && *at < end)
                .cloned()
                .collect(),
            events,
            changed: self.store.changed_since(since, now)?,
            notes,
        };
        Ok(parts.text(tz, brief.ahead_days))
    }

    /// Queues today's brief once, if its hour has passed and it was not
    /// queued before: the day it queued (also for a quiet day that sent
    /// nothing), or `None`.
    pub async fn brief_if_due(
        &self,
        brief: &BriefConfig,
        extras: &BriefExtras,
    ) -> Result<Option<NaiveDate>, LmsError> {
        let now = self.clock.now();
        let Some(day) = due_day(brief, self.config.time_zone, now) else {
            return Ok(None);
        };
        if self.store.brief_queued(day)? {
            return Ok(None);
        }
        let text = match self.brief_text(brief, extras, now).await? {
            Some(text) => Some(text),
            None if brief.quiet_when_empty => None,
            None => Some(format!(
                "Good morning. Nothing is due in the next {} days and nothing changed since the last brief.",
                brief.ahead_days + 1
            )),
        };
        if self.store.queue_brief(day, text.as_deref(), now)? {
            self.queued.notify_one();
            return Ok(Some(day));
        }
        Ok(None)
    }
}

/// What one brief says, section by section.
struct Parts {
    today: NaiveDate,
    due_today: Vec<LmsItem>,
    due_ahead: Vec<LmsItem>,
    reminders: Vec<(DateTime<Utc>, String)>,
    events: Vec<LmsItem>,
    /// Items new or changed since the last brief: `true` for new.
    changed: Vec<(LmsItem, bool)>,
    notes: Vec<String>,
}

impl Parts {
    /// Each section with something in it: its heading and its lines.
    fn sections(&self, tz: Tz, ahead_days: u32) -> Vec<(String, Vec<String>)> {
        let time = |d: Option<DateTime<Utc>>, all_day: bool| match d {
            Some(_) if all_day => "all day".to_string(),
            Some(d) => d.with_timezone(&tz).format("%H:%M").to_string(),
            None => String::new(),
        };
        let course = |i: &LmsItem| {
            i.course
                .as_deref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default()
        };
        let mut sections: Vec<(String, Vec<String>)> = Vec::new();
        let mut add = |head: String, lines: Vec<String>| {
            if !lines.is_empty() {
                sections.push((head, lines));
            }
        };
        add(
            "Due today".into(),
            self.due_today
                .iter()
                .map(|i| format!("{} {}{}", time(i.due, i.all_day), i.title, course(i)))
                .collect(),
        );
        add(
            format!("Due in the next {ahead_days} days"),
            self.due_ahead
                .iter()
                .filter_map(|i| {
                    Some(format!(
                        "{} {}{}",
                        format_due(i.due?, i.all_day, tz),
                        i.title,
                        course(i)
                    ))
                })
                .collect(),
        );
        add(
            "Reminders today".into(),
            self.reminders
                .iter()
                .map(|(at, what)| format!("{} {what}", time(Some(*at), false)))
                .collect(),
        );
        add(
            "On the calendar today".into(),
            self.events
                .iter()
                .map(|e| format!("{} {}", time(e.due, e.all_day), e.title))
                .collect(),
        );
        add(
            "Since the last brief".into(),
            self.changed
                .iter()
                .map(|(i, new)| changed_line(i, *new))
                .collect(),
        );
        sections
    }

    fn text(&self, tz: Tz, ahead_days: u32) -> Option<String> {
        let sections = self.sections(tz, ahead_days);
        if sections.is_empty() && self.notes.is_empty() {
            return None;
        }
        let mut out = vec![format!("Good morning. {}.", self.today.format("%A %-d %B"))];
        for (head, lines) in sections {
            out.push(String::new());
            out.push(format!("{head}:"));
            let more = lines.len().saturating_sub(MOST);
            out.extend(
                lines
                    .into_iter()
                    .take(MOST)
                    .map(|l| format!("• {}", l.trim())),
            );
            if more > 0 {
                out.push(format!("• … and {more} more"));
            }
        }
        for note in &self.notes {
            out.push(String::new());
            out.push(note.clone());
        }
        Some(out.join("\n"))
    }
}

/// The events of the person's own calendar at `url`, as iCalendar; a
/// user and password in it go as HTTP basic auth, never in an error.
async fn calendar(url: &str, tz: Tz, now: DateTime<Utc>) -> Result<Vec<LmsItem>, LmsError> {
    let mut url = reqwest::Url::parse(url)
        .map_err(|e| LmsError::Malformed(format!("the calendar's address: {e}")))?;
    let user = super::files::unescaped(url.username());
    let password = url.password().map(super::files::unescaped);
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let mut request = super::http::client().get(url);
    if !user.is_empty() {
        request = request.basic_auth(user, password);
    }
    let body = super::http::text(super::http::send(request).await?).await?;
    let window = super::recurrence::Window::around(now, std::time::Duration::from_secs(2 * 86_400));
    super::ical::parse(&body, "calendar", tz, &window)
}

/// One line of "since the last brief".
fn changed_line(item: &LmsItem, new: bool) -> String {
    let head = match (item.kind, new) {
        (ItemKind::Grade, true) => "Graded".to_string(),
        (ItemKind::Grade, false) => "Grade updated".to_string(),
        (ItemKind::QuizOpen, true) => "Quiz open".to_string(),
        (kind, true) => format!("New {}", kind.as_str()),
        (kind, false) => format!("Changed {}", kind.as_str()),
    };
    match &item.course {
        Some(c) => format!("{head}: {} ({c})", item.title),
        None => format!("{head}: {}", item.title),
    }
}

impl SeenStore {
    /// Whether the brief of `day` was queued.
    pub fn brief_queued(&self, day: NaiveDate) -> Result<bool, LmsError> {
        self.lock()
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM briefs WHERE day = ?1)",
                [day.to_string()],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    /// When the last brief that said something was queued.
    pub fn last_brief(&self) -> Result<Option<DateTime<Utc>>, LmsError> {
        let at: Option<i64> = self
            .lock()
            .query_row(
                "SELECT max(queued_at) FROM briefs WHERE sent = 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?
            .flatten();
        Ok(at.and_then(|t| DateTime::from_timestamp(t, 0)))
    }

    /// Records the brief of `day` and queues `text` (none on a quiet
    /// day), in one transaction: false when the day had one already.
    pub fn queue_brief(
        &self,
        day: NaiveDate,
        text: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<bool, LmsError> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let new = tx
            .execute(
                "INSERT OR IGNORE INTO briefs (day, queued_at, sent) VALUES (?1, ?2, ?3)",
                params![day.to_string(), now.timestamp(), text.is_some()],
            )
            .map_err(|e| self.err(e))?
            > 0;
        if let (true, Some(text)) = (new, text) {
            tx.execute(
                "INSERT INTO outbox (source, text, queued_at) VALUES (?1, ?2, ?3)",
                params![BRIEF, text, now.timestamp()],
            )
            .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(new)
    }

    /// Items still listed that are new or changed in `[since, until)`,
    /// newest first, `true` for new; those a first poll recorded without
    /// a notice are not news.
    pub fn changed_since(
        &self,
        since: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<(LmsItem, bool)>, LmsError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare(
                "SELECT item, changed_at = first_seen FROM items
                 WHERE present = 1 AND changed_at >= ?1 AND changed_at < ?2
                   AND NOT (quiet AND changed_at = first_seen)
                 ORDER BY changed_at DESC, source, id",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![since.timestamp(), until.timestamp() + 1], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, bool>(1)?))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (json, new) = row.map_err(|e| self.err(e))?;
            out.push((serde_json::from_str(&json).map_err(|e| self.err(e))?, new));
        }
        Ok(out)
    }
}
