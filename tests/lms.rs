//! The LMS notifier against fake Moodle, Canvas, iCal and RSS servers on
//! 127.0.0.1 that serve the fixtures in `tests/fixtures/lms/` over the real
//! protocols (Moodle's form-posted web services with errors in HTTP 200
//! bodies, Canvas bearer auth with `Link` pagination, plain feed GETs).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use hearth::chat::{Priority, ProviderError};
use hearth::config::{LmsConfig, LmsKind, LmsSourceConfig, Secret};
use hearth::lms::{ManualClock, Notice, NoticeKind, NoticeSink, Notifier};
use hearth::providers::ScriptedProvider;
use hearth::tools::Tool;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/lms")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn at(rfc3339: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(rfc3339)
        .unwrap()
        .with_timezone(&Utc)
}

/// The test's "now": before every fixture due date.
const NOW: &str = "2025-03-10T12:00:00Z";

/// A forced response: status, headers, body.
type Fault = (StatusCode, Vec<(&'static str, String)>, String);

/// A fake site: fixture bodies by route key, an optional forced response,
/// and a log of the requests it served.
#[derive(Default)]
struct Fake {
    bodies: Mutex<HashMap<String, String>>,
    fault: Mutex<Option<Fault>>,
    hits: Mutex<Vec<String>>,
    base: Mutex<String>,
}

impl Fake {
    fn with(bodies: &[(&str, &str)]) -> Arc<Self> {
        let fake = Self::default();
        for (key, file) in bodies {
            fake.set(key, fixture(file));
        }
        Arc::new(fake)
    }

    fn set(&self, key: &str, body: String) {
        self.bodies.lock().unwrap().insert(key.to_string(), body);
    }

    fn edit(&self, key: &str, from: &str, to: &str) {
        let mut bodies = self.bodies.lock().unwrap();
        let body = bodies.get_mut(key).unwrap();
        assert!(body.contains(from), "{key} has no `{from}`");
        *body = body.replace(from, to);
    }

    fn fail_with(&self, status: StatusCode, headers: Vec<(&'static str, String)>, body: &str) {
        *self.fault.lock().unwrap() = Some((status, headers, body.to_string()));
    }

    fn heal(&self) {
        *self.fault.lock().unwrap() = None;
    }

    fn hits(&self) -> Vec<String> {
        self.hits.lock().unwrap().clone()
    }

    /// The forced response, or the body under `key`.
    fn respond(&self, key: &str, content_type: &str, extra: Vec<(String, String)>) -> Response {
        self.hits.lock().unwrap().push(key.to_string());
        if let Some((status, headers, body)) = self.fault.lock().unwrap().clone() {
            let mut r = (status, body).into_response();
            for (k, v) in headers {
                r.headers_mut().insert(k, v.parse().unwrap());
            }
            return r;
        }
        let Some(body) = self.bodies.lock().unwrap().get(key).cloned() else {
            return (StatusCode::NOT_FOUND, format!("no fixture for {key}")).into_response();
        };
        let mut r = ([(header::CONTENT_TYPE, content_type.to_string())], body).into_response();
        for (k, v) in extra {
            r.headers_mut().insert(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        r
    }
}

async fn serve(fake: Arc<Fake>, router: Router<Arc<Fake>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    *fake.base.lock().unwrap() = base.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router.with_state(fake)).await;
    });
    base
}

const MOODLE_TOKEN: &str = "moodle-token-0123456789";
const CANVAS_TOKEN: &str = "canvas-token-0123456789";

/// Moodle's REST server: every function is a form POST; a bad token is an
/// `invalidtoken` exception in an HTTP 200 body, as Moodle does.
async fn moodle_server(fake: Arc<Fake>) -> String {
    async fn handle(
        State(f): State<Arc<Fake>>,
        Form(form): Form<HashMap<String, String>>,
    ) -> Response {
        if form.get("moodlewsrestformat").map(String::as_str) != Some("json") {
            return (StatusCode::BAD_REQUEST, "format").into_response();
        }
        if form.get("wstoken").map(String::as_str) != Some(MOODLE_TOKEN) {
            f.hits.lock().unwrap().push("invalidtoken".into());
            return (
                [(header::CONTENT_TYPE, "application/json")],
                fixture("moodle_invalidtoken.json"),
            )
                .into_response();
        }
        let function = form.get("wsfunction").cloned().unwrap_or_default();
        if function == "mod_forum_get_forum_discussions"
            && form.get("forumid").map(String::as_str) != Some("3")
        {
            return (StatusCode::BAD_REQUEST, "only the news forum is read").into_response();
        }
        f.respond(&function, "application/json", Vec::new())
    }
    let router = Router::new().route("/webservice/rest/server.php", post(handle));
    serve(fake.clone(), router).await
}

/// Canvas: bearer auth, and the planner split over two pages with a `Link`
/// header pointing at the second.
async fn canvas_server(fake: Arc<Fake>) -> String {
    fn authorised(headers: &HeaderMap) -> bool {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            == Some(&format!("Bearer {CANVAS_TOKEN}"))
    }
    fn unauthorised() -> Response {
        (
            StatusCode::UNAUTHORIZED,
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"errors":[{"message":"Invalid access token."}]}"#,
        )
            .into_response()
    }
    async fn courses(State(f): State<Arc<Fake>>, headers: HeaderMap) -> Response {
        if !authorised(&headers) {
            return unauthorised();
        }
        f.respond("courses", "application/json", Vec::new())
    }
    async fn announcements(
        State(f): State<Arc<Fake>>,
        headers: HeaderMap,
        Query(q): Query<Vec<(String, String)>>,
    ) -> Response {
        if !authorised(&headers) {
            return unauthorised();
        }
        if !q
            .iter()
            .any(|(k, v)| k == "context_codes[]" && v == "course_101")
        {
            return (StatusCode::BAD_REQUEST, "context_codes[] required").into_response();
        }
        f.respond("announcements", "application/json", Vec::new())
    }
    async fn planner(
        State(f): State<Arc<Fake>>,
        headers: HeaderMap,
        Query(q): Query<HashMap<String, String>>,
    ) -> Response {
        if !authorised(&headers) {
            return unauthorised();
        }
        let base = f.base.lock().unwrap().clone();
        let first = format!("<{base}/api/v1/planner/items?page=1&per_page=100>; rel=\"first\"");
        if q.get("page").map(String::as_str) == Some("2") {
            let link = format!(
                "<{base}/api/v1/planner/items?page=2&per_page=100>; rel=\"current\", {first}"
            );
            f.respond("planner2", "application/json", vec![("link".into(), link)])
        } else {
            let link = format!(
                "<{base}/api/v1/planner/items?page=1&per_page=100>; rel=\"current\", <{base}/api/v1/planner/items?page=2&per_page=100>; rel=\"next\", {first}"
            );
            f.respond("planner1", "application/json", vec![("link".into(), link)])
        }
    }
    let router = Router::new()
        .route("/api/v1/courses", get(courses))
        .route("/api/v1/announcements", get(announcements))
        .route("/api/v1/planner/items", get(planner));
    serve(fake.clone(), router).await
}

/// A feed at `/feed`.
async fn feed_server(fake: Arc<Fake>, content_type: &'static str) -> String {
    let router = Router::new().route(
        "/feed",
        get(move |State(f): State<Arc<Fake>>| async move {
            f.respond("feed", content_type, Vec::new())
        }),
    );
    format!("{}/feed", serve(fake.clone(), router).await)
}

fn source(kind: LmsKind, name: &str, url: &str, token: Option<&str>) -> LmsSourceConfig {
    LmsSourceConfig {
        kind,
        name: name.to_string(),
        url: url.to_string(),
        token: token.map(Secret::new),
        courses: Vec::new(),
    }
}

fn config(sources: Vec<LmsSourceConfig>) -> LmsConfig {
    LmsConfig {
        time_zone: chrono_tz::Europe::Berlin,
        sources,
        ..LmsConfig::default()
    }
}

/// Records notices; refuses those whose title contains a refused word.
#[derive(Default)]
struct Recorder {
    notices: Mutex<Vec<Notice>>,
    refuse: Mutex<HashSet<String>>,
}

impl Recorder {
    fn take(&self) -> Vec<Notice> {
        std::mem::take(&mut *self.notices.lock().unwrap())
    }

    fn refuse(&self, word: &str) {
        self.refuse.lock().unwrap().insert(word.to_string());
    }

    fn accept_all(&self) {
        self.refuse.lock().unwrap().clear();
    }
}

impl NoticeSink for Recorder {
    fn deliver<'a>(&'a self, notice: &'a Notice) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            if self
                .refuse
                .lock()
                .unwrap()
                .iter()
                .any(|w| notice.item.title.contains(w.as_str()))
            {
                return Err("telegram: 502 Bad Gateway".into());
            }
            self.notices.lock().unwrap().push(notice.clone());
            Ok(())
        })
    }
}

fn ids(notices: &[Notice]) -> Vec<String> {
    let mut ids: Vec<String> = notices.iter().map(|n| n.item.id.clone()).collect();
    ids.sort();
    ids
}

fn notifier(config: &LmsConfig, dir: &Path, clock: &Arc<ManualClock>) -> Notifier {
    Notifier::new(config, dir, None)
        .unwrap()
        .with_clock(clock.clone())
}

fn moodle_fake() -> Arc<Fake> {
    Fake::with(&[
        ("mod_assign_get_assignments", "moodle_assignments.json"),
        (
            "core_calendar_get_action_events_by_timesort",
            "moodle_events.json",
        ),
        ("mod_forum_get_forums_by_courses", "moodle_forums.json"),
        ("mod_forum_get_forum_discussions", "moodle_discussions.json"),
    ])
}

#[tokio::test]
async fn moodle_notifies_once_survives_a_restart_and_reports_a_new_due_date_once() {
    let fake = moodle_fake();
    let url = moodle_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let cfg = config(vec![source(
        LmsKind::Moodle,
        "uni",
        &url,
        Some(MOODLE_TOKEN),
    )]);
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

    // The essay moves two days later.
    fake.edit(
        "mod_assign_get_assignments",
        "\"duedate\": 1742079540",
        "\"duedate\": 1742252340",
    );
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

    let good = config(vec![source(
        LmsKind::Moodle,
        "uni",
        &url,
        Some(MOODLE_TOKEN),
    )]);
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
async fn canvas_follows_pagination_and_survives_a_401() {
    let fake = Fake::with(&[
        ("courses", "canvas_courses.json"),
        ("announcements", "canvas_announcements.json"),
        ("planner1", "canvas_planner_page1.json"),
        ("planner2", "canvas_planner_page2.json"),
    ]);
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
    let error = report.source("canvas").unwrap().error.clone().unwrap();
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
    let error = report.source("news").unwrap().error.clone().unwrap();
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

#[tokio::test]
async fn a_failed_delivery_stays_unsent_and_goes_out_next_poll() {
    let fake = Fake::with(&[("feed", "news.rss")]);
    let url = feed_server(fake.clone(), "application/rss+xml").await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let sink = Recorder::default();
    let cfg = config(vec![source(LmsKind::Rss, "news", &url, None)]);
    sink.refuse("Library");

    let report = notifier(&cfg, dir.path(), &clock).poll_once(&sink).await;
    let r = report.source("news").unwrap();
    assert_eq!((r.sent, r.failed), (1, 1));
    assert_eq!(ids(&sink.take()), ["news-2025-030"]);

    sink.accept_all();
    // After a restart, too: the refused notice is still pending.
    let report = notifier(&cfg, dir.path(), &clock).poll_once(&sink).await;
    assert_eq!((report.sent(), report.failed()), (1, 0));
    assert_eq!(ids(&sink.take()), ["news-2025-031"]);
}

#[tokio::test]
async fn a_rate_limit_and_server_errors_back_off_without_losing_anything() {
    let fake = Fake::with(&[("feed", "news.rss")]);
    let url = feed_server(fake.clone(), "application/rss+xml").await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let sink = Recorder::default();
    let cfg = config(vec![source(LmsKind::Rss, "news", &url, None)]);
    let n = notifier(&cfg, dir.path(), &clock);

    fake.fail_with(
        StatusCode::TOO_MANY_REQUESTS,
        vec![("retry-after", "7200".into())],
        "slow down",
    );
    let report = n.poll_once(&sink).await;
    let error = report.source("news").unwrap().error.clone().unwrap();
    assert!(
        error.contains("rate limited (retry after 7200 s)"),
        "{error}"
    );
    assert_eq!(fake.hits().len(), 1);

    // The next poll, 30 minutes later, leaves the site alone.
    clock.advance(chrono::Duration::minutes(30));
    let report = n.poll_once(&sink).await;
    assert!(
        report
            .source("news")
            .unwrap()
            .error
            .clone()
            .unwrap()
            .contains("backing off")
    );
    assert_eq!(fake.hits().len(), 1, "no request during the backoff");

    // Two hours on, it asks again and gets a 503.
    fake.fail_with(StatusCode::SERVICE_UNAVAILABLE, Vec::new(), "maintenance");
    clock.advance(chrono::Duration::minutes(90));
    let report = n.poll_once(&sink).await;
    assert!(
        report
            .source("news")
            .unwrap()
            .error
            .clone()
            .unwrap()
            .contains("HTTP 503")
    );
    assert_eq!(fake.hits().len(), 2);
    assert_eq!(report.sent(), 0);

    // Second failure in a row: one poll is skipped, then it recovers.
    fake.heal();
    clock.advance(chrono::Duration::minutes(30));
    n.poll_once(&sink).await;
    assert_eq!(
        fake.hits().len(),
        2,
        "one poll skipped after the second failure"
    );
    clock.advance(chrono::Duration::minutes(30));
    let report = n.poll_once(&sink).await;
    assert_eq!(report.source("news").unwrap().error, None);
    assert_eq!(report.sent(), 2, "every item arrives after the outage");
}

#[tokio::test]
async fn summaries_run_in_the_background_and_fall_back_to_the_plain_notice() {
    let fake = Fake::with(&[("feed", "news.rss")]);
    let url = feed_server(fake.clone(), "application/rss+xml").await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let sink = Recorder::default();
    let mut cfg = config(vec![source(LmsKind::Rss, "news", &url, None)]);
    cfg.summarise = true;
    let provider = Arc::new(
        ScriptedProvider::new(["Apply to be a tutor by 20 March."])
            .then_fail(ProviderError::Failed("the engine is busy".into())),
    );
    let n = Notifier::new(&cfg, dir.path(), Some(provider.clone()))
        .unwrap()
        .with_clock(clock.clone());
    n.poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(notices.len(), 2);
    // Items first seen together go out by id: 030 (summarised), then 031.
    let tutors = notices
        .iter()
        .find(|n| n.item.id == "news-2025-030")
        .unwrap();
    let library = notices
        .iter()
        .find(|n| n.item.id == "news-2025-031")
        .unwrap();
    assert!(
        tutors
            .text
            .ends_with("\n\nApply to be a tutor by 20 March."),
        "{}",
        tutors.text
    );
    assert!(
        !library.text.contains("\n\n"),
        "the failed summary falls back: {}",
        library.text
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.priority == Priority::Background));
    assert!(
        requests[0].messages[1]
            .content
            .contains("Apply by 20 March."),
        "the body reaches the model"
    );
}

#[tokio::test]
async fn lms_upcoming_answers_what_is_due_this_week() {
    let fake = moodle_fake();
    let url = moodle_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let cfg = config(vec![source(
        LmsKind::Moodle,
        "uni",
        &url,
        Some(MOODLE_TOKEN),
    )]);
    let n = notifier(&cfg, dir.path(), &clock);
    n.poll_once(&Recorder::default()).await;

    let tool = n.upcoming_tool();
    let ctx = hearth::tools::ToolContext::new(
        hearth::security::SecurityPolicy::new(
            &dir.path().join("ws"),
            hearth::security::Autonomy::ReadOnly,
            None,
        )
        .unwrap(),
        Duration::from_secs(5),
    );
    let week = tool.execute(serde_json::json!({"days": 7}), &ctx).await;
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
    let two_weeks = tool.execute(serde_json::json!({"days": 14}), &ctx).await;
    assert!(
        two_weeks.content.contains("Problem set 3"),
        "{}",
        two_weeks.content
    );
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
