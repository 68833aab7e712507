//! The web page: `GET /` and its two files, compiled into the binary, and
//! the JSON the page reads, behind the gateway's guard.
//!
//! Signing in (`POST /ui/login` with `{"token"}`) sets the session cookie
//! and answers the CSRF token; `GET /ui/session` gives a page that was
//! reloaded its CSRF token again (readable only by the gateway's own page:
//! no CORS header is ever sent); `POST /ui/logout` ends the session. Every
//! response carries a Content-Security-Policy that lets the page load and
//! connect to its own origin only.

pub mod desk;
pub mod session;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;

use super::http::{App, guarded, name};

/// Only this origin, for everything; pictures may also be local blobs.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");

/// The page's routes, added to the gateway's.
pub(super) fn routes(router: axum::Router<App>) -> axum::Router<App> {
    router
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            "/ui/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/ui/app.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
        .route("/ui/login", post(login))
        .route("/ui/logout", post(logout))
        .route("/ui/session", get(signed_in))
        .route("/ui/api/conversations", get(conversations))
        .route("/ui/api/conversations/{chat}", get(conversation))
        .route("/ui/api/box", get(overview))
        .route("/ui/api/jobs/{id}/{action}", post(job))
        .route("/ui/api/memory", get(memories))
        .route("/ui/api/memory/forget", post(forget))
        .route("/ui/api/brief", get(brief))
        .route("/ui/api/documents", get(documents))
        .route("/ui/api/documents/forget", post(forget_document))
        .route("/ui/api/questions", get(questions))
        .route("/ui/api/questions/{id}", post(answer_question))
}

/// `response` with the headers every page response carries.
fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let pairs = [
        (header::CONTENT_SECURITY_POLICY, POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CACHE_CONTROL, "no-store"),
    ];
    for (name, value) in pairs {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    secured(([(header::CONTENT_TYPE, kind)], body).into_response())
}

fn answer(status: StatusCode, body: serde_json::Value) -> Response {
    secured((status, axum::Json(body)).into_response())
}

fn refused(r: super::guard::Refusal) -> Response {
    answer(r.status, json!({ "error": r.message }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SignIn {
    token: String,
}

/// `POST /ui/login`: the token for a session cookie and a CSRF token.
async fn login(
    State(app): State<App>,
    method: Method,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let guard = &app.shared.guard;
    if let Err(r) = guard.check_site(&method, &headers, app.local) {
        return refused(r);
    }
    let Ok(SignIn { token }) = serde_json::from_slice(&body) else {
        return answer(
            StatusCode::BAD_REQUEST,
            json!({ "error": "send {\"token\": \"...\"}" }),
        );
    };
    if guard.needs_token() && !guard.is_token(&token) {
        // The gateway's brake answers this 401 later, more so each time.
        tracing::info!("a sign-in on the web page gave a wrong token");
        return answer(
            StatusCode::UNAUTHORIZED,
            json!({ "error": "that is not the gateway's token (`[channels.gateway] token` or HEARTH_GATEWAY_TOKEN)" }),
        );
    }
    let sessions = guard.sessions();
    let (id, csrf) = sessions.open();
    let mut response = answer(
        StatusCode::OK,
        json!({ "csrf": csrf, "expires_in_secs": sessions.lifetime().as_secs() }),
    );
    if let Ok(cookie) = HeaderValue::from_str(&session::set_cookie(&id, sessions.lifetime())) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// `POST /ui/logout`: ends the session (with its CSRF token).
async fn logout(State(app): State<App>, method: Method, headers: HeaderMap) -> Response {
    if let Err(r) = guarded(&app, &method, &headers) {
        return refused(r);
    }
    let closed = app.shared.guard.sessions().close(&headers);
    let mut response = answer(StatusCode::OK, json!({ "signed_out": closed }));
    if let Ok(cookie) = HeaderValue::from_str(&session::clear_cookie()) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// `GET /ui/session`: whether this browser is signed in, and its CSRF token.
async fn signed_in(State(app): State<App>, method: Method, headers: HeaderMap) -> Response {
    let guard = &app.shared.guard;
    if let Err(r) = guard.check_site(&method, &headers, app.local) {
        return refused(r);
    }
    if !guard.needs_token() {
        return answer(StatusCode::OK, json!({ "signed_in": true, "csrf": "" }));
    }
    match guard.sessions().signed(&headers) {
        Some(signed) => answer(
            StatusCode::OK,
            json!({ "signed_in": true, "csrf": signed.csrf, "expires_in_secs": signed.left.as_secs() }),
        ),
        None => answer(StatusCode::UNAUTHORIZED, json!({ "signed_in": false })),
    }
}

/// What `reading` answers from the desk, once the daemon attached it.
fn with_desk(app: &App, reading: impl FnOnce(&dyn desk::Desk) -> Response) -> Response {
    match app.shared.desk.get() {
        Some(desk) => reading(desk.as_ref()),
        None => starting(),
    }
}

/// The answer before the daemon attached the desk.
fn starting() -> Response {
    answer(
        StatusCode::SERVICE_UNAVAILABLE,
        json!({ "error": "hearth is still starting; try again in a moment" }),
    )
}

fn read<T: serde::Serialize>(result: Result<T, desk::DeskError>) -> Response {
    match result {
        Ok(value) => answer(StatusCode::OK, json!(value)),
        Err(e) => {
            tracing::warn!(error = %e, "the web page's desk could not answer");
            answer(
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({ "error": e.to_string() }),
            )
        }
    }
}

async fn conversations(State(app): State<App>, method: Method, headers: HeaderMap) -> Response {
    if let Err(r) = guarded(&app, &method, &headers) {
        return refused(r);
    }
    with_desk(&app, |desk| read(desk.conversations()))
}

async fn conversation(
    State(app): State<App>,
    Path(chat): Path<String>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = guarded(&app, &method, &headers) {
        return refused(r);
    }
    let chat = match name(Some(chat), "default", "chat") {
        Ok(chat) => chat,
        Err(why) => return answer(StatusCode::BAD_REQUEST, json!({ "error": why })),
    };
    with_desk(&app, |desk| read(desk.messages(&chat)))
}

async fn overview(State(app): State<App>, method: Method, headers: HeaderMap) -> Response {
    if let Err(r) = guarded(&app, &method, &headers) {
        return refused(r);
    }
    let Some(desk) = app.shared.desk.get().cloned() else {
        return starting();
    };
    // Reading the box reads /proc and may run `nvidia-smi`: off the
    // threads that serve requests.
    match tokio::task::spawn_blocking(move || desk.overview()).await {
        Ok(overview) => answer(StatusCode::OK, overview),
        Err(e) => answer(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({ "error": format!("reading the box failed: {e}") }),
        ),
    }
}

/// The answer to a change: done, nothing by that name (`missing`), or why not.
fn done(result: Result<bool, desk::DeskError>, missing: &str) -> Response {
    match result {
        Ok(true) => answer(StatusCode::OK, json!({ "ok": true })),
        Ok(false) => answer(StatusCode::NOT_FOUND, json!({ "error": missing })),
        Err(e) => answer(StatusCode::CONFLICT, json!({ "error": e.to_string() })),
    }
}

/// `POST /ui/api/jobs/{id}/{pause|resume|delete}`.
async fn job(
    State(app): State<App>,
    Path((id, action)): Path<(i64, String)>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = guarded(&app, &method, &headers) {
        return refused(r);
    }
    let Some(action) = desk::JobAction::parse(&action) else {
        return answer(
            StatusCode::NOT_FOUND,
            json!({ "error": "a job can be paused, resumed or deleted" }),
        );
    };
    with_desk(&app, |desk| {
        done(desk.job(id, action), &format!("no job #{id}"))
    })
}

#[derive(Deserialize)]
struct Search {
    #[serde(default)]
    q: String,
}

/// `GET /ui/api/memory?q=TEXT`.
async fn memories(
    State(app): State<App>,
    Query(search): Query<Search>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = guarded(&app, &method, &headers) {
        return refused(r);
    }
    with_desk(&app, |desk| read(desk.memories(&search.q)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Forget {
    scope: String,
    key: String,
}

/// `POST /ui/api/memory/forget` with `{"scope", "key"}`.
async fn forget(
    State(app): State<App>,
    method: Method,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if let Err(r) = guarded(&app, &method, &headers) {
        return refused(r);
    }
    let Ok(Forget { scope, key }) = serde_json::from_slice(&body) else {
        return answer(
            StatusCode::BAD_REQUEST,
            json!({ "error": "send {\"scope\": \"...\", \"key\": \"...\"}" }),
        );
    };
    with_desk(&app, |desk| {
        done(desk.forget(&scope, &key), "no such memory")
    })
}

/// `GET /ui/api/brief`: today's brief as it stands now.
async fn brief(State(app): State<App>, method: Method, headers: HeaderMap) -> Response {
    if let Err(r) = guarded(&app, &method, &headers) {
        return refused(r);
    }
    let Some(desk) = app.shared.desk.get().cloned() else {
        return starting();
    };
    match desk.brief().await {
        Ok(text) => answer(StatusCode::OK, json!({ "brief": text })),
        Err(e) => answer(StatusCode::CONFLICT, json!({ "error": e.to_string() })),
    }
}

/// `GET /ui/api/documents`: the documents kept.
async fn documents(State(app): State<App>, method: Method, headers: HeaderMap) -> Response {
    if let Err(r) = guarded(&app, &method, &headers) {
        return refused(r);
    }
    with_desk(&app, |desk| read(desk.documents()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForgetDocument {
    scope: String,
    id: i64,
}

/// `POST /ui/api/documents/forget` with `{"scope", "id"}`.
async fn forget_document(
    State(app): State<App>,
    method: Method,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if let Err(r) = guarded(&app, &method, &headers) {
        return refused(r);
    }
    let Ok(ForgetDocument { scope, id }) = serde_json::from_slice(&body) else {
        return answer(
            StatusCode::BAD_REQUEST,
            json!({ "error": "send {\"scope\": \"...\", \"id\": 1}" }),
        );
    };
    with_desk(&app, |desk| {
        done(desk.forget_document(&scope, id), "no such document")
    })
}

/// `GET /ui/api/questions`: the approval questions the owner may answer.
async fn questions(State(app): State<App>, method: Method, headers: HeaderMap) -> Response {
    if let Err(r) = guarded(&app, &method, &headers) {
        return refused(r);
    }
    with_desk(&app, |desk| answer(StatusCode::OK, json!(desk.questions())))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answering {
    answer: String,
}

/// `POST /ui/api/questions/{id}` with `{"answer": "once" | "always" | "deny"}`.
async fn answer_question(
    State(app): State<App>,
    Path(id): Path<String>,
    method: Method,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if let Err(r) = guarded(&app, &method, &headers) {
        return refused(r);
    }
    let Some(given) = serde_json::from_slice::<Answering>(&body)
        .ok()
        .and_then(|a| hearth_channel::Answer::parse(&a.answer))
    else {
        return answer(
            StatusCode::BAD_REQUEST,
            json!({ "error": "send {\"answer\": \"once\" | \"always\" | \"deny\"}" }),
        );
    };
    with_desk(&app, |desk| {
        if desk.answer(&id, given) {
            answer(StatusCode::OK, json!({ "ok": true }))
        } else {
            answer(
                StatusCode::NOT_FOUND,
                json!({ "error": "no such question is open for you (answered, expired, or someone else's)" }),
            )
        }
    })
}
