//! The LMS notifier against a fake Moodle (`support::lms_fake`) that speaks
//! its web services as Moodle does: the token check, extensions in the
//! action events, paging, refused functions, submitted work, a first run.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;
use crate::support;

use common::Sandbox;
use std::sync::Arc;

use hearth::config::LmsKind;
use hearth::lms::{ManualClock, NoticeKind};
use support::lms_fake::*;

use serde_json::json;

#[tokio::test]
async fn moodle_notifies_once_survives_a_restart_and_reports_a_new_due_date_once() {
    let fake = moodle_fake();
    let url = moodle_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let cfg = moodle_config(&url);
    let sink = Recorder::default();

    let first = notifier(&cfg, dir.path(), &clock).poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(
        ids(&notices),
        [
            "assign:31",
            "assign:32",
            "discussion:54",
            "discussion:55",
            "event:905"
        ],
        "the calendar event of assignment 31 is folded into the assignment"
    );
    let r = first.source("uni").unwrap();
    assert_eq!(
        (r.items, r.new, r.sent, r.failed, r.error.clone()),
        (5, 5, 5, 0, None)
    );
    let essay = notices.iter().find(|n| n.item.id == "assign:31").unwrap();
    assert_eq!(essay.kind, NoticeKind::New);
    assert_eq!(
        essay.text,
        format!(
            "New assignment · Introduction to Computer Science\nEssay 1: Algorithms in everyday life\nDue Sat 15 Mar 2025 23:59 CET\n{url}/mod/assign/view.php?id=112"
        )
    );
    let quiz = notices.iter().find(|n| n.item.id == "event:905").unwrap();
    assert!(
        quiz.text
            .starts_with("New quiz · Introduction to Computer Science\nQuiz 2: Sorting\n"),
        "{}",
        quiz.text
    );

    let n = notifier(&cfg, dir.path(), &clock);
    clock.advance(chrono::Duration::minutes(30));
    assert_eq!(
        n.poll_once(&sink).await.sent(),
        0,
        "a second poll sends nothing"
    );
    drop(n);

    // Restart: a new notifier over the same data dir.
    let restarted = notifier(&cfg, dir.path(), &clock);
    clock.advance(chrono::Duration::minutes(30));
    let after_restart = restarted.poll_once(&sink).await;
    assert_eq!(after_restart.sent(), 0, "a restart changes nothing");
    assert!(sink.take().is_empty());

    // The essay moves two days later: its base date and its calendar event.
    move_the_essay_two_days(&fake);
    clock.advance(chrono::Duration::minutes(30));
    let changed = restarted.poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(ids(&notices), ["assign:31"]);
    assert_eq!(changed.source("uni").unwrap().changed, 1);
    assert_eq!(notices[0].kind, NoticeKind::Changed);
    assert!(
        notices[0]
            .text
            .contains("Due Mon 17 Mar 2025 23:59 CET (was Sat 15 Mar 2025 23:59 CET)"),
        "{}",
        notices[0].text
    );
    clock.advance(chrono::Duration::minutes(30));
    assert_eq!(
        restarted.poll_once(&sink).await.sent(),
        0,
        "the change is told once"
    );
}

#[tokio::test]
async fn moodle_invalid_token_is_an_auth_error_and_marks_nothing_seen() {
    let fake = moodle_fake();
    let url = moodle_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let sink = Recorder::default();
    let bad = config(vec![source(
        LmsKind::Moodle,
        "uni",
        &url,
        Some("expired-token"),
    )]);
    let report = notifier(&bad, dir.path(), &clock).poll_once(&sink).await;
    let r = report.source("uni").unwrap();
    let error = r.error.clone().unwrap();
    assert!(
        error.contains("authentication failed") && error.contains("invalidtoken"),
        "{error}"
    );
    assert_eq!((r.items, r.sent), (0, 0));
    assert!(
        !error.contains("expired-token"),
        "the token never shows: {error}"
    );

    let good = moodle_config(&url);
    // As the daemon runs it: on a spawned task (the poll future is Send).
    let n = Arc::new(notifier(&good, dir.path(), &clock));
    let sink = Arc::new(sink);
    let report = tokio::spawn({
        let (n, sink) = (n.clone(), sink.clone());
        async move { n.poll_once(sink.as_ref()).await }
    })
    .await
    .unwrap();
    assert_eq!(
        report.sent(),
        5,
        "nothing was marked seen by the failed poll"
    );
}

#[tokio::test]
async fn lms_upcoming_answers_what_is_due_this_week() {
    let fake = moodle_fake();
    let url = moodle_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let cfg = moodle_config(&url);
    let n = notifier(&cfg, dir.path(), &clock);
    n.poll_once(&Recorder::default()).await;

    let week = upcoming(&n, dir.path(), 7).await;
    assert!(!week.is_error);
    let quiz = week.content.find("Quiz 2: Sorting").expect(&week.content);
    let essay = week.content.find("Essay 1").expect(&week.content);
    assert!(quiz < essay, "soonest first: {}", week.content);
    assert!(
        !week.content.contains("Problem set 3"),
        "due in 10 days: {}",
        week.content
    );
    assert!(
        week.content.contains("Wed 12 Mar 2025 18:00 CET"),
        "{}",
        week.content
    );
    let two_weeks = upcoming(&n, dir.path(), 14).await;
    assert!(
        two_weeks.content.contains("Problem set 3"),
        "{}",
        two_weeks.content
    );
}

#[tokio::test]
async fn lms_recent_lists_what_appeared_lately_newest_first() {
    let fake = moodle_fake();
    let url = moodle_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let n = notifier(&moodle_config(&url), dir.path(), &clock);
    // Control: nothing polled, nothing new.
    let before = recent(&n, dir.path(), 7).await;
    assert!(before.content.contains("Nothing new"), "{}", before.content);
    n.poll_once(&Recorder::default()).await;
    let week = recent(&n, dir.path(), 7).await;
    assert!(!week.is_error, "{}", week.content);
    for title in [
        "Room change for Thursday",
        "Welcome to CS101",
        "Quiz 2: Sorting",
    ] {
        assert!(week.content.contains(title), "{title}: {}", week.content);
    }
    // Seen a week and a day ago: no longer recent.
    clock.advance(chrono::Duration::days(8));
    let later = recent(&n, dir.path(), 7).await;
    assert!(later.content.contains("Nothing new"), "{}", later.content);
}

#[tokio::test]
async fn course_filters_keep_only_the_named_courses() {
    let fake = moodle_fake();
    let url = moodle_server(fake.clone()).await;
    let clock = Arc::new(ManualClock::new(at(NOW)));
    for (filter, expected) in [
        ("cs101", 5),
        ("Introduction to Computer Science", 5),
        ("7", 5),
        ("MA200", 0),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut uni = source(LmsKind::Moodle, "uni", &url, Some(MOODLE_TOKEN));
        uni.courses = vec![filter.to_string()];
        let sink = Recorder::default();
        let report = notifier(&config(vec![uni]), dir.path(), &clock)
            .poll_once(&sink)
            .await;
        assert_eq!(report.sent(), expected, "filter {filter}");
    }
}

/// The 24 h reminders `sink` got, by item id.
fn reminded(notices: &[hearth::lms::Notice]) -> Vec<String> {
    notices
        .iter()
        .filter(|n| matches!(n.kind, NoticeKind::Reminder { .. }))
        .map(|n| n.item.id.clone())
        .collect()
}

#[tokio::test]
async fn an_extension_moves_the_due_date_and_its_reminders() {
    let fake = moodle_fake();
    // Ada has two more days for the essay: Moodle shows it in her action
    // event only; the assignment keeps its base date.
    fake.edit(
        "core_calendar_get_action_events_by_timesort",
        "\"timesort\": 1742079540",
        "\"timesort\": 1742252340",
    );
    let url = moodle_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let cfg = moodle_config(&url);
    let n = notifier(&cfg, dir.path(), &clock);
    let sink = Recorder::default();
    n.poll_once(&sink).await;
    let notices = sink.take();
    let essay = notices.iter().find(|n| n.item.id == "assign:31").unwrap();
    assert!(
        essay.text.contains("Due Mon 17 Mar 2025 23:59 CET"),
        "the extended date: {}",
        essay.text
    );

    // A day before the base date: no reminder, the essay is not due yet.
    clock.set(at("2025-03-15T00:00:00Z"));
    n.poll_once(&sink).await;
    assert!(reminded(&sink.take()).is_empty());

    // A day before the extended date: the reminder, once.
    clock.set(at("2025-03-17T00:00:00Z"));
    n.poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(reminded(&notices), ["assign:31"]);
    assert!(
        notices[0].text.contains("Due Mon 17 Mar 2025 23:59 CET"),
        "{}",
        notices[0].text
    );
    clock.advance(chrono::Duration::minutes(30));
    n.poll_once(&sink).await;
    assert!(sink.take().is_empty());
}

#[tokio::test]
async fn all_120_action_events_are_read_page_by_page() {
    let fake = moodle_fake();
    let start = at(NOW).timestamp() + 86_400;
    let events: Vec<_> = (0..120)
        .map(|i| {
            json!({
                "id": 2000 + i,
                "name": format!("Reading quiz {i} closes"),
                "component": "mod_quiz",
                "modulename": "quiz",
                "activityname": format!("Reading quiz {i}"),
                "instance": 300 + i,
                "eventtype": "close",
                "timestart": start + i * 3600,
                "timeduration": 0,
                "timesort": start + i * 3600,
                "visible": 1,
                "course": {"id": 7, "fullname": "Introduction to Computer Science", "shortname": "CS101"},
                "url": format!("https://moodle.example.edu/mod/quiz/view.php?id={}", 900 + i),
            })
        })
        .collect();
    fake.set(
        "core_calendar_get_action_events_by_timesort",
        json!({"events": events, "firstid": 2000, "lastid": 2119}).to_string(),
    );
    let url = moodle_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let cfg = moodle_config(&url);
    let sink = Recorder::default();
    let report = notifier(&cfg, dir.path(), &clock).poll_once(&sink).await;
    let quizzes = sink
        .take()
        .iter()
        .filter(|n| n.item.title.starts_with("Reading quiz"))
        .count();
    assert_eq!(quizzes, 120, "{report:?}");
    let pages = fake
        .hits()
        .iter()
        .filter(|h| *h == "core_calendar_get_action_events_by_timesort")
        .count();
    assert_eq!(pages, 3, "50 + 50 + 20");
}

#[tokio::test]
async fn a_site_without_forum_functions_still_delivers_assignments() {
    let fake = moodle_fake();
    // The site's web service lacks both forum functions: Moodle answers
    // each call with an accessexception.
    fake.remove("mod_forum_get_forums_by_courses");
    fake.remove("mod_forum_get_forum_discussions");
    let url = moodle_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let cfg = moodle_config(&url);
    let n = notifier(&cfg, dir.path(), &clock);
    let sink = Recorder::default();
    let report = n.poll_once(&sink).await;
    assert_eq!(report.source("uni").unwrap().error, None);
    assert_eq!(ids(&sink.take()), ["assign:31", "assign:32", "event:905"]);
    let status = n.store().status(&["uni"]).unwrap();
    assert!(
        status[0].notes.iter().any(|n| n.contains("mod_forum_get_forums_by_courses")
            && n.contains("accessexception")),
        "{:?}",
        status[0].notes
    );

    // Only the site-info call speaks for the token.
    fake.remove("core_webservice_get_site_info");
    clock.advance(chrono::Duration::minutes(30));
    let report = n.poll_once(&sink).await;
    let error = error_of(&report, "uni");
    assert!(
        error.contains("authentication failed") && error.contains("accessexception"),
        "{error}"
    );
}

#[tokio::test]
async fn a_submitted_assignment_gets_no_reminder() {
    let fake = moodle_fake();
    let url = moodle_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let cfg = moodle_config(&url);
    let n = notifier(&cfg, dir.path(), &clock);
    let sink = Recorder::default();
    n.poll_once(&sink).await;
    sink.take();

    // Problem set 3 is handed in: Moodle stops listing its action event.
    let events = fake.body("core_calendar_get_action_events_by_timesort");
    let mut parsed: serde_json::Value = serde_json::from_str(&events).unwrap();
    parsed["events"]
        .as_array_mut()
        .unwrap()
        .retain(|e| e["id"] != 902);
    fake.set(
        "core_calendar_get_action_events_by_timesort",
        parsed.to_string(),
    );
    clock.advance(chrono::Duration::minutes(30));
    n.poll_once(&sink).await;
    assert!(sink.take().is_empty(), "handing in is no news");

    // 23 hours before it is due: no reminder.
    clock.set(at("2025-03-19T12:00:00Z"));
    n.poll_once(&sink).await;
    assert!(reminded(&sink.take()).is_empty());
    let week = upcoming(&n, dir.path(), 7).await;
    assert!(
        week.content.contains(
            "Problem set 3 (assignment, Introduction to Computer Science) [handed in or done]"
        ),
        "{}",
        week.content
    );

    // Reverted to draft: the event is back, and so is the reminder.
    fake.set("core_calendar_get_action_events_by_timesort", events);
    clock.advance(chrono::Duration::minutes(30));
    n.poll_once(&sink).await;
    assert_eq!(reminded(&sink.take()), ["assign:32"]);
}

#[tokio::test]
async fn a_first_run_sends_one_line_for_the_past_not_a_notice_each() {
    let fake = moodle_fake();
    let url = moodle_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    // Mid-term: the essay and the quiz are past, the announcements old.
    let clock = Arc::new(ManualClock::new(at("2025-03-16T12:00:00Z")));
    let mut cfg = moodle_config(&url);
    cfg.announce_past = false;
    let n = notifier(&cfg, dir.path(), &clock);
    let sink = Recorder::default();
    let report = n.poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(
        notices.len(),
        2,
        "{:?}",
        notices.iter().map(|n| &n.text).collect::<Vec<_>>()
    );
    let line = notices
        .iter()
        .find(|n| n.kind == NoticeKind::Source)
        .unwrap();
    assert!(
        line.text.starts_with(
            "Tracking 5 items from uni. 4 already past were recorded without a notice each"
        ),
        "{}",
        line.text
    );
    let new = notices.iter().find(|n| n.kind == NoticeKind::New).unwrap();
    assert_eq!(new.item.id, "assign:32", "the one still ahead");
    assert_eq!(report.source("uni").unwrap().silenced, 4);

    clock.advance(chrono::Duration::minutes(30));
    n.poll_once(&sink).await;
    assert!(sink.take().is_empty(), "the line is sent once");
}

#[tokio::test]
async fn hearth_lms_status_shows_each_source_and_the_fix_for_its_error() {
    let fake = moodle_fake();
    fake.remove("mod_forum_get_forums_by_courses");
    let url = moodle_server(fake.clone()).await;
    let s = Sandbox::new();
    std::fs::create_dir_all(s.path("data")).unwrap();
    let config_path = s.config(&format!(
        "[lms]\ntime_zone = \"Europe/Berlin\"\n\n[[lms.sources]]\nkind = \"moodle\"\nname = \"uni\"\nurl = \"{url}\"\ntoken = \"{MOODLE_TOKEN}\"\n\n[[lms.sources]]\nkind = \"rss\"\nname = \"news\"\nurl = \"http://127.0.0.1:9/feed\"\n"
    ));
    let status = || {
        let out = s
            .hearth()
            .args(["--config", config_path.to_str().unwrap(), "lms", "status"])
            .output()
            .unwrap();
        common::assert_no_panic(&String::from_utf8_lossy(&out.stderr));
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (ok, out) = status();
    assert!(ok, "{out}");
    assert!(
        out.contains("uni (moodle,") && out.contains("not polled yet"),
        "{out}"
    );

    let mut cfg = config(vec![
        source(LmsKind::Moodle, "uni", &url, Some(MOODLE_TOKEN)),
        source(LmsKind::Rss, "news", "http://127.0.0.1:9/feed", None),
    ]);
    cfg.announce_past = false;
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let n = notifier(&cfg, &s.path("data"), &clock);
    n.poll().await;
    drop(n);

    let (ok, out) = status();
    assert!(!ok, "a failing source fails the command: {out}");
    assert!(
        out.contains("last poll Mon 10 Mar 2025 13:00 CET: ok"),
        "{out}"
    );
    assert!(out.contains("3 items tracked, 3 notices waiting"), "{out}");
    assert!(
        out.contains("note: skipped mod_forum_get_forums_by_courses"),
        "{out}"
    );
    assert!(
        out.contains("FAILED: network error") && out.contains("fix: check the source's url"),
        "{out}"
    );
    assert!(!out.contains(MOODLE_TOKEN), "the token never shows");
}
