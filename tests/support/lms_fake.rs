//! Fake course sites for the LMS tests, on 127.0.0.1, speaking the real
//! protocols from the fixtures in `tests/fixtures/lms/`: Moodle's
//! form-posted web services (errors in HTTP 200 bodies, `accessexception`
//! for a function the service lacks, action events paged as Moodle pages
//! them), Canvas (bearer auth, `Link` pagination, 401 for a course the user
//! may not read), and plain feed GETs. Also the notice recorder and the
//! config the tests share.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Form, Path as UrlPath, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use hearth::config::{LmsConfig, LmsKind, LmsSourceConfig, Secret};
use hearth::lms::{ManualClock, Notice, NoticeError, NoticeSink, Notifier, PollReport};

pub fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/lms")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn at(rfc3339: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(rfc3339)
        .unwrap()
        .with_timezone(&Utc)
}

/// The test's "now": before every fixture due date.
pub const NOW: &str = "2025-03-10T12:00:00Z";

/// A forced response: status, headers, body.
pub type Fault = (StatusCode, Vec<(&'static str, String)>, String);

/// A fake site: fixture bodies by route key, an optional forced response,
/// and a log of the requests it served.
#[derive(Default)]
pub struct Fake {
    pub bodies: Mutex<HashMap<String, String>>,
    pub fault: Mutex<Option<Fault>>,
    pub hits: Mutex<Vec<String>>,
    pub base: Mutex<String>,
    /// Canvas course ids whose announcements the user may not read.
    pub closed: Mutex<HashSet<String>>,
    /// Files served by path (Moodle's pluginfile, Canvas's downloads).
    pub blobs: Mutex<HashMap<String, Vec<u8>>>,
}

impl Fake {
    pub fn with(bodies: &[(&str, &str)]) -> Arc<Self> {
        let fake = Self::default();
        for (key, file) in bodies {
            fake.set(key, fixture(file));
        }
        Arc::new(fake)
    }

    pub fn set(&self, key: &str, body: String) {
        self.bodies.lock().unwrap().insert(key.to_string(), body);
    }

    pub fn edit(&self, key: &str, from: &str, to: &str) {
        let mut bodies = self.bodies.lock().unwrap();
        let body = bodies.get_mut(key).unwrap();
        assert!(body.contains(from), "{key} has no `{from}`");
        *body = body.replace(from, to);
    }

    pub fn fail_with(&self, status: StatusCode, headers: Vec<(&'static str, String)>, body: &str) {
        *self.fault.lock().unwrap() = Some((status, headers, body.to_string()));
    }

    pub fn heal(&self) {
        *self.fault.lock().unwrap() = None;
    }

    /// Serves `bytes` at `path`.
    pub fn blob(&self, path: &str, bytes: Vec<u8>) {
        self.blobs.lock().unwrap().insert(path.to_string(), bytes);
    }

    /// How often `path` was downloaded.
    pub fn downloads(&self, path: &str) -> usize {
        let hit = format!("download {path}");
        self.hits().iter().filter(|h| **h == hit).count()
    }

    /// A file, logged as `download <path>`.
    pub fn download(&self, path: &str) -> Response {
        self.hits.lock().unwrap().push(format!("download {path}"));
        match self.blobs.lock().unwrap().get(path) {
            Some(bytes) => (
                [(header::CONTENT_TYPE, "application/octet-stream")],
                bytes.clone(),
            )
                .into_response(),
            None => (StatusCode::NOT_FOUND, "no such file").into_response(),
        }
    }

    pub fn hits(&self) -> Vec<String> {
        self.hits.lock().unwrap().clone()
    }

    pub fn remove(&self, key: &str) {
        self.bodies.lock().unwrap().remove(key);
    }

    pub fn body(&self, key: &str) -> String {
        self.bodies.lock().unwrap()[key].clone()
    }

    /// The forced response, or the body under `key`.
    pub fn respond(&self, key: &str, content_type: &str, extra: Vec<(String, String)>) -> Response {
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

pub async fn serve(fake: Arc<Fake>, router: Router<Arc<Fake>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    *fake.base.lock().unwrap() = base.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router.with_state(fake)).await;
    });
    base
}

pub const MOODLE_TOKEN: &str = "moodle-token-0123456789";
pub const CANVAS_TOKEN: &str = "canvas-token-0123456789";

/// Moodle's REST server: every function is a form POST; a bad token is an
/// `invalidtoken` exception in an HTTP 200 body, and a function the web
/// service does not offer an `accessexception`, as Moodle does. Action
/// events are served the way `core_calendar_get_action_events_by_timesort`
/// pages them: sorted by time, at most `limitnum` (1 to 50) after
/// `aftereventid`.
pub async fn moodle_server(fake: Arc<Fake>) -> String {
    async fn handle(
        State(f): State<Arc<Fake>>,
        Form(form): Form<HashMap<String, String>>,
    ) -> Response {
        if form.get("moodlewsrestformat").map(String::as_str) != Some("json") {
            return (StatusCode::BAD_REQUEST, "format").into_response();
        }
        if form.get("wstoken").map(String::as_str) != Some(MOODLE_TOKEN) {
            f.hits.lock().unwrap().push("invalidtoken".into());
            return json_response(fixture("moodle_invalidtoken.json"));
        }
        let function = form.get("wsfunction").cloned().unwrap_or_default();
        let function = match function.as_str() {
            // Each course's contents and grades under its own key.
            "core_course_get_contents" | "gradereport_user_get_grade_items" => {
                let course = form.get("courseid").cloned().unwrap_or_default();
                format!("{function}:{course}")
            }
            _ => function,
        };
        if !f.bodies.lock().unwrap().contains_key(&function) && f.fault.lock().unwrap().is_none() {
            f.hits.lock().unwrap().push(format!("refused {function}"));
            return json_response(serde_json::json!({
                "exception": "webservice_access_exception",
                "errorcode": "accessexception",
                "message": format!("Access control exception (Access to the function {function}() is not allowed. There could be multiple reasons for this: 1. The service linked to the user token does not contain the function. 2. The service is user-restricted and the user is not listed. 3. The service is IP-restricted and the user IP is not listed. 4. The service is time-restricted and the time has expired. 5. The token is time-restricted and the time has expired. 6. The user needs to be assigned the capability to use the function. 7. The function is called with username/password (no user token is sent in the request) and the username/password does not correspond to a user.)"),
            }).to_string());
        }
        if function == "mod_forum_get_forum_discussions"
            && form.get("forumid").map(String::as_str) != Some("3")
        {
            return (StatusCode::BAD_REQUEST, "only the news forum is read").into_response();
        }
        if function.starts_with("gradereport_user_get_grade_items")
            && form.get("userid").map(String::as_str) != Some("2")
        {
            // A student asking for another user's grades, as Moodle refuses it.
            return json_response(serde_json::json!({
                "exception": "required_capability_exception",
                "errorcode": "nopermissions",
                "message": "Sorry, but you do not currently have permissions to do that (View all user grades).",
            }).to_string());
        }
        if function == "core_calendar_get_action_events_by_timesort"
            && f.fault.lock().unwrap().is_none()
        {
            f.hits.lock().unwrap().push(function.clone());
            return action_events_page(&f, &form);
        }
        f.respond(&function, "application/json", Vec::new())
    }
    /// `webservice/pluginfile.php`: a file for the token in its query.
    async fn file(
        State(f): State<Arc<Fake>>,
        UrlPath(path): UrlPath<String>,
        Query(q): Query<HashMap<String, String>>,
    ) -> Response {
        if q.get("token").map(String::as_str) != Some(MOODLE_TOKEN) {
            f.hits.lock().unwrap().push(format!("refused file {path}"));
            return json_response(
                r#"{"error":"Invalid token - token not found","errorcode":"invalidtoken"}"#.into(),
            );
        }
        f.download(&path)
    }
    let router = Router::new()
        .route("/webservice/rest/server.php", post(handle))
        .route("/webservice/pluginfile.php/{*path}", get(file));
    serve(fake.clone(), router).await
}

fn json_response(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// One page of the action events fixture, as Moodle's paging gives it.
fn action_events_page(f: &Fake, form: &HashMap<String, String>) -> Response {
    let limit: usize = form
        .get("limitnum")
        .and_then(|l| l.parse().ok())
        .unwrap_or(20);
    if !(1..=50).contains(&limit) {
        return json_response(serde_json::json!({
            "exception": "invalid_parameter_exception",
            "errorcode": "invalidparameter",
            "message": "Invalid parameter value detected (Limit must be between 1 and 50 (inclusive))",
        }).to_string());
    }
    let body = f.bodies.lock().unwrap()["core_calendar_get_action_events_by_timesort"].clone();
    let all: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut events = all["events"].as_array().cloned().unwrap_or_default();
    let from: i64 = form
        .get("timesortfrom")
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    events.retain(|e| e["timesort"].as_i64().unwrap_or(0) >= from);
    events.sort_by_key(|e| (e["timesort"].as_i64(), e["id"].as_i64()));
    if let Some(after) = form.get("aftereventid").and_then(|a| a.parse::<i64>().ok()) {
        match events.iter().position(|e| e["id"].as_i64() == Some(after)) {
            Some(at) => {
                events.drain(..=at);
            }
            None => events.clear(),
        }
    }
    events.truncate(limit);
    let page = serde_json::json!({
        "events": events,
        "firstid": events.first().map(|e| e["id"].clone()),
        "lastid": events.last().map(|e| e["id"].clone()),
    });
    json_response(page.to_string())
}

/// Canvas: bearer auth, and the planner split over two pages with a `Link`
/// header pointing at the second.
pub async fn canvas_server(fake: Arc<Fake>) -> String {
    pub fn authorised(headers: &HeaderMap) -> bool {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            == Some(&format!("Bearer {CANVAS_TOKEN}"))
    }
    pub fn unauthorised() -> Response {
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
        let closed = f.closed.lock().unwrap().clone();
        if q.iter().any(|(k, v)| {
            k == "context_codes[]"
                && v.strip_prefix("course_")
                    .is_some_and(|id| closed.contains(id))
        }) {
            f.hits.lock().unwrap().push("announcements refused".into());
            return (
                StatusCode::UNAUTHORIZED,
                [(header::CONTENT_TYPE, "application/json")],
                r#"{"status":"unauthorized","errors":[{"message":"user not authorized to perform that action"}]}"#,
            )
                .into_response();
        }
        if !q.iter().any(|(k, _)| k == "context_codes[]") {
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
    /// A course's files, modules and one file's details, each keyed by
    /// path; a course without a files body is refused as Canvas refuses a
    /// hidden Files page.
    async fn course_part(
        State(f): State<Arc<Fake>>,
        headers: HeaderMap,
        UrlPath((course, rest)): UrlPath<(String, String)>,
    ) -> Response {
        if !authorised(&headers) {
            return unauthorised();
        }
        let key = format!("courses/{course}/{rest}");
        if !f.bodies.lock().unwrap().contains_key(&key) {
            f.hits.lock().unwrap().push(format!("refused {key}"));
            return (
                StatusCode::UNAUTHORIZED,
                [(header::CONTENT_TYPE, "application/json")],
                r#"{"status":"unauthorized","errors":[{"message":"user not authorized to perform that action"}]}"#,
            )
                .into_response();
        }
        f.respond(&key, "application/json", Vec::new())
    }
    /// `/files/:id/download?verifier=…`: the verifier is the credential.
    async fn file(
        State(f): State<Arc<Fake>>,
        UrlPath(id): UrlPath<String>,
        Query(q): Query<HashMap<String, String>>,
    ) -> Response {
        if q.get("verifier").map(String::as_str) != Some(&format!("v{id}")) {
            return (StatusCode::UNAUTHORIZED, "bad verifier").into_response();
        }
        f.download(&id)
    }
    let router = Router::new()
        .route("/api/v1/courses/{course}/{*rest}", get(course_part))
        .route("/files/{id}/download", get(file))
        .route("/api/v1/courses", get(courses))
        .route("/api/v1/announcements", get(announcements))
        .route("/api/v1/planner/items", get(planner));
    serve(fake.clone(), router).await
}

/// A feed at `/feed`.
pub async fn feed_server(fake: Arc<Fake>, content_type: &'static str) -> String {
    let router = Router::new().route(
        "/feed",
        get(move |State(f): State<Arc<Fake>>| async move {
            f.respond("feed", content_type, Vec::new())
        }),
    );
    format!("{}/feed", serve(fake.clone(), router).await)
}

pub fn source(kind: LmsKind, name: &str, url: &str, token: Option<&str>) -> LmsSourceConfig {
    LmsSourceConfig {
        kind,
        name: name.to_string(),
        url: url.to_string(),
        token: token.map(Secret::new),
        courses: Vec::new(),
        // As the config has it: a site's files, a feed's links only when asked.
        files: matches!(kind, LmsKind::Moodle | LmsKind::Canvas),
        files_mb: 100,
        files_poll: std::time::Duration::from_secs(6 * 3600),
        scores: false,
    }
}

pub fn config(sources: Vec<LmsSourceConfig>) -> LmsConfig {
    LmsConfig {
        time_zone: chrono_tz::Europe::Berlin,
        sources,
        // These tests count every item's notice; the first-run summary has
        // its own test.
        announce_past: true,
        ..LmsConfig::default()
    }
}

/// Records notices; refuses those whose title contains a refused word.
#[derive(Default)]
pub struct Recorder {
    pub notices: Mutex<Vec<Notice>>,
    pub refuse: Mutex<HashSet<String>>,
}

impl Recorder {
    pub fn take(&self) -> Vec<Notice> {
        std::mem::take(&mut *self.notices.lock().unwrap())
    }

    pub fn refuse(&self, word: &str) {
        self.refuse.lock().unwrap().insert(word.to_string());
    }

    pub fn accept_all(&self) {
        self.refuse.lock().unwrap().clear();
    }
}

impl NoticeSink for Recorder {
    fn deliver<'a>(&'a self, notice: &'a Notice) -> BoxFuture<'a, Result<(), NoticeError>> {
        Box::pin(async move {
            if self
                .refuse
                .lock()
                .unwrap()
                .iter()
                .any(|w| notice.item.title.contains(w.as_str()))
            {
                return Err(NoticeError::Refused("telegram: 502 Bad Gateway".into()));
            }
            self.notices.lock().unwrap().push(notice.clone());
            Ok(())
        })
    }
}

pub fn ids(notices: &[Notice]) -> Vec<String> {
    let mut ids: Vec<String> = notices.iter().map(|n| n.item.id.clone()).collect();
    ids.sort();
    ids
}

/// Why the poll of `source` failed; a poll that did not fail fails the test.
pub fn error_of(report: &PollReport, source: &str) -> String {
    report
        .source(source)
        .and_then(|s| s.error.clone())
        .unwrap_or_else(|| panic!("{source} did not fail: {report:?}"))
}

/// The one Moodle source most tests poll: `uni` at `url`, with the
/// fake's token.
pub fn moodle_config(url: &str) -> LmsConfig {
    config(vec![source(
        LmsKind::Moodle,
        "uni",
        url,
        Some(MOODLE_TOKEN),
    )])
}

pub fn notifier(config: &LmsConfig, dir: &Path, clock: &Arc<ManualClock>) -> Notifier {
    Notifier::new(config, dir, None)
        .unwrap()
        .with_clock(clock.clone())
}

/// The Canvas site most tests poll: one course, its announcements, the
/// planner over two pages.
pub fn canvas_fake() -> Arc<Fake> {
    Fake::with(&[
        ("courses", "canvas_courses.json"),
        ("announcements", "canvas_announcements.json"),
        ("planner1", "canvas_planner_page1.json"),
        ("planner2", "canvas_planner_page2.json"),
    ])
}

/// The fake Moodle's essay (assignment 31) due two days later: its base
/// date and its calendar event.
pub fn move_the_essay_two_days(fake: &Fake) {
    fake.edit(
        "mod_assign_get_assignments",
        "\"duedate\": 1742079540",
        "\"duedate\": 1742252340",
    );
    fake.edit(
        "core_calendar_get_action_events_by_timesort",
        "\"timesort\": 1742079540",
        "\"timesort\": 1742252340",
    );
}

/// The fake Moodle with the course's grade report (twenty old grades, the
/// essay not graded yet) and its quizzes.
pub fn moodle_with_grades() -> Arc<Fake> {
    let fake = moodle_fake();
    fake.set(
        "gradereport_user_get_grade_items:7",
        fixture("moodle_grades.json"),
    );
    fake.set(
        "mod_quiz_get_quizzes_by_courses",
        fixture("moodle_quizzes.json"),
    );
    fake
}

/// The essay's grade item released: graded now, with feedback.
pub fn release_essay_grade(fake: &Fake, graded: i64) {
    let body = fake.body("gradereport_user_get_grade_items:7");
    let mut report: serde_json::Value = serde_json::from_str(&body).unwrap();
    let items = report["usergrades"][0]["gradeitems"]
        .as_array_mut()
        .unwrap();
    let essay = items.iter_mut().find(|g| g["id"] == 120).unwrap();
    essay["graderaw"] = 85.0.into();
    essay["gradeformatted"] = "85.00".into();
    essay["gradedategraded"] = graded.into();
    essay["feedback"] = "<p>Clear structure; cite your sources.</p>".into();
    fake.set("gradereport_user_get_grade_items:7", report.to_string());
}

pub fn moodle_fake() -> Arc<Fake> {
    Fake::with(&[
        ("core_webservice_get_site_info", "moodle_site_info.json"),
        ("mod_assign_get_assignments", "moodle_assignments.json"),
        (
            "core_calendar_get_action_events_by_timesort",
            "moodle_events.json",
        ),
        ("mod_forum_get_forums_by_courses", "moodle_forums.json"),
        ("mod_forum_get_forum_discussions", "moodle_discussions.json"),
    ])
}

/// What the `lms_upcoming` tool of `n` answers for the next `days`.
pub async fn upcoming(n: &Notifier, dir: &Path, days: u32) -> hearth::tools::ToolResult {
    use hearth::tools::Tool;
    n.upcoming_tool()
        .execute(serde_json::json!({ "days": days }), &read_only(dir))
        .await
}

/// What the `lms_recent` tool of `n` answers for the last `days`.
pub async fn recent(n: &Notifier, dir: &Path, days: u32) -> hearth::tools::ToolResult {
    use hearth::tools::Tool;
    n.recent_tool()
        .execute(serde_json::json!({ "days": days }), &read_only(dir))
        .await
}

fn read_only(dir: &Path) -> hearth::tools::ToolContext {
    hearth::tools::ToolContext::new(
        hearth::security::SecurityPolicy::new(
            &dir.join("ws"),
            hearth::security::Autonomy::ReadOnly,
            None,
        )
        .unwrap(),
        std::time::Duration::from_secs(5),
    )
}
