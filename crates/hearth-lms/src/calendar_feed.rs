//! The person's deadlines as an iCalendar feed (RFC 5545) that a phone's
//! calendar subscribes to, behind a secret kept in `lms.sqlite3`.
//!
//! Every dated item still listed (assignments, quizzes, events) from a
//! month back to half a year ahead, and whatever else the daemon adds (its
//! scheduled reminders), each a `VEVENT` whose `UID` is a hash of where it
//! came from: a moved due date updates the event in the calendar instead
//! of adding one, and `LAST-MODIFIED` says when. Times are written in UTC,
//! which every calendar shows in its own zone; whole days as dates in
//! `[lms] time_zone`. The secret is 244 random bits; revoking it ends the
//! feed, and the next `hearth cal url` makes a new one.

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use rusqlite::{OptionalExtension, params};
use sha2::{Digest, Sha256};

use super::store::SeenStore;
use super::{ItemKind, LmsError, LmsItem};

/// How far back and ahead the feed reaches.
const BACK_DAYS: i64 = 31;
const AHEAD_DAYS: i64 = 183;
/// Description characters per event.
const DESCRIPTION: usize = 1_000;

/// One event of the feed.
#[derive(Debug, Clone, PartialEq)]
pub struct FeedEvent {
    /// Stable across polls and restarts: what the event is, not its date.
    pub uid: String,
    pub summary: String,
    pub start: DateTime<Utc>,
    /// A whole day (written as a date in the feed's zone).
    pub all_day: bool,
    pub description: Option<String>,
    pub url: Option<String>,
    /// When it last changed as the person would see it.
    pub modified: DateTime<Utc>,
}

impl FeedEvent {
    /// The event of a dated course item; `None` for one without a date or
    /// of a kind a calendar has no use for.
    pub fn of_item(item: &LmsItem, modified: DateTime<Utc>) -> Option<Self> {
        let start = item.due?;
        if !matches!(
            item.kind,
            ItemKind::Assignment | ItemKind::Quiz | ItemKind::Event
        ) {
            return None;
        }
        let what = match (&item.course, item.kind) {
            (_, ItemKind::Event) => String::new(),
            (Some(course), kind) => format!(" ({}, {course})", kind.as_str()),
            (None, kind) => format!(" ({})", kind.as_str()),
        };
        let mut summary = format!("{}{what}", item.title);
        if item.done {
            summary = format!("✓ {summary}");
        }
        Some(Self {
            uid: uid(&["lms", &item.source, &item.id]),
            summary,
            start,
            all_day: item.all_day,
            description: item.detail.clone(),
            url: item.url.clone(),
            modified,
        })
    }
}

/// A UID from the parts that name an event, the same on every poll.
pub fn uid(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for part in parts {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    format!("{}@hearth", &crate::hex::hex(&h.finalize())[..32])
}

/// The feed's text: `events` in one calendar named `name`.
pub fn ics(events: &[FeedEvent], name: &str, tz: Tz, now: DateTime<Utc>) -> String {
    let mut lines = vec![
        "BEGIN:VCALENDAR".to_string(),
        "VERSION:2.0".to_string(),
        "PRODID:-//hearth//deadlines//EN".to_string(),
        "CALSCALE:GREGORIAN".to_string(),
        "METHOD:PUBLISH".to_string(),
        format!("X-WR-CALNAME:{}", escape(name)),
        format!("X-WR-TIMEZONE:{}", tz.name()),
        "REFRESH-INTERVAL;VALUE=DURATION:PT1H".to_string(),
        "X-PUBLISHED-TTL:PT1H".to_string(),
    ];
    for e in events {
        lines.push("BEGIN:VEVENT".into());
        lines.push(format!("UID:{}", e.uid));
        lines.push(format!("DTSTAMP:{}", utc(now)));
        lines.push(format!("LAST-MODIFIED:{}", utc(e.modified)));
        if e.all_day {
            let day = e.start.with_timezone(&tz).date_naive();
            lines.push(format!("DTSTART;VALUE=DATE:{}", day.format("%Y%m%d")));
            let next = day.succ_opt().unwrap_or(day);
            lines.push(format!("DTEND;VALUE=DATE:{}", next.format("%Y%m%d")));
        } else {
            lines.push(format!("DTSTART:{}", utc(e.start)));
        }
        lines.push(format!("SUMMARY:{}", escape(&e.summary)));
        if let Some(d) = e.description.as_deref().filter(|d| !d.is_empty()) {
            let d = crate::tools::cap(d, DESCRIPTION);
            lines.push(format!("DESCRIPTION:{}", escape(&d)));
        }
        if let Some(url) = e.url.as_deref().filter(|u| !u.contains(['\r', '\n'])) {
            lines.push(format!("URL:{url}"));
        }
        lines.push("TRANSP:TRANSPARENT".into());
        lines.push("END:VEVENT".into());
    }
    lines.push("END:VCALENDAR".into());
    let mut out = String::new();
    for line in lines {
        fold(&line, &mut out);
    }
    out
}

fn utc(t: DateTime<Utc>) -> String {
    t.format("%Y%m%dT%H%M%SZ").to_string()
}

/// A TEXT value: backslash, semicolon, comma and newlines escaped, other
/// control characters dropped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            ';' => out.push_str("\\;"),
            ',' => out.push_str("\\,"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// One content line, folded at 75 octets without splitting a character,
/// ended by CRLF.
fn fold(line: &str, out: &mut String) {
    let mut width = 0;
    for c in line.chars() {
        if width + c.len_utf8() > 75 {
            out.push_str("\r\n ");
            width = 1;
        }
        out.push(c);
        width += c.len_utf8();
    }
    out.push_str("\r\n");
}

impl SeenStore {
    /// The feed's events from the items still listed, around `now`.
    pub fn feed_events(&self, now: DateTime<Utc>) -> Result<Vec<FeedEvent>, LmsError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare(
                "SELECT item, COALESCE(changed_at, first_seen) FROM items
                 WHERE present = 1 AND due >= ?1 AND due <= ?2 ORDER BY due, source, id",
            )
            .map_err(|e| self.err(e))?;
        let from = (now - Duration::days(BACK_DAYS)).timestamp();
        let until = (now + Duration::days(AHEAD_DAYS)).timestamp();
        let rows = stmt
            .query_map(params![from, until], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })
            .map_err(|e| self.err(e))?;
        let mut events = Vec::new();
        for row in rows {
            let (json, changed) = row.map_err(|e| self.err(e))?;
            let item: LmsItem = serde_json::from_str(&json).map_err(|e| self.err(e))?;
            let modified = DateTime::from_timestamp(changed, 0).unwrap_or(now);
            events.extend(FeedEvent::of_item(&item, modified));
        }
        Ok(events)
    }

    /// The feed's secret; with `create`, made if there is none.
    pub fn feed_token(&self, create: bool) -> Result<Option<String>, LmsError> {
        let conn = self.lock();
        let current: Option<String> = conn
            .query_row("SELECT token FROM calendar_feed LIMIT 1", [], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        if current.is_some() || !create {
            return Ok(current);
        }
        let token = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        conn.execute(
            "INSERT INTO calendar_feed (token, created) VALUES (?1, unixepoch())",
            [&token],
        )
        .map_err(|e| self.err(e))?;
        Ok(Some(token))
    }

    /// Ends the feed: its address answers nothing any more. False when
    /// there was none.
    pub fn revoke_feed(&self) -> Result<bool, LmsError> {
        let gone = self
            .lock()
            .execute("DELETE FROM calendar_feed", [])
            .map_err(|e| self.err(e))?;
        Ok(gone > 0)
    }

    /// Whether `token` is the feed's secret (compared in constant time).
    pub fn feed_allows(&self, token: &str) -> Result<bool, LmsError> {
        let Some(secret) = self.feed_token(false)? else {
            return Ok(false);
        };
        let (a, b) = (secret.as_bytes(), token.as_bytes());
        let differ = a
            .iter()
            .zip(b)
            .fold(u8::from(a.len() != b.len()), |acc, (x, y)| acc | (x ^ y));
        Ok(differ == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_fold_at_75_octets_and_text_is_escaped() {
        let mut out = String::new();
        fold(&format!("SUMMARY:{}", "é".repeat(60)), &mut out);
        for line in out.split("\r\n").filter(|l| !l.is_empty()) {
            assert!(line.len() <= 75, "{line:?} is {} octets", line.len());
        }
        assert_eq!(
            out.replace("\r\n ", ""),
            format!("SUMMARY:{}\r\n", "é".repeat(60))
        );
        assert_eq!(escape("a,b;c\\d\ne\r"), "a\\,b\\;c\\\\d\\ne");
    }

    #[test]
    fn a_uid_names_the_item_not_its_date() {
        let mut item = LmsItem::new("uni", "assign:31", ItemKind::Assignment, "Essay");
        item.due = DateTime::from_timestamp(1_742_079_540, 0);
        let now = DateTime::from_timestamp(1_741_608_000, 0).unwrap();
        let before = FeedEvent::of_item(&item, now).unwrap();
        item.due = DateTime::from_timestamp(1_742_252_340, 0);
        let after = FeedEvent::of_item(&item, now).unwrap();
        assert_eq!(before.uid, after.uid);
        assert_ne!(before.start, after.start);
        let grade = LmsItem::new("uni", "grade:7:1", ItemKind::Grade, "Essay");
        assert_eq!(FeedEvent::of_item(&grade, now), None);
    }

    #[test]
    fn a_revoked_secret_is_refused_by_a_store_opened_before() {
        let dir = tempfile::tempdir().unwrap();
        let daemon = SeenStore::open_in(dir.path()).unwrap();
        let cli = SeenStore::open_in(dir.path()).unwrap();
        assert!(!daemon.feed_allows("x").unwrap());
        let secret = cli.feed_token(true).unwrap().unwrap();
        assert_eq!(secret.len(), 64);
        assert!(
            daemon.feed_allows(&secret).unwrap(),
            "control: the secret opens it"
        );
        assert!(!daemon.feed_allows(&secret[..63]).unwrap());
        assert!(cli.revoke_feed().unwrap());
        assert!(!daemon.feed_allows(&secret).unwrap(), "revoked at once");
    }
}
