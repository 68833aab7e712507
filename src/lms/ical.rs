//! An iCalendar (RFC 5545) feed: Moodle's calendar export, a university
//! timetable, any `.ics` URL.
//!
//! The parser reads what a notifier needs and nothing more: lines are
//! unfolded, then each `VEVENT`/`VTODO` gives UID, SUMMARY, DESCRIPTION,
//! DTSTART/DUE/DTEND (UTC, `TZID=`, floating, or date-only), URL,
//! LAST-MODIFIED and CATEGORIES (taken as the course). Recurrence rules are
//! not expanded: a recurring event is one item, at its first start.

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;

use super::item::course_allowed;
use super::{ItemKind, LmsError, LmsItem, LmsSource, http};
use crate::config::LmsSourceConfig;
use futures::future::BoxFuture;

pub struct Ical {
    config: LmsSourceConfig,
    http: reqwest::Client,
    time_zone: Tz,
}

impl Ical {
    pub fn new(config: LmsSourceConfig, http: reqwest::Client, time_zone: Tz) -> Self {
        Self {
            config,
            http,
            time_zone,
        }
    }

    async fn fetch(&self) -> Result<Vec<LmsItem>, LmsError> {
        let mut request = self.http.get(&self.config.url);
        if let Some(token) = &self.config.token {
            request = request.bearer_auth(token.expose());
        }
        let body = http::text(http::send(request).await?).await?;
        let items = parse(&body, &self.config.name, self.time_zone)?;
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

    fn poll(&self, _now: DateTime<Utc>) -> BoxFuture<'_, Result<Vec<LmsItem>, LmsError>> {
        Box::pin(self.fetch())
    }
}

/// One content line: `NAME;PARAM=VALUE:value`.
struct Property<'a> {
    name: String,
    params: Vec<(String, &'a str)>,
    value: &'a str,
}

impl Property<'_> {
    fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim_matches('"'))
    }
}

/// Joins folded lines: a line starting with a space or tab continues the
/// previous one, without that first character.
fn unfold(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for raw in text.trim_start_matches('\u{feff}').split('\n') {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        match line.chars().next() {
            Some(' ' | '\t') if !lines.is_empty() => {
                if let Some(last) = lines.last_mut() {
                    last.push_str(&line[1..]);
                }
            }
            _ if line.is_empty() => {}
            _ => lines.push(line.to_string()),
        }
    }
    lines
}

fn property(line: &str) -> Option<Property<'_>> {
    // The value starts at the first ':' outside double quotes.
    let mut quoted = false;
    let colon = line.char_indices().find_map(|(i, c)| match c {
        '"' => {
            quoted = !quoted;
            None
        }
        ':' if !quoted => Some(i),
        _ => None,
    })?;
    let (head, value) = (&line[..colon], &line[colon + 1..]);
    let mut parts = head.split(';');
    let name = parts.next()?.trim().to_ascii_uppercase();
    let params = parts
        .filter_map(|p| {
            let (k, v) = p.split_once('=')?;
            Some((k.trim().to_ascii_uppercase(), v))
        })
        .collect();
    Some(Property {
        name,
        params,
        value,
    })
}

/// TEXT values escape `\n`, `\,`, `\;` and `\\`.
fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n' | 'N') => out.push('\n'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// A DATE or DATE-TIME value: `…Z` is UTC, `TZID=` names the zone (an
/// unknown zone, such as a Windows name, falls back to the user's), anything
/// else is floating and read in the user's zone; a date is its midnight.
fn date_time(p: &Property<'_>, user_tz: Tz) -> Option<DateTime<Utc>> {
    let value = p.value.trim();
    let zone = p
        .param("TZID")
        .and_then(|z| z.trim_start_matches('/').parse::<Tz>().ok())
        .unwrap_or(user_tz);
    let local = if p.param("VALUE") == Some("DATE") || value.len() == 8 {
        NaiveDate::parse_from_str(value, "%Y%m%d")
            .ok()?
            .and_hms_opt(0, 0, 0)?
    } else if let Some(utc) = value.strip_suffix('Z') {
        let naive = NaiveDateTime::parse_from_str(utc, "%Y%m%dT%H%M%S").ok()?;
        return Some(Utc.from_utc_datetime(&naive));
    } else {
        NaiveDateTime::parse_from_str(value, "%Y%m%dT%H%M%S").ok()?
    };
    zone.from_local_datetime(&local)
        .earliest()
        .map(|d| d.with_timezone(&Utc))
}

/// The items of a calendar.
pub fn parse(text: &str, source: &str, user_tz: Tz) -> Result<Vec<LmsItem>, LmsError> {
    let lines = unfold(text);
    if !lines
        .first()
        .is_some_and(|l| l.trim().eq_ignore_ascii_case("BEGIN:VCALENDAR"))
    {
        return Err(LmsError::Malformed(
            "not an iCalendar feed (no BEGIN:VCALENDAR)".into(),
        ));
    }
    let mut items = Vec::new();
    let mut current: Option<(ItemKind, Vec<&str>)> = None;
    let mut nested = 0usize; // VALARM and the like inside a component
    for line in &lines {
        let upper = line.trim().to_ascii_uppercase();
        match upper.as_str() {
            "BEGIN:VEVENT" if current.is_none() => current = Some((ItemKind::Event, Vec::new())),
            "BEGIN:VTODO" if current.is_none() => {
                current = Some((ItemKind::Assignment, Vec::new()))
            }
            "END:VEVENT" | "END:VTODO" if nested == 0 => {
                if let Some((kind, props)) = current.take() {
                    items.extend(component(kind, &props, source, user_tz));
                }
            }
            _ if upper.starts_with("BEGIN:") && current.is_some() => nested += 1,
            _ if upper.starts_with("END:") && nested > 0 => nested -= 1,
            _ => {
                if let Some((_, props)) = current.as_mut()
                    && nested == 0
                {
                    props.push(line);
                }
            }
        }
    }
    if current.is_some() {
        return Err(LmsError::Malformed(
            "the calendar ends inside an event (truncated?)".into(),
        ));
    }
    Ok(items)
}

fn component(kind: ItemKind, lines: &[&str], source: &str, user_tz: Tz) -> Option<LmsItem> {
    let props: Vec<Property<'_>> = lines.iter().filter_map(|l| property(l)).collect();
    let get = |name: &str| props.iter().find(|p| p.name == name);
    let summary = get("SUMMARY")
        .map(|p| unescape(p.value))
        .unwrap_or_default();
    let start = get("DTSTART").and_then(|p| date_time(p, user_tz));
    let uid = match get("UID") {
        Some(p) => unescape(p.value),
        // No UID breaks RFC 5545; the title and start still identify it.
        None => format!("{summary}|{}", start.map(|s| s.timestamp()).unwrap_or(0)),
    };
    let id = match get("RECURRENCE-ID") {
        Some(r) => format!("{uid}@{}", r.value.trim()),
        None => uid,
    };
    let mut item = LmsItem::new(
        source,
        id,
        kind,
        if summary.is_empty() {
            "(untitled event)".to_string()
        } else {
            summary
        },
    );
    item.due = get("DUE")
        .and_then(|p| date_time(p, user_tz))
        .or(start)
        .or_else(|| get("DTEND").and_then(|p| date_time(p, user_tz)));
    item.updated = get("LAST-MODIFIED").and_then(|p| date_time(p, user_tz));
    item.url = get("URL").map(|p| unescape(p.value.trim()));
    item.course = get("CATEGORIES")
        .map(|p| unescape(p.value))
        .filter(|c| !c.trim().is_empty());
    item.detail = get("DESCRIPTION")
        .map(|p| unescape(p.value).trim().to_string())
        .filter(|d| !d.is_empty());
    Some(item)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAL: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:a1@example\r\nSUMMARY:Essay 1 is due\\, finally\r\nDESCRIPTION:Submit the essay on\r\n  the portal.\\nGood luck\r\nDTSTART;TZID=Europe/Berlin:20250314T235900\r\nURL:https://moodle.example.edu/mod/assign/view.php?id=7\r\nLAST-MODIFIED:20250301T120000Z\r\nCATEGORIES:CS101\r\nBEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:nested alarm\r\nEND:VALARM\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:a2@example\r\nSUMMARY:Holiday\r\nDTSTART;VALUE=DATE:20250401\r\nEND:VEVENT\r\nBEGIN:VTODO\r\nUID:t1@example\r\nSUMMARY:Lab report\r\nDTSTART:20250301T090000\r\nDUE:20250310T170000Z\r\nEND:VTODO\r\nEND:VCALENDAR\r\n";

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
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
