//! The LMS notifier on calendar and news feeds (`support::lms_fake`):
//! iCal with time zones, whole days and weekly series, RSS with a broken
//! payload.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::time::Duration;

use axum::http::StatusCode;
use std::sync::Arc;

use hearth::config::LmsKind;
use hearth::lms::{ManualClock, Notice, NoticeKind};
use support::lms_fake::*;

#[tokio::test]
async fn ical_feed_notifies_once_and_reminds_once_per_window() {
    let fake = Fake::with(&[("feed", "calendar.ics")]);
    let url = feed_server(fake.clone(), "text/calendar").await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let sink = Recorder::default();
    let cfg = config(vec![source(LmsKind::Ical, "calendar", &url, None)]);
    let n = notifier(&cfg, dir.path(), &clock);

    let report = n.poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(
        ids(&notices),
        [
            "901@moodle.example.edu",
            "905@moodle.example.edu",
            "holiday-2025-04-18@example.edu"
        ]
    );
    assert_eq!(
        report.source("calendar").unwrap().reminders,
        0,
        "nothing is due within 24 h yet"
    );
    let quiz = notices
        .iter()
        .find(|n| n.item.id.starts_with("905"))
        .unwrap();
    assert_eq!(
        quiz.item.due,
        Some(at("2025-03-12T17:00:00Z")),
        "18:00 Berlin"
    );
    assert_eq!(quiz.item.course.as_deref(), Some("CS101"));

    // 23 h before the quiz: the 24 h reminder, once.
    clock.set(at("2025-03-11T18:00:00Z"));
    n.poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(notices.len(), 1);
    assert_eq!(
        notices[0].kind,
        NoticeKind::Reminder {
            before: Duration::from_secs(86_400)
        }
    );
    assert!(
        notices[0].text.starts_with(
            "Due in 24h: event · CS101\nQuiz 2: Sorting closes\nDue Wed 12 Mar 2025 18:00 CET"
        ),
        "{}",
        notices[0].text
    );
    clock.advance(chrono::Duration::minutes(30));
    n.poll_once(&sink).await;
    assert!(sink.take().is_empty(), "the 24 h reminder fires once");

    // 50 minutes before: the 1 h reminder, once; after a restart, still once.
    clock.set(at("2025-03-12T16:10:00Z"));
    n.poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(notices.len(), 1);
    assert_eq!(
        notices[0].kind,
        NoticeKind::Reminder {
            before: Duration::from_secs(3600)
        }
    );
    let restarted = notifier(&cfg, dir.path(), &clock);
    clock.advance(chrono::Duration::minutes(5));
    restarted.poll_once(&sink).await;
    assert!(
        sink.take().is_empty(),
        "the 1 h reminder fires once, across a restart"
    );

    // Past due: nothing more.
    clock.set(at("2025-03-12T18:00:00Z"));
    restarted.poll_once(&sink).await;
    assert!(sink.take().is_empty());
}

#[tokio::test]
async fn a_new_item_due_soon_gets_its_notice_not_an_extra_reminder() {
    let fake = Fake::with(&[("feed", "calendar.ics")]);
    let url = feed_server(fake.clone(), "text/calendar").await;
    let dir = tempfile::tempdir().unwrap();
    // First poll ever, 30 minutes before the quiz closes.
    let clock = Arc::new(ManualClock::new(at("2025-03-12T16:30:00Z")));
    let sink = Recorder::default();
    let cfg = config(vec![source(LmsKind::Ical, "calendar", &url, None)]);
    let n = notifier(&cfg, dir.path(), &clock);
    n.poll_once(&sink).await;
    let quiz: Vec<Notice> = sink
        .take()
        .into_iter()
        .filter(|n| n.item.id.starts_with("905"))
        .collect();
    assert_eq!(quiz.len(), 1);
    assert_eq!(quiz[0].kind, NoticeKind::New);
    clock.advance(chrono::Duration::minutes(10));
    n.poll_once(&sink).await;
    assert!(
        sink.take().is_empty(),
        "the notice already showed the due date"
    );
}

#[tokio::test]
async fn rss_malformed_payload_is_reported_then_the_feed_recovers() {
    let fake = Fake::with(&[("feed", "news.rss")]);
    let url = feed_server(fake.clone(), "application/rss+xml").await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let sink = Recorder::default();
    let cfg = config(vec![source(LmsKind::Rss, "news", &url, None)]);
    let n = notifier(&cfg, dir.path(), &clock);

    fake.fail_with(
        StatusCode::OK,
        vec![("content-type", "application/rss+xml".into())],
        "<rss><channel><item><title>cut off</item>",
    );
    let report = n.poll_once(&sink).await;
    let error = error_of(&report, "news");
    assert!(error.contains("malformed payload"), "{error}");
    assert_eq!(report.sent(), 0);

    fake.heal();
    clock.advance(chrono::Duration::minutes(30));
    n.poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(ids(&notices), ["news-2025-030", "news-2025-031"]);
    let tutors = notices
        .iter()
        .find(|n| n.item.id == "news-2025-030")
        .unwrap();
    assert_eq!(
        tutors.text,
        "New news · news\nCall for tutors & teaching assistants\nhttps://cs.example.edu/news/tutors"
    );
    clock.advance(chrono::Duration::minutes(30));
    assert_eq!(n.poll_once(&sink).await.sent(), 0);
}

/// A weekly lecture as Google or Outlook export it: Mondays 10:00 Berlin,
/// one Monday cancelled (EXDATE), one moved to Tuesday (RECURRENCE-ID).
const LECTURES: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Google Inc//Google Calendar 70.9054//EN\r\nBEGIN:VEVENT\r\nDTSTART;TZID=Europe/Berlin:20250303T100000\r\nDTEND;TZID=Europe/Berlin:20250303T120000\r\nRRULE:FREQ=WEEKLY;BYDAY=MO;UNTIL=20250428T080000Z\r\nEXDATE;TZID=Europe/Berlin:20250317T100000\r\nUID:lecture-la@example.edu\r\nSUMMARY:Linear Algebra lecture\r\nCATEGORIES:MATH221\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nDTSTART;TZID=Europe/Berlin:20250325T140000\r\nDTEND;TZID=Europe/Berlin:20250325T160000\r\nRECURRENCE-ID;TZID=Europe/Berlin:20250324T100000\r\nUID:lecture-la@example.edu\r\nSUMMARY:Linear Algebra lecture (moved\\, room H2)\r\nCATEGORIES:MATH221\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

#[tokio::test]
async fn a_weekly_series_yields_its_occurrences_and_a_reminder_for_each() {
    let fake = Fake::default();
    fake.set("feed", LECTURES.to_string());
    let fake = Arc::new(fake);
    let url = feed_server(fake.clone(), "text/calendar").await;
    let dir = tempfile::tempdir().unwrap();
    // Monday 10 March, 12:00 UTC: this morning's lecture is over.
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let sink = Recorder::default();
    let mut cfg = config(vec![source(LmsKind::Ical, "timetable", &url, None)]);
    cfg.recurrence_horizon = Duration::from_secs(21 * 86_400);
    let n = notifier(&cfg, dir.path(), &clock);
    n.poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(
        notices.len(),
        1,
        "one notice for the series: {:?}",
        notices.iter().map(|n| &n.item.id).collect::<Vec<_>>()
    );
    assert_eq!(
        notices[0].item.id,
        "lecture-la@example.edu@20250310T090000Z"
    );

    let weeks = upcoming(&n, dir.path(), 21).await.content;
    let lines: Vec<&str> = weeks.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(
        lines.len(),
        2,
        "17 March is cancelled, 24 March moved to the 25th, 31 March is 21 days out: {weeks}"
    );
    assert!(
        lines[0]
            .starts_with("- Tue 25 Mar 2025 14:00 CET: Linear Algebra lecture (moved, room H2)"),
        "{weeks}"
    );
    assert!(
        lines[1].starts_with("- Mon 31 Mar 2025 10:00 CEST: Linear Algebra lecture"),
        "after the clocks change: {weeks}"
    );

    // Nothing on the cancelled Monday.
    clock.set(at("2025-03-16T12:00:00Z"));
    n.poll_once(&sink).await;
    assert!(sink.take().is_empty());

    // The moved lecture: its own 24 h reminder, for the new time.
    clock.set(at("2025-03-24T14:00:00Z"));
    n.poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(
        notices.len(),
        1,
        "{:?}",
        notices.iter().map(|n| &n.text).collect::<Vec<_>>()
    );
    assert_eq!(
        notices[0].kind,
        NoticeKind::Reminder {
            before: Duration::from_secs(86_400)
        }
    );
    assert!(
        notices[0].text.contains("Due Tue 25 Mar 2025 14:00 CET"),
        "{}",
        notices[0].text
    );

    // The next Monday's lecture gets its reminders too, once each.
    clock.set(at("2025-03-30T09:00:00Z"));
    n.poll_once(&sink).await;
    clock.set(at("2025-03-31T07:30:00Z"));
    n.poll_once(&sink).await;
    clock.advance(chrono::Duration::minutes(10));
    n.poll_once(&sink).await;
    let kinds: Vec<NoticeKind> = sink.take().into_iter().map(|n| n.kind).collect();
    assert_eq!(
        kinds,
        [
            NoticeKind::Reminder {
                before: Duration::from_secs(86_400)
            },
            NoticeKind::Reminder {
                before: Duration::from_secs(3_600)
            },
        ]
    );
}

#[tokio::test]
async fn a_whole_day_event_is_shown_as_a_date() {
    let fake = Fake::with(&[("feed", "calendar.ics")]);
    let url = feed_server(fake.clone(), "text/calendar").await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let sink = Recorder::default();
    let cfg = config(vec![source(LmsKind::Ical, "calendar", &url, None)]);
    notifier(&cfg, dir.path(), &clock).poll_once(&sink).await;
    let holiday = sink
        .take()
        .into_iter()
        .find(|n| n.item.id.starts_with("holiday"))
        .unwrap();
    assert!(
        holiday.text.ends_with("\nDue Fri 18 Apr 2025"),
        "{}",
        holiday.text
    );
}

#[tokio::test]
async fn a_feed_category_is_not_taken_for_a_course() {
    let fake = Fake::with(&[("feed", "news.rss")]);
    fake.edit("feed", "<guid", "<category>Department</category><guid");
    let url = feed_server(fake.clone(), "application/rss+xml").await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let sink = Recorder::default();
    let cfg = config(vec![source(LmsKind::Rss, "news", &url, None)]);
    notifier(&cfg, dir.path(), &clock).poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(notices.len(), 2);
    assert!(
        notices
            .iter()
            .all(|n| n.item.course.is_none() && n.text.starts_with("New news · news\n"))
    );
}
