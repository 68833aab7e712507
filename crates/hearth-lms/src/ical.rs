//! An iCalendar (RFC 5545) feed: Moodle's calendar export, a university
//! timetable, any `.ics` URL.
//!
//! The `icalendar` crate parses (unfolding, TEXT unescaping); this module
//! reads what a notifier needs from each `VEVENT`/`VTODO`: UID, SUMMARY,
//! DESCRIPTION, DTSTART/DUE/DTEND (UTC, `TZID=`, floating, or a whole day),
//! URL, LAST-MODIFIED and CATEGORIES (taken as the course). A recurring
//! event (RRULE, RDATE, EXDATE) becomes one item per occurrence within the
//! configured horizon, id `UID@<start in UTC>`; a `RECURRENCE-ID` component
//! replaces the occurrence it names.

use std::collections::HashMap;

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use icalendar::parser::{Component, Property, read_calendar, unfold};

use super::item::course_allowed;
use super::recurrence::{self, Series, Window};
use super::{ItemKind, LmsError, LmsItem, LmsSource, http};
use crate::config::LmsSourceConfig;
use futures::future::BoxFuture;

pub struct Ical {
    config: LmsSourceConfig,
    http: reqwest::Client,
    time_zone: Tz,
    horizon: std::time::Duration,
}

impl Ical {
    pub fn new(
        config: LmsSourceConfig,
        http: reqwest::Client,
        time_zone: Tz,
        horizon: std::time::Duration,
    ) -> Self {
        Self {
            config,
            http,
            time_zone,
            horizon,
        }
    }

    async fn fetch(&self, now: DateTime<Utc>) -> Result<Vec<LmsItem>, LmsError> {
        let mut request = self.http.get(&self.config.url);
        if let Some(token) = &self.config.token {
            request = request.bearer_auth(token.expose());
        }
        let body = http::text(http::send(request).await?).await?;
        let window = Window::around(now, self.horizon);
        let items = parse(&body, &self.config.name, self.time_zone, &window)?;
        Ok(items
            .into_iter()
            .filter(|i| {
                let course: Vec<&str> = i.course.as_deref().into_iter().collect();
                course_allowed(&self.config.courses, &course)
            })
            .collect())
    }
}

impl LmsSource for Ical {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn poll(&self, now: DateTime<Utc>) -> BoxFuture<'_, Result<Vec<LmsItem>, LmsError>> {
        Box::pin(self.fetch(now))
    }
}

/// A DATE or DATE-TIME as read: the instant, the zone it was written in
/// (for recurrence), and whether it is a whole day.
#[derive(Debug, Clone, Copy)]
struct When {
    at: DateTime<Utc>,
    zone: Tz,
    all_day: bool,
}

fn param<'a>(p: &'a Property<'_>, name: &str) -> Option<&'a str> {
    p.params
        .iter()
        .find(|q| q.key.as_str().eq_ignore_ascii_case(name))
        .and_then(|q| q.val.as_ref())
        .map(|v| v.as_str().trim_matches('"'))
}

/// The values of a DATE or DATE-TIME property (EXDATE may list several):
/// `…Z` is UTC, `TZID=` names the zone (an unknown zone, such as a Windows
/// name, falls back to the user's), anything else is floating and read in
/// the user's zone; a date is its midnight.
fn when_all(p: &Property<'_>, user_tz: Tz) -> Vec<When> {
    let zone = param(p, "TZID")
        .and_then(|z| z.trim_start_matches('/').parse::<Tz>().ok())
        .unwrap_or(user_tz);
    let date_only = param(p, "VALUE").is_some_and(|v| v.eq_ignore_ascii_case("DATE"));
    p.val
        .as_str()
        .split(',')
        .filter_map(|value| {
            let value = value.trim();
            if date_only || value.len() == 8 {
                let local = NaiveDate::parse_from_str(value, "%Y%m%d")
                    .ok()?
                    .and_hms_opt(0, 0, 0)?;
                let at = zone.from_local_datetime(&local).earliest()?;
                return Some(When {
                    at: at.with_timezone(&Utc),
                    zone,
                    all_day: true,
                });
            }
            if let Some(utc) = value.strip_suffix('Z') {
                let naive = NaiveDateTime::parse_from_str(utc, "%Y%m%dT%H%M%S").ok()?;
                return Some(When {
                    at: Utc.from_utc_datetime(&naive),
                    zone: chrono_tz::UTC,
                    all_day: false,
                });
            }
            let local = NaiveDateTime::parse_from_str(value, "%Y%m%dT%H%M%S").ok()?;
            let at = zone.from_local_datetime(&local).earliest()?;
            Some(When {
                at: at.with_timezone(&Utc),
                zone,
                all_day: false,
            })
        })
        .collect()
}

/// One VEVENT or VTODO as read.
struct Entry {
    item: LmsItem,
    uid: String,
    start: Option<When>,
    /// The occurrence a RECURRENCE-ID component replaces.
    replaces: Option<DateTime<Utc>>,
    rules: Vec<String>,
    exdates: Vec<DateTime<Utc>>,
    rdates: Vec<DateTime<Utc>>,
}

impl Entry {
    fn read(c: &Component<'_>, kind: ItemKind, source: &str, user_tz: Tz) -> Self {
        let prop = |name: &str| {
            c.properties
                .iter()
                .find(|p| p.name.as_str().eq_ignore_ascii_case(name))
        };
        let all = |name: &str| {
            c.properties
                .iter()
                .filter(|p| p.name.as_str().eq_ignore_ascii_case(name))
                .flat_map(|p| when_all(p, user_tz))
                .map(|w| w.at)
                .collect::<Vec<_>>()
        };
        let first = |name: &str| prop(name).and_then(|p| when_all(p, user_tz).into_iter().next());
        let text = |name: &str| {
            prop(name)
                .map(|p| p.val.as_str().trim().to_string())
                .filter(|t| !t.is_empty())
        };
        let summary = text("SUMMARY");
        let start = first("DTSTART");
        let uid = text("UID").unwrap_or_else(|| {
            // No UID breaks RFC 5545; the title and start still identify it.
            format!(
                "{}|{}",
                summary.as_deref().unwrap_or(""),
                start.map(|s| s.at.timestamp()).unwrap_or(0)
            )
        });
        let due = first("DUE").or(start).or_else(|| first("DTEND"));
        let mut item = LmsItem::new(
            source,
            uid.clone(),
            kind,
            summary.unwrap_or_else(|| "(untitled event)".to_string()),
        );
        item.due = due.map(|d| d.at);
        item.all_day = due.is_some_and(|d| d.all_day);
        item.updated = first("LAST-MODIFIED").map(|w| w.at);
        item.url = text("URL");
        // CATEGORIES is a list the parser leaves escaped.
        item.course = prop("CATEGORIES")
            .map(|p| p.val.clone().unescape_text().as_str().trim().to_string())
            .filter(|c| !c.is_empty());
        item.detail = text("DESCRIPTION");
        Self {
            item,
            uid,
            start,
            replaces: first("RECURRENCE-ID").map(|w| w.at),
            rules: c
                .properties
                .iter()
                .filter(|p| p.name.as_str().eq_ignore_ascii_case("RRULE"))
                .map(|p| p.val.as_str().trim().to_string())
                .collect(),
            exdates: all("EXDATE"),
            rdates: all("RDATE"),
        }
    }

    /// This entry as the occurrence starting at `at`.
    fn occurrence(&self, at: DateTime<Utc>) -> LmsItem {
        let mut item = self.item.clone();
        item.id = format!("{}@{}", self.uid, recurrence::key(at));
        item.series = Some(self.uid.clone());
        if let (Some(due), Some(start)) = (item.due, self.start) {
            item.due = Some(at + (due - start.at));
        }
        item
    }
}

/// The items of a calendar, recurring events expanded within `window`.
pub fn parse(
    text: &str,
    source: &str,
    user_tz: Tz,
    window: &Window,
) -> Result<Vec<LmsItem>, LmsError> {
    let unfolded = unfolded(text)?;
    let calendar = read_calendar(&unfolded).map_err(malformed)?;
    let mut masters = Vec::new();
    let mut overrides: HashMap<(String, String), Entry> = HashMap::new();
    for c in &calendar.components {
        let kind = match c.name.as_str().to_ascii_uppercase().as_str() {
            "VEVENT" => ItemKind::Event,
            "VTODO" => ItemKind::Assignment,
            _ => continue,
        };
        let entry = Entry::read(c, kind, source, user_tz);
        match entry.replaces {
            Some(at) => {
                overrides.insert((entry.uid.clone(), recurrence::key(at)), entry);
            }
            None => masters.push(entry),
        }
    }
    let mut items = Vec::new();
    for master in &masters {
        let recurs = !master.rules.is_empty() || !master.rdates.is_empty();
        let Some(start) = master.start.filter(|_| recurs) else {
            items.push(master.item.clone());
            continue;
        };
        let series = Series {
            start: start.at,
            zone: start.zone,
            rules: &master.rules,
            exdates: &master.exdates,
            rdates: &master.rdates,
        };
        match recurrence::occurrences(&series, window) {
            Ok(starts) => {
                for at in starts {
                    let key = (master.uid.clone(), recurrence::key(at));
                    if !overrides.contains_key(&key) {
                        items.push(master.occurrence(at));
                    }
                }
            }
            Err(e) => {
                tracing::warn!(source, uid = %master.uid, "iCal: {e}; listed once, at its first start");
                items.push(master.item.clone());
            }
        }
    }
    // A moved occurrence is listed while its new or its old time is near.
    for ((uid, key), entry) in overrides {
        let near = entry.item.due.is_some_and(|d| window.contains(d))
            || entry.replaces.is_some_and(|r| window.contains(r));
        if near {
            let mut item = entry.item;
            item.id = format!("{uid}@{key}");
            item.series = Some(uid);
            items.push(item);
        }
    }
    Ok(items)
}

/// `text` unfolded, once it looks like an iCalendar feed.
fn unfolded(text: &str) -> Result<String, LmsError> {
    let text = text.trim_start_matches('\u{feff}').replace("\r\n", "\n");
    if !text
        .trim_start()
        .get(..15)
        .is_some_and(|h| h.eq_ignore_ascii_case("BEGIN:VCALENDAR"))
    {
        return Err(LmsError::Malformed(
            "not an iCalendar feed (no BEGIN:VCALENDAR)".into(),
        ));
    }
    Ok(unfold(&text))
}

/// The parser's complaint, by its first line.
fn malformed(e: String) -> LmsError {
    let first = e
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    LmsError::Malformed(format!("not a valid iCalendar feed (truncated?): {first}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAL: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:a1@example\r\nSUMMARY:Essay 1 is due\\, finally\r\nDESCRIPTION:Submit the essay on\r\n  the portal.\\nGood luck\r\nDTSTART;TZID=Europe/Berlin:20250314T235900\r\nURL:https://moodle.example.edu/mod/assign/view.php?id=7\r\nLAST-MODIFIED:20250301T120000Z\r\nCATEGORIES:CS101\r\nBEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:nested alarm\r\nEND:VALARM\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:a2@example\r\nSUMMARY:Holiday\r\nDTSTART;VALUE=DATE:20250401\r\nEND:VEVENT\r\nBEGIN:VTODO\r\nUID:t1@example\r\nSUMMARY:Lab report\r\nDTSTART:20250301T090000\r\nDUE:20250310T170000Z\r\nEND:VTODO\r\nEND:VCALENDAR\r\n";

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn parse(text: &str, source: &str, tz: Tz) -> Result<Vec<LmsItem>, LmsError> {
        let window = Window {
            from: utc("2025-01-01T00:00:00Z"),
            until: utc("2025-12-31T00:00:00Z"),
        };
        super::parse(text, source, tz, &window)
    }

    #[test]
    fn events_unfold_and_read_their_times() {
        let items = parse(CAL, "cal", chrono_tz::America::New_York).unwrap();
        assert_eq!(items.len(), 3);
        let e = &items[0];
        assert_eq!(e.id, "a1@example");
        assert_eq!(e.title, "Essay 1 is due, finally");
        assert_eq!(
            e.detail.as_deref(),
            Some("Submit the essay on the portal.\nGood luck")
        );
        assert_eq!(
            e.due,
            Some(utc("2025-03-14T22:59:00Z")),
            "Berlin is UTC+1 in March"
        );
        assert_eq!(e.updated, Some(utc("2025-03-01T12:00:00Z")));
        assert_eq!(e.course.as_deref(), Some("CS101"));
        assert_eq!(e.kind, ItemKind::Event);
        assert_eq!(
            items[1].due,
            Some(utc("2025-04-01T04:00:00Z")),
            "a date is midnight in the user's zone (New York, EDT)"
        );
        assert!(items[1].all_day && !e.all_day);
        assert_eq!(items[2].kind, ItemKind::Assignment);
        assert_eq!(
            items[2].due,
            Some(utc("2025-03-10T17:00:00Z")),
            "DUE wins over DTSTART"
        );
    }

    #[test]
    fn floating_times_use_the_user_zone() {
        let cal = "BEGIN:VCALENDAR\nBEGIN:VEVENT\nUID:f\nSUMMARY:x\nDTSTART:20250115T090000\nEND:VEVENT\nEND:VCALENDAR\n";
        let items = parse(cal, "cal", chrono_tz::Asia::Tokyo).unwrap();
        assert_eq!(
            items[0].due,
            Some(utc("2025-01-15T00:00:00Z")),
            "09:00 in Tokyo"
        );
    }

    #[test]
    fn garbage_and_truncation_are_malformed() {
        assert!(matches!(
            parse("<html>login</html>", "c", chrono_tz::UTC),
            Err(LmsError::Malformed(_))
        ));
        assert!(matches!(
            parse(
                "BEGIN:VCALENDAR\nBEGIN:VEVENT\nUID:x\n",
                "c",
                chrono_tz::UTC
            ),
            Err(LmsError::Malformed(_))
        ));
    }
}
