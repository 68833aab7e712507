//! The LMS notifier against a fake Canvas (`support::lms_fake`): bearer
//! auth, `Link` pagination, a course whose announcements are closed to the
//! user, and planner items handed in.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::sync::Arc;

use hearth::config::LmsKind;
use hearth::lms::{ManualClock, NoticeKind};
use support::lms_fake::*;

#[tokio::test]
async fn canvas_follows_pagination_and_survives_a_401() {
    let fake = canvas_fake();
    let url = canvas_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let sink = Recorder::default();

    let bad = config(vec![source(
        LmsKind::Canvas,
        "canvas",
        &url,
        Some("revoked"),
    )]);
    let report = notifier(&bad, dir.path(), &clock).poll_once(&sink).await;
    let error = error_of(&report, "canvas");
    assert!(
        error.contains("authentication failed") && error.contains("401"),
        "{error}"
    );
    assert!(sink.take().is_empty());

    let good = config(vec![source(
        LmsKind::Canvas,
        "canvas",
        &url,
        Some(CANVAS_TOKEN),
    )]);
    let n = notifier(&good, dir.path(), &clock);
    let report = n.poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(
        ids(&notices),
        ["announcement:7001", "assignment:5001", "quiz:6001"],
        "the quiz is on page 2; the planner's announcement is not doubled"
    );
    assert_eq!(report.source("canvas").unwrap().items, 3);
    assert!(
        fake.hits().iter().any(|h| h == "planner2"),
        "page 2 was fetched"
    );
    let hw = notices
        .iter()
        .find(|n| n.item.id == "assignment:5001")
        .unwrap();
    assert_eq!(
        hw.item.url.as_deref(),
        Some(format!("{url}/courses/101/assignments/5001").as_str())
    );
    assert_eq!(hw.item.course.as_deref(), Some("Linear Algebra"));
    let news = notices
        .iter()
        .find(|n| n.item.id == "announcement:7001")
        .unwrap();
    assert_eq!(
        news.item.detail.as_deref(),
        Some("The midterm is in rooms H1 and H2; bring your student card.")
    );

    clock.advance(chrono::Duration::minutes(30));
    assert_eq!(n.poll_once(&sink).await.sent(), 0);
}

#[tokio::test]
async fn one_closed_course_loses_only_its_own_announcements() {
    let fake = canvas_fake();
    let mut courses: serde_json::Value = serde_json::from_str(&fake.body("courses")).unwrap();
    courses.as_array_mut().unwrap().push(serde_json::json!({
        "id": 102, "name": "Ethics in Computing", "course_code": "PHIL250",
        "workflow_state": "available", "enrollment_term_id": 3,
        "enrollments": [{"type": "student", "role": "StudentEnrollment", "enrollment_state": "active"}]
    }));
    fake.set("courses", courses.to_string());
    fake.closed.lock().unwrap().insert("102".into());
    let url = canvas_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let sink = Recorder::default();
    let cfg = config(vec![source(
        LmsKind::Canvas,
        "canvas",
        &url,
        Some(CANVAS_TOKEN),
    )]);
    let n = notifier(&cfg, dir.path(), &clock);
    let report = n.poll_once(&sink).await;
    assert_eq!(report.source("canvas").unwrap().error, None);
    assert_eq!(
        ids(&sink.take()),
        ["announcement:7001", "assignment:5001", "quiz:6001"],
        "the open course's announcement and every planner item arrive"
    );
    assert!(fake.hits().iter().any(|h| h == "announcements refused"));
    let status = n.store().status(&["canvas"]).unwrap();
    assert!(
        status[0]
            .notes
            .iter()
            .any(|n| n.contains("Ethics in Computing")),
        "{:?}",
        status[0].notes
    );
}

#[tokio::test]
async fn submitted_or_marked_done_work_gets_no_reminder() {
    let fake = canvas_fake();
    let url = canvas_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let sink = Recorder::default();
    let cfg = config(vec![source(
        LmsKind::Canvas,
        "canvas",
        &url,
        Some(CANVAS_TOKEN),
    )]);
    let n = notifier(&cfg, dir.path(), &clock);
    n.poll_once(&sink).await;
    sink.take();

    // The homework (due 14 March 23:59 UTC) is handed in.
    fake.edit(
        "planner1",
        "\"submissions\": {\"submitted\": false",
        "\"submissions\": {\"submitted\": true",
    );
    clock.set(at("2025-03-14T01:00:00Z"));
    n.poll_once(&sink).await;
    let reminders: Vec<String> = sink
        .take()
        .into_iter()
        .filter(|n| matches!(n.kind, NoticeKind::Reminder { .. }))
        .map(|n| n.item.id)
        .collect();
    assert!(
        !reminders.contains(&"assignment:5001".to_string()),
        "{reminders:?}"
    );

    // Positive control: not handed in after all, the reminder comes.
    fake.edit(
        "planner1",
        "\"submissions\": {\"submitted\": true",
        "\"submissions\": {\"submitted\": false",
    );
    clock.advance(chrono::Duration::minutes(30));
    n.poll_once(&sink).await;
    assert!(
        sink.take().iter().any(
            |n| n.item.id == "assignment:5001" && matches!(n.kind, NoticeKind::Reminder { .. })
        ),
    );
}
