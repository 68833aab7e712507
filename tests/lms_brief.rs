//! The morning brief: once a day at its local hour with the due dates, the
//! person's own calendar from a real Radicale, and what changed; once
//! across restarts and a clock set back; late once when the box was off;
//! once at the local hour across both summer-time changes; nothing on a
//! quiet day. The last test runs a real daemon against the fake Bot API.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use chrono::{NaiveDate, NaiveTime};
use hearth::config::BriefConfig;
use hearth::lms::{BRIEF, BriefExtras, Clock, ManualClock, Notice, Notifier};
use support::lms_fake::*;
use support::radicale::Radicale;

/// The person's own calendar: a lecture on Tuesday 11 March, a weekly
/// tutorial on Tuesdays (a recurring event), a lab on Wednesday.
const LECTURES: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//lectures//EN\r\nBEGIN:VEVENT\r\nUID:lecture-11@uni\r\nDTSTAMP:20250301T000000Z\r\nDTSTART:20250311T090000Z\r\nDTEND:20250311T103000Z\r\nSUMMARY:Linear Algebra lecture\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:tutorial@uni\r\nDTSTAMP:20250301T000000Z\r\nDTSTART;TZID=Europe/Berlin:20250304T140000\r\nDTEND;TZID=Europe/Berlin:20250304T150000\r\nRRULE:FREQ=WEEKLY;COUNT=10\r\nSUMMARY:Tutorial\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:lab-12@uni\r\nDTSTAMP:20250301T000000Z\r\nDTSTART:20250312T090000Z\r\nSUMMARY:Lab meeting\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

fn briefs(notices: &[Notice]) -> Vec<String> {
    notices
        .iter()
        .filter(|n| n.item.source == BRIEF)
        .map(|n| n.text.clone())
        .collect()
}

fn at_time(brief: &mut BriefConfig, hh_mm: &str) {
    brief.at = NaiveTime::parse_from_str(hh_mm, "%H:%M").unwrap();
}

fn day(text: &str) -> NaiveDate {
    text.parse().unwrap()
}

#[tokio::test]
async fn the_brief_comes_once_at_its_hour_with_due_dates_the_calendar_and_changes() {
    let radicale = Radicale::start().await;
    let calendar = radicale.calendar("personal", LECTURES).await;
    let fake = moodle_with_grades();
    let url = moodle_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW))); // Monday 10 March, 13:00 CET
    let mut cfg = moodle_config(&url);
    cfg.announce_past = false;
    let sink = Recorder::default();
    notifier(&cfg, dir.path(), &clock).poll_once(&sink).await;
    // The essay is graded in the evening.
    clock.set(at("2025-03-10T18:30:00Z"));
    release_essay_grade(&fake, clock.now().timestamp() - 60);
    notifier(&cfg, dir.path(), &clock).poll_once(&sink).await;
    sink.take();

    let brief = BriefConfig {
        calendar: Some(calendar),
        ..BriefConfig::default()
    };
    let extras = BriefExtras {
        reminders: vec![(at("2025-03-11T08:15:00Z"), "Bring the lab kit".into())],
    };
    let n = notifier(&cfg, dir.path(), &clock);
    clock.set(at("2025-03-11T06:00:00Z")); // 07:00 CET, before its hour
    assert_eq!(n.brief_if_due(&brief, &extras).await.unwrap(), None);
    clock.set(at("2025-03-11T06:31:00Z")); // 07:31 CET
    assert_eq!(
        n.brief_if_due(&brief, &extras).await.unwrap(),
        Some(day("2025-03-11"))
    );
    let mut report = hearth::lms::PollReport::default();
    n.deliver(&sink, &mut report).await;
    let sent = briefs(&sink.take());
    assert_eq!(sent.len(), 1, "{sent:#?}");
    let text = &sent[0];
    for part in [
        "Good morning. Tuesday 11 March.",
        "Due in the next 3 days:\n• Wed 12 Mar 2025 18:00 CET Quiz 2: Sorting (Introduction to Computer Science)",
        "Reminders today:\n• 09:15 Bring the lab kit",
        "On the calendar today:\n• 10:00 Linear Algebra lecture\n• 14:00 Tutorial",
        "Since the last brief:\n• Graded: Essay 1: Algorithms in everyday life (Introduction to Computer Science)",
        "• New quiz: Quiz 2: Sorting",
    ] {
        assert!(text.contains(part), "no {part:?} in:\n{text}");
    }
    for absent in ["Lab meeting", "Week 3 exercise"] {
        assert!(!text.contains(absent), "{absent:?} in:\n{text}");
    }
    assert!(
        !text.contains("p@ss"),
        "the calendar's password never shows"
    );

    // Once: later that morning, after a restart, with the clock set back.
    clock.set(at("2025-03-11T07:45:00Z"));
    assert_eq!(n.brief_if_due(&brief, &extras).await.unwrap(), None);
    drop(n);
    let restarted = notifier(&cfg, dir.path(), &clock);
    assert_eq!(restarted.brief_if_due(&brief, &extras).await.unwrap(), None);
    clock.set(at("2025-03-11T05:00:00Z"));
    assert_eq!(restarted.brief_if_due(&brief, &extras).await.unwrap(), None);
    clock.set(at("2025-03-11T06:40:00Z"));
    assert_eq!(restarted.brief_if_due(&brief, &extras).await.unwrap(), None);
    let mut report = hearth::lms::PollReport::default();
    restarted.deliver(&sink, &mut report).await;
    assert!(briefs(&sink.take()).is_empty());

    // The next morning's brief tells only what changed since this one.
    clock.set(at("2025-03-12T06:31:00Z"));
    assert!(
        restarted
            .brief_if_due(&brief, &extras)
            .await
            .unwrap()
            .is_some()
    );
    restarted.deliver(&sink, &mut report).await;
    let next = briefs(&sink.take());
    assert_eq!(next.len(), 1);
    assert!(next[0].contains("• 10:00 Lab meeting"), "{}", next[0]);
    assert!(!next[0].contains("Graded:"), "{}", next[0]);
}

/// A notifier whose brief always says something (`quiet_when_empty`
/// off), over the fake Moodle, with its clock.
async fn talkative(clock: &Arc<ManualClock>) -> (Notifier, tempfile::TempDir, Recorder) {
    let fake = moodle_fake();
    let url = moodle_server(fake).await;
    let dir = tempfile::tempdir().unwrap();
    let n = notifier(&moodle_config(&url), dir.path(), clock);
    (n, dir, Recorder::default())
}

/// The briefs that go out at `now`: queued and delivered.
async fn sends_texts(
    n: &Notifier,
    sink: &Recorder,
    clock: &ManualClock,
    now: &str,
    brief: &BriefConfig,
) -> Vec<String> {
    clock.set(at(now));
    n.brief_if_due(brief, &BriefExtras::default())
        .await
        .unwrap();
    let mut report = hearth::lms::PollReport::default();
    n.deliver(sink, &mut report).await;
    briefs(&sink.take())
}

/// Whether a brief goes out at `now`: queued and delivered.
async fn sends_at(
    n: &Notifier,
    sink: &Recorder,
    clock: &ManualClock,
    now: &str,
    brief: &BriefConfig,
) -> usize {
    sends_texts(n, sink, clock, now, brief).await.len()
}

#[tokio::test]
async fn across_summer_time_and_a_box_that_was_off_the_brief_comes_once_at_the_local_hour() {
    let clock = Arc::new(ManualClock::new(at("2025-03-29T00:00:00Z")));
    let (n, _dir, sink) = talkative(&clock).await;
    let mut brief = BriefConfig {
        quiet_when_empty: false,
        ..BriefConfig::default()
    };
    // Saturday 29 March, 07:30 CET = 06:30 UTC.
    assert_eq!(
        sends_at(&n, &sink, &clock, "2025-03-29T06:29:00Z", &brief).await,
        0
    );
    assert_eq!(
        sends_at(&n, &sink, &clock, "2025-03-29T06:30:00Z", &brief).await,
        1
    );
    // Sunday 30 March, summer time from 02:00: 07:30 CEST = 05:30 UTC.
    assert_eq!(
        sends_at(&n, &sink, &clock, "2025-03-30T05:29:00Z", &brief).await,
        0
    );
    assert_eq!(
        sends_at(&n, &sink, &clock, "2025-03-30T05:30:00Z", &brief).await,
        1
    );
    assert_eq!(
        sends_at(&n, &sink, &clock, "2025-03-30T06:30:00Z", &brief).await,
        0
    );
    // The box was off at Monday's hour: started at 15:00, it comes once, late.
    assert_eq!(
        sends_at(&n, &sink, &clock, "2025-03-31T13:00:00Z", &brief).await,
        1
    );
    assert_eq!(
        sends_at(&n, &sink, &clock, "2025-03-31T14:00:00Z", &brief).await,
        0
    );
    // Off all Tuesday: Wednesday morning brings Wednesday's only.
    assert_eq!(
        sends_at(&n, &sink, &clock, "2025-04-02T05:31:00Z", &brief).await,
        1
    );
    assert!(!n.store().brief_queued(day("2025-04-01")).unwrap());

    // 02:30, an hour the spring change skips: the first instant after it.
    at_time(&mut brief, "02:30");
    let clock = Arc::new(ManualClock::new(at("2026-03-28T00:00:00Z")));
    let (n, _dir, sink) = talkative(&clock).await;
    assert_eq!(
        sends_at(&n, &sink, &clock, "2026-03-29T00:59:00Z", &brief).await,
        0,
        "01:59 CET"
    );
    assert_eq!(
        sends_at(&n, &sink, &clock, "2026-03-29T01:00:00Z", &brief).await,
        1,
        "03:00 CEST"
    );
    // 02:30, an hour the autumn change has twice: the first of them only.
    assert_eq!(
        sends_at(&n, &sink, &clock, "2026-10-25T00:30:00Z", &brief).await,
        1,
        "02:30 CEST"
    );
    assert_eq!(
        sends_at(&n, &sink, &clock, "2026-10-25T01:30:00Z", &brief).await,
        0,
        "02:30 CET"
    );
}

#[tokio::test]
async fn a_quiet_day_sends_nothing_and_a_talkative_one_says_so() {
    // Mid-June: everything the fake Moodle lists is past and was told.
    let clock = Arc::new(ManualClock::new(at("2025-06-02T05:00:00Z")));
    let (n, _dir, sink) = talkative(&clock).await;
    n.poll_once(&sink).await;
    sink.take();
    let quiet = BriefConfig::default();
    assert_eq!(
        sends_at(&n, &sink, &clock, "2025-06-03T06:00:00Z", &quiet).await,
        0
    );
    assert!(
        n.store().brief_queued(day("2025-06-03")).unwrap(),
        "the quiet day is done: nothing later that day either"
    );
    // Control: with quiet_when_empty off, the same kind of day says so.
    let told = BriefConfig {
        quiet_when_empty: false,
        ..BriefConfig::default()
    };
    clock.set(at("2025-06-04T06:00:00Z"));
    n.brief_if_due(&told, &BriefExtras::default())
        .await
        .unwrap();
    let mut report = hearth::lms::PollReport::default();
    n.deliver(&sink, &mut report).await;
    let sent = briefs(&sink.take());
    assert_eq!(sent.len(), 1);
    assert!(
        sent[0].starts_with("Good morning. Nothing is due in the next 4 days"),
        "{}",
        sent[0]
    );
    // A calendar that cannot be read is worth a word even on a quiet day,
    // and the word never holds its password.
    let broken = BriefConfig {
        calendar: Some("http://me:hunter2@127.0.0.1:9/me/personal/".into()),
        ..BriefConfig::default()
    };
    let sent = sends_texts(&n, &sink, &clock, "2025-06-05T06:00:00Z", &broken).await;
    assert_eq!(sent.len(), 1);
    assert!(
        sent[0].contains("Your calendar could not be read"),
        "{}",
        sent[0]
    );
    assert!(!sent[0].contains("hunter2"), "{}", sent[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_daemon_sends_the_brief_once_through_the_bot_api_also_after_a_restart() {
    use crate::common::Sandbox;
    use support::daemon_process::{Daemon, config, until};
    use support::slow_model::SlowModel;
    use support::telegram_fake::FakeTelegram;

    let today = chrono::Utc::now().date_naive();
    let stamp = |d: NaiveDate, hms: &str| format!("{}T{hms}Z", d.format("%Y%m%d"));
    let radicale = Radicale::start().await;
    let seminar = format!(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:seminar@uni\r\nDTSTAMP:{}\r\nDTSTART:{}\r\nSUMMARY:Reading seminar\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
        stamp(today, "000000"),
        stamp(today, "003000")
    );
    let calendar = radicale.calendar("personal", &seminar).await;
    let course = Fake::default();
    course.set(
        "feed",
        format!(
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VTODO\r\nUID:draft@uni\r\nDTSTAMP:{}\r\nDUE:{}\r\nSUMMARY:Essay draft\r\nEND:VTODO\r\nEND:VCALENDAR\r\n",
            stamp(today, "000000"),
            stamp(today + chrono::Duration::days(1), "120000")
        ),
    );
    let feed = feed_server(Arc::new(course), "text/calendar").await;

    let fake = FakeTelegram::start().await;
    let model = SlowModel::start(1, Duration::from_millis(10)).await;
    let sandbox = Sandbox::new();
    let extra = format!(
        "[lms]\ntime_zone = \"UTC\"\ndeliver = {{ channel = \"telegram\", to = \"601\" }}\n[[lms.sources]]\nkind = \"ical\"\nname = \"course\"\nurl = \"{feed}\"\n[brief]\nat = \"00:00\"\ncalendar = \"{calendar}\"\n"
    );
    let config = config(&sandbox, &fake, &model, "", &extra);
    let is_brief = |t: &String| t.starts_with("Good morning.");
    let daemon = Daemon::start(&sandbox, &config);
    until("the brief", Duration::from_secs(60), || {
        fake.chat(601).iter().any(is_brief)
    })
    .await;
    let chat = fake.chat(601);
    let brief = chat.iter().find(|t| is_brief(t)).unwrap();
    for part in [
        "Due in the next 3 days:",
        "Essay draft",
        "On the calendar today:\n• 00:30 Reading seminar",
        "Since the last brief:\n• New assignment: Essay draft",
    ] {
        assert!(brief.contains(part), "no {part:?} in:\n{brief}");
    }
    let (code, log) = daemon.term();
    assert_eq!(code, Some(0), "{log}");

    // Started again the same day: its hour has passed, and it was sent.
    let daemon = Daemon::start(&sandbox, &config);
    let out = sandbox
        .hearth()
        .args(["--config", config.to_str().unwrap(), "brief"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("Essay draft"),
        "hearth brief prints it: {printed}"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, log) = daemon.term();
    assert_eq!(
        fake.chat(601).iter().filter(|t| is_brief(t)).count(),
        1,
        "once a day: {log}"
    );
}

#[tokio::test]
async fn the_web_page_reads_todays_brief_from_a_real_daemon_and_a_stranger_does_not() {
    let today = chrono::Utc::now().date_naive();
    let course = Fake::default();
    course.set(
        "feed",
        format!(
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VTODO\r\nUID:draft@uni\r\nDTSTAMP:{0}T000000Z\r\nDUE:{1}T120000Z\r\nSUMMARY:Essay draft\r\nEND:VTODO\r\nEND:VCALENDAR\r\n",
            today.format("%Y%m%d"),
            (today + chrono::Duration::days(1)).format("%Y%m%d")
        ),
    );
    let feed = feed_server(Arc::new(course), "text/calendar").await;
    let extra = format!(
        "[lms]\ntime_zone = \"UTC\"\n[[lms.sources]]\nkind = \"ical\"\nname = \"course\"\nurl = \"{feed}\"\n"
    );
    let running = support::api_daemon::daemon_with("", &extra).await;
    let client = reqwest::Client::new();
    let url = format!("{}/ui/api/brief", running.base);
    // Hostile: no token, no brief.
    let stranger = client.get(&url).send().await.unwrap();
    assert_eq!(stranger.status(), 401);
    let mut last = serde_json::Value::Null;
    for _ in 0..300 {
        last = client
            .get(&url)
            .bearer_auth(support::ways_in::TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if last["brief"]
            .as_str()
            .is_some_and(|b| b.contains("Essay draft"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let brief = last["brief"].as_str().unwrap_or_else(|| panic!("{last}"));
    assert!(brief.starts_with("Good morning."), "{brief}");
    assert!(brief.contains("Due in the next 3 days:"), "{brief}");
}
