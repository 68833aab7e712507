//! Grades, feedback and quiz openings through the fake Moodle and Canvas
//! (`support::lms_fake`, from each site's own API shapes): each told once,
//! also across a restart; a first run with twenty old grades tells none of
//! them; the mark only where the source's `scores` is on.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::sync::Arc;

use hearth::lms::{Clock, ItemKind, ManualClock, Notice, NoticeKind};
use support::lms_fake::*;

/// The notices of `kind` among `notices`.
fn of_kind(notices: &[Notice], kind: ItemKind) -> Vec<&Notice> {
    notices.iter().filter(|n| n.item.kind == kind).collect()
}

#[tokio::test]
async fn moodle_grades_feedback_and_an_opening_quiz_are_each_told_once() {
    let fake = moodle_with_grades();
    let url = moodle_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let mut cfg = moodle_config(&url);
    cfg.announce_past = false;
    let sink = Recorder::default();

    // The first run: twenty old grades and a closed quiz, none told.
    let first = notifier(&cfg, dir.path(), &clock).poll_once(&sink).await;
    let notices = sink.take();
    assert!(
        of_kind(&notices, ItemKind::Grade).is_empty(),
        "{notices:#?}"
    );
    assert!(of_kind(&notices, ItemKind::QuizOpen).is_empty());
    let r = first.source("uni").unwrap();
    assert_eq!(r.error, None);
    assert_eq!(
        r.silenced, 22,
        "the twenty old grades and last week's two announcements, recorded as told"
    );
    let line = notices
        .iter()
        .find(|n| n.kind == NoticeKind::Source)
        .unwrap();
    assert!(line.text.contains("22 already past"), "{}", line.text);
    assert!(
        !fake
            .hits()
            .iter()
            .any(|h| h.starts_with("refused gradereport")),
        "{:?}",
        fake.hits()
    );

    // The essay is graded an hour later.
    clock.advance(chrono::Duration::hours(1));
    release_essay_grade(&fake, clock.now().timestamp() - 60);
    notifier(&cfg, dir.path(), &clock).poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(ids(&notices), ["grade:7:120"], "{notices:#?}");
    assert_eq!(
        notices[0].text,
        format!(
            "Graded · Introduction to Computer Science\nEssay 1: Algorithms in everyday life\nFeedback: Clear structure; cite your sources.\n{url}/mod/assign/view.php?id=112"
        )
    );
    // The address's port may hold the digits: the score is looked for
    // in the rest.
    assert!(
        !notices[0].text.replace(&url, "").contains("85"),
        "no score without `scores`"
    );

    // A restart between polls tells nothing again.
    clock.advance(chrono::Duration::minutes(30));
    let restarted = notifier(&cfg, dir.path(), &clock);
    assert_eq!(restarted.poll_once(&sink).await.sent(), 0);

    // Feedback posted on an old grade: one change.
    let body = fake.body("gradereport_user_get_grade_items:7");
    let mut report: serde_json::Value = serde_json::from_str(&body).unwrap();
    report["usergrades"][0]["gradeitems"][1]["feedback"] = "See me about question 3.".into();
    fake.set("gradereport_user_get_grade_items:7", report.to_string());
    clock.advance(chrono::Duration::minutes(30));
    restarted.poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(ids(&notices), ["grade:7:101"]);
    assert_eq!(notices[0].kind, NoticeKind::Changed);
    assert!(
        notices[0].text.starts_with("Grade updated · ")
            && notices[0]
                .text
                .contains("Feedback: See me about question 3."),
        "{}",
        notices[0].text
    );

    // The quiz opens a day after NOW; its close is the user's override
    // from the action event (17:00 UTC), not the quiz's own (16:00).
    clock.advance(chrono::Duration::hours(23));
    restarted.poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(ids(&notices), ["quizopen:12"], "{notices:#?}");
    assert_eq!(
        notices[0].text,
        format!(
            "Quiz open · Introduction to Computer Science\nQuiz 2: Sorting\nCloses Wed 12 Mar 2025 18:00 CET\n{url}/mod/quiz/view.php?id=130"
        )
    );
    drop(restarted);
    clock.advance(chrono::Duration::minutes(30));
    let again = notifier(&cfg, dir.path(), &clock).poll_once(&sink).await;
    assert_eq!(again.sent(), 0, "told once, across a restart too");
    assert!(
        sink.take()
            .iter()
            .all(|n| !matches!(n.item.kind, ItemKind::Grade | ItemKind::QuizOpen))
    );
}

#[tokio::test]
async fn a_site_refusing_grades_still_delivers_the_rest_and_says_why() {
    // Hostile: the grade report refused (the service lacks it); control:
    // the assignments still arrive.
    let fake = moodle_fake();
    let url = moodle_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let cfg = moodle_config(&url);
    let sink = Recorder::default();
    let n = notifier(&cfg, dir.path(), &clock);
    let report = n.poll_once(&sink).await;
    assert_eq!(report.source("uni").unwrap().error, None);
    assert!(ids(&sink.take()).contains(&"assign:31".to_string()));
    assert!(
        fake.hits()
            .iter()
            .any(|h| h == "refused gradereport_user_get_grade_items:7")
    );
}

fn canvas_with_grades() -> Arc<Fake> {
    let fake = canvas_fake();
    fake.set(
        "courses/101/students/submissions",
        fixture("canvas_submissions.json"),
    );
    fake.set("courses/101/quizzes", fixture("canvas_quizzes.json"));
    fake
}

#[tokio::test]
async fn canvas_grades_comments_and_an_unlocking_quiz_are_each_told_once() {
    let fake = canvas_with_grades();
    let url = canvas_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let mut source = source(
        hearth::config::LmsKind::Canvas,
        "canvas",
        &url,
        Some(CANVAS_TOKEN),
    );
    source.scores = true;
    let mut cfg = config(vec![source]);
    cfg.announce_past = false;
    let sink = Recorder::default();

    let first = notifier(&cfg, dir.path(), &clock).poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(first.source("canvas").unwrap().error, None);
    assert!(
        of_kind(&notices, ItemKind::Grade).is_empty(),
        "{notices:#?}"
    );
    assert!(of_kind(&notices, ItemKind::QuizOpen).is_empty());
    assert!(first.source("canvas").unwrap().silenced >= 20);

    // Homework 6 graded with a comment; the midterm's grade posted.
    let body = fake.body("courses/101/students/submissions");
    let mut subs: serde_json::Value = serde_json::from_str(&body).unwrap();
    for s in subs.as_array_mut().unwrap() {
        match s["assignment_id"].as_i64() {
            Some(5001) => {
                s["workflow_state"] = "graded".into();
                s["graded_at"] = "2025-03-10T12:30:00Z".into();
                s["posted_at"] = "2025-03-10T12:30:00Z".into();
                s["score"] = 18.5.into();
                s["grade"] = "18.5".into();
                s["submission_comments"] = serde_json::json!([
                    {"id": 1, "author_id": 3, "author_name": "Dr. Noether", "comment": "Nice proof in 2b.", "created_at": "2025-03-10T12:30:00Z"}
                ]);
            }
            Some(5002) => s["posted_at"] = "2025-03-10T12:40:00Z".into(),
            _ => {}
        }
    }
    fake.set("courses/101/students/submissions", subs.to_string());
    clock.advance(chrono::Duration::hours(1));
    let restarted = notifier(&cfg, dir.path(), &clock);
    restarted.poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(
        ids(&notices),
        ["grade:101:5001", "grade:101:5002"],
        "{notices:#?}"
    );
    let ps4 = &notices[0].text;
    assert!(
        ps4.starts_with("Graded · Linear Algebra\nHomework 6: Eigenvalues\nGrade: 18.5 / 20\nFeedback: Dr. Noether: Nice proof in 2b.\n"),
        "{ps4}"
    );

    // Feedback posted later on an old grade (Homework 3): one change.
    let body = fake.body("courses/101/students/submissions");
    let mut subs: serde_json::Value = serde_json::from_str(&body).unwrap();
    subs[2]["submission_comments"] = serde_json::json!([
        {"id": 2, "author_id": 3, "author_name": "Dr. Noether", "comment": "See the model answer for 4c.", "created_at": "2025-03-10T13:50:00Z"}
    ]);
    fake.set("courses/101/students/submissions", subs.to_string());
    clock.advance(chrono::Duration::minutes(30));
    restarted.poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(ids(&notices), ["grade:101:4002"], "{notices:#?}");
    assert!(
        notices[0]
            .text
            .starts_with("Grade updated · Linear Algebra\nHomework 3\n")
            && notices[0]
                .text
                .contains("Feedback: Dr. Noether: See the model answer for 4c."),
        "{}",
        notices[0].text
    );
    clock.advance(chrono::Duration::minutes(30));
    assert_eq!(restarted.poll_once(&sink).await.sent(), 0, "told once");

    // Tuesday 08:00 UTC the quiz unlocks: told once, across a restart.
    drop(restarted);
    clock.set(at("2025-03-11T08:30:00Z"));
    notifier(&cfg, dir.path(), &clock).poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(ids(&notices), ["quizopen:77"], "{notices:#?}");
    assert!(
        notices[0]
            .text
            .contains("Quiz 3: Eigenvalues\nCloses Thu 13 Mar 2025 23:00 CET"),
        "{}",
        notices[0].text
    );
    clock.advance(chrono::Duration::minutes(30));
    assert_eq!(
        notifier(&cfg, dir.path(), &clock)
            .poll_once(&sink)
            .await
            .sent(),
        0
    );
}

#[tokio::test]
async fn a_canvas_course_refusing_grades_loses_only_its_grades() {
    // Hostile: the submissions refused (401, as Canvas refuses a student a
    // hidden page); control: the planner's assignments still arrive.
    let fake = canvas_fake();
    let url = canvas_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let cfg = config(vec![source(
        hearth::config::LmsKind::Canvas,
        "canvas",
        &url,
        Some(CANVAS_TOKEN),
    )]);
    let sink = Recorder::default();
    let n = notifier(&cfg, dir.path(), &clock);
    let report = n.poll_once(&sink).await;
    assert_eq!(report.source("canvas").unwrap().error, None);
    assert!(ids(&sink.take()).contains(&"assignment:5001".to_string()));
    assert!(
        fake.hits()
            .iter()
            .any(|h| h == "refused courses/101/students/submissions")
    );
}
