//! What each scenario must leave behind, read off the stores and the calls
//! that ran.

use chrono::{DateTime, Datelike, Duration, NaiveTime, TimeZone, Utc, Weekday};
use chrono_tz::Tz;
use serde_json::Value;

use super::world::COURSEWORK;
use crate::memory::MemoryEntry;
use crate::scheduler::{Job, Payload, Schedule};

/// One call a tool ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub name: String,
    pub args: Value,
    /// The tool did not answer with an error.
    pub ok: bool,
}

/// The state a scenario left.
pub struct After {
    pub jobs: Vec<Job>,
    pub memories: Vec<MemoryEntry>,
    pub calls: Vec<Call>,
    /// Every message sent to the chat.
    pub replies: Vec<String>,
    /// When the world was made; "tomorrow" and "next Tuesday" count from it.
    pub now: DateTime<Utc>,
    /// The zone the scheduler reads times in.
    pub zone: Tz,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// Why not, in a line.
    Fail(String),
}

impl Verdict {
    fn of(pass: bool, why: impl FnOnce() -> String) -> Self {
        if pass { Self::Pass } else { Self::Fail(why()) }
    }
}

/// `days` after `after.now`'s date at `hour`:00 in the zone.
fn local(after: &After, days: i64, hour: u32) -> Option<DateTime<Utc>> {
    let day = after.now.with_timezone(&after.zone).date_naive() + Duration::days(days);
    let time = NaiveTime::from_hms_opt(hour, 0, 0)?;
    let at = after
        .zone
        .from_local_datetime(&day.and_time(time))
        .earliest()?;
    Some(at.with_timezone(&Utc))
}

/// The one-off jobs whose prompt mentions `word`, by when they fire.
fn reminders<'a>(after: &'a After, word: &str) -> Vec<(DateTime<Utc>, &'a Job)> {
    after
        .jobs
        .iter()
        .filter_map(|job| {
            let Schedule::At(at) = job.schedule else {
                return None;
            };
            let Payload::AgentPrompt { prompt } = &job.payload else {
                return None;
            };
            let said = format!("{prompt} {}", job.name.as_deref().unwrap_or_default());
            said.to_lowercase().contains(word).then_some((at, job))
        })
        .collect()
}

fn jobs_seen(after: &After) -> String {
    let jobs: Vec<String> = after
        .jobs
        .iter()
        .map(|j| {
            let at = j.next_run.with_timezone(&after.zone).format("%a %F %H:%M");
            match &j.payload {
                Payload::AgentPrompt { prompt } => format!("{at} {prompt:?}"),
                other => format!("{at} {other:?}"),
            }
        })
        .collect();
    if jobs.is_empty() {
        "no job was set".into()
    } else {
        format!("jobs: {}", jobs.join("; "))
    }
}

/// A job next Tuesday at 09:00 about the dentist ("next Tuesday" on a
/// Monday may mean tomorrow or eight days on: either is taken).
pub fn reminder(after: &After) -> Verdict {
    let today = after.now.with_timezone(&after.zone).weekday();
    let ahead = (Weekday::Tue.num_days_from_monday() + 7 - today.num_days_from_monday()) % 7;
    let first = if ahead == 0 { 7 } else { ahead } as i64;
    let right: Vec<_> = [first, first + 7]
        .into_iter()
        .filter_map(|d| local(after, d, 9))
        .collect();
    let found = reminders(after, "dentist")
        .iter()
        .any(|(at, _)| right.contains(at));
    Verdict::of(found, || {
        format!(
            "no reminder next Tuesday at 09:00 about the dentist ({})",
            jobs_seen(after)
        )
    })
}

/// A memory that holds the sister's birthday, May 3.
pub fn remember(after: &After) -> Verdict {
    let date =
        regex::Regex::new(r"(?i)\bmay\s*0?3(rd)?\b|\b0?3(rd)?\s*(of\s+)?may\b|\b0?5[-/.]0?3\b")
            .expect("a fixed pattern");
    let found = after.memories.iter().any(|m| {
        let text = format!("{} {}", m.key, m.content);
        text.to_lowercase().contains("sister") && date.is_match(&text)
    });
    Verdict::of(found, || {
        let held: Vec<&str> = after.memories.iter().map(|m| m.content.as_str()).collect();
        format!("no memory of the sister's birthday on May 3 (held: {held:?})")
    })
}

/// The LMS tool ran, and the reply names something due within the week
/// (titles no model could guess).
pub fn due_this_week(after: &After) -> Verdict {
    let asked = after
        .calls
        .iter()
        .any(|c| c.ok && c.name.starts_with("lms_"));
    let said = after.replies.join("\n").to_lowercase();
    let named = COURSEWORK
        .iter()
        .filter(|(_, _, days, _)| *days <= 7)
        .any(|(_, _, _, word)| said.contains(word));
    Verdict::of(asked && named, || match asked {
        false => "no LMS tool ran".into(),
        true => "the reply names nothing due this week".into(),
    })
}

/// notes.txt was read by a tool, and the reply carries what only it says.
pub fn read_file(after: &After) -> Verdict {
    let read = after.calls.iter().any(|c| {
        c.ok && matches!(c.name.as_str(), "file_read" | "shell")
            && c.args.to_string().contains("notes.txt")
    });
    let told = after.replies.iter().any(|r| r.contains("plum-otter-42"));
    Verdict::of(read && told, || match read {
        false => "notes.txt was not read".into(),
        true => "the reply does not carry what notes.txt says".into(),
    })
}

/// No tool ran.
pub fn no_tool(after: &After) -> Verdict {
    Verdict::of(after.calls.is_empty(), || {
        let names: Vec<&str> = after.calls.iter().map(|c| c.name.as_str()).collect();
        format!("tools ran: {}", names.join(", "))
    })
}

/// The reminder moved: one tomorrow at 19:00 about mom, none left at 18:00.
pub fn follow_up(after: &After) -> Verdict {
    let mom = reminders(after, "mom");
    let (six, seven) = (local(after, 1, 18), local(after, 1, 19));
    let moved = mom.iter().any(|(at, _)| Some(*at) == seven);
    let left = mom.iter().any(|(at, _)| Some(*at) == six);
    Verdict::of(moved && !left, || {
        format!(
            "wanted one reminder tomorrow at 19:00 and none at 18:00 ({})",
            jobs_seen(after)
        )
    })
}
