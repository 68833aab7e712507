//! The gateway's HTTP side: routes, the token check, and one request's wait
//! for its reply or an approval question, and the follow-up request that
//! answers the question.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::brake::{self, Brake};
use super::connections::{self, ConnectionHandle};
use super::guard::Refusal;
use super::{Event, Parked, Shared, settled};
use hearth_channel::approval::{Answer, Delivered};
use hearth_channel::{Accepted, ChannelError, Intake};
use hearth_metrics::Metrics;

/// The largest request body.
const BODY_LIMIT: usize = 64 * 1024;
/// The largest body of an OpenAI-compatible request: clients resend the
/// whole conversation, with tools, every turn.
pub(super) const API_BODY_LIMIT: usize = 4 * 1024 * 1024;
/// The longest chat name.
const NAME_LIMIT: usize = 64;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageRequest {
    text: String,
    #[serde(default)]
    chat: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApprovalAnswer {
    id: String,
    answer: String,
    #[serde(default)]
    chat: Option<String>,
}

#[derive(Clone)]
pub(super) struct App {
    pub shared: Arc<Shared>,
    pub bus: Intake,
    pub local: SocketAddr,
    /// When the gateway started listening (Unix seconds).
    pub started: i64,
    pub metrics: Option<Arc<Metrics>>,
    /// The local model served as itself, when the daemon offers it.
    pub served: Option<Arc<dyn super::ServedModel>>,
}

/// Listens on `addr` until the bus closes (the daemon stops).
/// `bound`: the socket taken at start, if any.
pub(super) async fn serve(
    addr: SocketAddr,
    bound: Option<std::net::TcpListener>,
    shared: Arc<Shared>,
    bus: Intake,
    metrics: Option<Arc<Metrics>>,
    served: Option<Arc<dyn super::ServedModel>>,
) -> Result<(), ChannelError> {
    let listener = match bound {
        Some(bound) => tokio::net::TcpListener::from_std(bound),
        None => tokio::net::TcpListener::bind(addr).await,
    }
    .map_err(|e| ChannelError::Other(format!("cannot listen on {addr}: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| ChannelError::Other(format!("cannot listen on {addr}: {e}")))?;
    shared.bound.send_replace(Some(local));
    tracing::info!(%local, "gateway listening");
    let stop = CancellationToken::new();
    let closed = bus.clone();
    let stopping = stop.clone();
    tokio::spawn(async move {
        closed.closed().await;
        stopping.cancel();
    });
    let (max, timeout) = (shared.max_connections, shared.request_timeout);
    let app = axum::Router::new()
        .route("/v1/message", post(message))
        // The path the reference system's clients use; the same endpoint.
        .route("/api/chat", post(message))
        .route("/v1/approval", post(approval))
        .route("/health", get(health))
        .route("/ws/chat", get(super::ws::chat))
        .route("/v1/chat/completions", post(super::openai::completions))
        .route("/v1/responses", post(super::openai::responses))
        .route("/v1/embeddings", post(super::openai::embeddings))
        .route("/v1/models", get(super::openai::models))
        .route("/v1/models/{id}", get(super::openai::model))
        .route("/v1/{*rest}", axum::routing::any(super::openai::not_found))
        .route("/metrics", get(metrics_text))
        .route("/cal/{file}", get(super::calendar::feed));
    let app = super::page::routes(app).with_state(App {
        shared,
        bus,
        local,
        started: chrono::Utc::now().timestamp(),
        metrics,
        served,
    });
    // Wrong tokens are slowed and then refused per client address.
    let app = app.layer(axum::middleware::from_fn_with_state(
        Arc::new(Brake::default()),
        brake::layer,
    ));
    connections::serve(listener, app, max, timeout, stop).await;
    Ok(())
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({ "error": message.into() }))).into_response()
}

fn refusal(r: Refusal) -> Response {
    error(r.status, r.message)
}

/// `Ok` when the request may pass the guard; else why not (logged).
pub(super) fn guarded(app: &App, method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
    app.shared
        .guard
        .check(method, headers, app.local)
        .inspect_err(|r| {
            tracing::info!(status = %r.status, why = r.message, "a gateway request was refused");
        })
}

/// `None` when the request may pass; else the answer refusing it.
fn refused(app: &App, method: &Method, headers: &HeaderMap) -> Option<Response> {
    guarded(app, method, headers).err().map(refusal)
}

/// Answered without the token, for monitors and container health checks:
/// it says nothing but that the gateway answers.
async fn health() -> Response {
    axum::Json(json!({ "status": "ok" })).into_response()
}

async fn metrics_text(State(app): State<App>, method: Method, headers: HeaderMap) -> Response {
    if let Some(refusal) = refused(&app, &method, &headers) {
        return refusal;
    }
    match &app.metrics {
        Some(metrics) => {
            let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
            let (kind, text) = metrics.render_for(accept);
            ([(header::CONTENT_TYPE, kind)], text).into_response()
        }
        None => error(StatusCode::NOT_FOUND, "this gateway keeps no metrics"),
    }
}

/// A chat name: what was given, trimmed, or `default`; or why it cannot be one.
pub(super) fn name(given: Option<String>, default: &str, key: &str) -> Result<String, String> {
    let name = given
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| default.to_string());
    let fine = name.chars().count() <= NAME_LIMIT
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'));
    if fine {
        Ok(name)
    } else {
        Err(format!(
            "`{key}` must be 1 to {NAME_LIMIT} letters, digits, '-', '_', '.' or '@'"
        ))
    }
}

/// Removes a message's waiter however its request's handler ends (a
/// client that hangs up included), unless the message waits for an
/// answer to a question.
pub(super) struct Pending {
    pub shared: Arc<Shared>,
    pub id: String,
    pub parked: bool,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.parked {
            self.shared.forget(&self.id);
        }
    }
}

/// What the client of message `id` in `chat` gets: the reply, or a
/// question (the message then waits for `POST /v1/approval`).
/// `on_page`: the last question was answered on the web page, as this
/// answer, which the body then says.
async fn outcome(
    app: &App,
    (chat, id): (String, String),
    mut events: tokio::sync::mpsc::UnboundedReceiver<Event>,
    on_page: Option<Answer>,
) -> Response {
    let said = |mut body: serde_json::Value| {
        if let Some(answer) = on_page {
            body["answered_on_page"] = json!(answer.as_str());
        }
        axum::Json(body).into_response()
    };
    let mut pending = Pending {
        shared: app.shared.clone(),
        id: id.clone(),
        parked: false,
    };
    let wait = app.shared.reply_timeout;
    match tokio::time::timeout(wait, settled(&mut events)).await {
        Ok(Some(Event::Reply(text))) => said(json!({ "reply": text, "chat": chat })),
        Ok(Some(Event::Stopped)) => said(json!({ "reply": "(stopped)", "chat": chat })),
        Ok(Some(Event::Question(q))) => {
            let body = json!({ "approval": super::question(&q), "chat": chat });
            pending.parked = true;
            let (message_id, on_page) = (id, None);
            let parked = Parked {
                chat,
                message_id,
                events,
                on_page,
            };
            Shared::park(&app.shared, &q, parked);
            said(body)
        }
        Ok(_) => error(StatusCode::BAD_GATEWAY, "the message ended without a reply"),
        Err(_) => error(
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "no reply within {} s (`[channels.gateway] reply_timeout_secs`)",
                wait.as_secs()
            ),
        ),
    }
}

/// The body, read within the request timeout and the size limit.
async fn read_body(
    app: &App,
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Vec<u8>, Refusal> {
    let too_large = || {
        Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is over {} KiB", limit / 1024),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let wait = app.shared.request_timeout;
    match tokio::time::timeout(wait, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => Ok(bytes.to_vec()),
        Ok(Err(e)) if e.to_string().contains("length limit") => Err(too_large()),
        Ok(Err(e)) => Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            format!("cannot read the body: {e}"),
        )),
        Err(_) => Err(Refusal::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the body did not arrive within {} s (`[channels.gateway] request_timeout_secs`)",
                wait.as_secs()
            ),
        )),
    }
}

/// A request that passed the guard, its body read in time and parsed as
/// `T`; or why it is refused (`shape` tells the client what to send).
pub(super) async fn admitted<T: serde::de::DeserializeOwned>(
    app: &App,
    connection: &ConnectionHandle,
    method: &Method,
    headers: &HeaderMap,
    body: Body,
    shape: &str,
) -> Result<T, Refusal> {
    guarded(app, method, headers)?;
    let body = read_body(app, headers, body, BODY_LIMIT).await?;
    connection.0.request_read();
    serde_json::from_slice(&body).map_err(|e| {
        Refusal::new(
            StatusCode::BAD_REQUEST,
            format!("the body is not the expected JSON ({e}); send {shape}"),
        )
    })
}

/// A request that passed the guard with its body read in time, up to
/// `limit` bytes, as JSON of any shape (the caller reads its fields).
pub(super) async fn admitted_json(
    app: &App,
    connection: &ConnectionHandle,
    method: &Method,
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<serde_json::Value, Refusal> {
    guarded(app, method, headers)?;
    let body = read_body(app, headers, body, limit).await?;
    connection.0.request_read();
    serde_json::from_slice(&body).map_err(|e| {
        Refusal::new(
            StatusCode::BAD_REQUEST,
            format!("the body is not JSON ({e})"),
        )
    })
}

/// [`admitted`], refused in the gateway's own error shape.
async fn accept<T: serde::de::DeserializeOwned>(
    app: &App,
    connection: &ConnectionHandle,
    method: &Method,
    headers: &HeaderMap,
    body: Body,
    shape: &str,
) -> Result<T, Response> {
    admitted(app, connection, method, headers, body, shape)
        .await
        .map_err(refusal)
}

async fn message(
    State(app): State<App>,
    Extension(connection): Extension<ConnectionHandle>,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let shape = r#"{"text": "...", "chat": "..."}"#;
    let request: MessageRequest =
        match accept(&app, &connection, &method, &headers, body, shape).await {
            Ok(r) => r,
            Err(response) => return response,
        };
    let text = request.text.trim();
    if text.is_empty() {
        return error(StatusCode::BAD_REQUEST, "`text` is empty");
    }
    let chat = match name(request.chat, "default", "chat") {
        Ok(c) => c,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    let keyed = match idempotency_key(&headers) {
        Ok(key) => key.map(|k| Shared::keyed_id(&chat, &k)),
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    if keyed
        .as_ref()
        .is_some_and(|id| app.shared.waiting().contains_key(id))
    {
        return in_progress();
    }
    let (message, events) = app.shared.admit(&chat, text, keyed);
    let id = message.id.clone();
    match app.bus.accept(message).await {
        Err(_) => {
            app.shared.forget(&id);
            error(StatusCode::SERVICE_UNAVAILABLE, "hearth is shutting down")
        }
        Ok(Accepted::Queued) => outcome(&app, (chat, id), events, None).await,
        // A retry of a request already recorded: its answer, not a second run.
        Ok(Accepted::Known { reply }) => {
            app.shared.forget(&id);
            match reply {
                Some(text) => axum::Json(json!({ "reply": text, "chat": chat, "replayed": true }))
                    .into_response(),
                None => in_progress(),
            }
        }
    }
}

/// The `Idempotency-Key` header: 1 to 128 letters, digits, '-', '_', '.' or ':'.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, String> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = value.to_str().unwrap_or("").trim();
    let fine = (1..=128).contains(&key.len())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if fine {
        Ok(Some(key.to_string()))
    } else {
        Err("`Idempotency-Key` must be 1 to 128 letters, digits, '-', '_', '.' or ':'".into())
    }
}

/// A request with this key is still being answered.
fn in_progress() -> Response {
    let mut response = error(
        StatusCode::CONFLICT,
        "a request with this Idempotency-Key is still being answered; retry later for its answer",
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from_static("2"));
    response
}

/// The answer to an approval question; responds as the question's message
/// would have.
async fn approval(
    State(app): State<App>,
    Extension(connection): Extension<ConnectionHandle>,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let shape = r#"{"id": "...", "chat": "...", "answer": "once" | "always" | "deny"}"#;
    let request: ApprovalAnswer =
        match accept(&app, &connection, &method, &headers, body, shape).await {
            Ok(r) => r,
            Err(response) => return response,
        };
    let Some(answer) = Answer::parse(request.answer.trim()) else {
        return error(
            StatusCode::BAD_REQUEST,
            "`answer` must be \"once\", \"always\" or \"deny\"",
        );
    };
    let chat = match name(request.chat, "default", "chat") {
        Ok(c) => c,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    let closed = || {
        error(
            StatusCode::NOT_FOUND,
            "no open question with this id in this chat: it was answered, expired, or never asked",
        )
    };
    let parked = {
        let mut all = app.shared.parked();
        match all.remove(&request.id) {
            Some(p) if p.chat == chat => p,
            Some(p) => {
                all.insert(request.id.clone(), p);
                return closed();
            }
            None => return closed(),
        }
    };
    if let Some(given) = parked.on_page {
        // The owner answered on the web page first: that answer stands,
        // and the client gets what followed from it.
        return outcome(
            &app,
            (parked.chat, parked.message_id),
            parked.events,
            Some(given),
        )
        .await;
    }
    match app
        .shared
        .questions
        .answer(&request.id, &parked.chat, answer)
    {
        Delivered::Taken => {
            let message = (parked.chat, parked.message_id);
            outcome(&app, message, parked.events, None).await
        }
        Delivered::Expired | Delivered::NotYours => {
            app.shared.forget(&parked.message_id);
            closed()
        }
    }
}
