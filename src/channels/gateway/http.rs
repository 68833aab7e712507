//! The gateway's HTTP side: routes, the token check, and one request's wait
//! for its reply.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::mpsc;

use super::Shared;
use crate::channels::{ChannelError, ChannelMessage};

/// The largest request body.
const BODY_LIMIT: usize = 64 * 1024;
/// The longest chat or sender name.
const NAME_LIMIT: usize = 64;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageRequest {
    text: String,
    #[serde(default)]
    chat: Option<String>,
    #[serde(default)]
    sender: Option<String>,
}

#[derive(Clone)]
struct App {
    shared: Arc<Shared>,
    bus: mpsc::Sender<ChannelMessage>,
}

/// Listens on `addr` until the bus closes (the daemon stops).
pub(super) async fn serve(
    addr: SocketAddr,
    shared: Arc<Shared>,
    bus: mpsc::Sender<ChannelMessage>,
) -> Result<(), ChannelError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| ChannelError::Other(format!("cannot listen on {addr}: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| ChannelError::Other(format!("cannot listen on {addr}: {e}")))?;
    shared.bound.send_replace(Some(local));
    tracing::info!(%local, "gateway listening");
    let closed = bus.clone();
    let app = axum::Router::new()
        .route("/v1/message", post(message))
        .route("/health", get(health))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(App { shared, bus });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { closed.closed().await })
        .await
        .map_err(|e| ChannelError::Network(format!("gateway: {e}")))
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({ "error": message.into() }))).into_response()
}

/// `None` when the request may pass; else the answer refusing it.
fn refused(shared: &Shared, headers: &HeaderMap) -> Option<Response> {
    let token = shared.token.as_ref()?;
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if constant_time_eq(given.as_bytes(), token.expose().as_bytes()) {
        None
    } else {
        Some(error(
            StatusCode::UNAUTHORIZED,
            "missing or wrong token: send `Authorization: Bearer <[channels.gateway] token>`",
        ))
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn health(State(app): State<App>, headers: HeaderMap) -> Response {
    if let Some(refusal) = refused(&app.shared, &headers) {
        return refusal;
    }
    axum::Json(json!({ "status": "ok" })).into_response()
}

/// A name for a chat or sender: what was given, trimmed, or `default`; or
/// why it cannot be one.
fn name(given: Option<String>, default: &str, key: &str) -> Result<String, String> {
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

/// Removes a request's waiter however its handler ends (a client that
/// hangs up included).
struct Pending<'a> {
    shared: &'a Shared,
    id: String,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.shared.forget(&self.id);
    }
}

async fn message(State(app): State<App>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(refusal) = refused(&app.shared, &headers) {
        return refusal;
    }
    let request: MessageRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!(
                    "the body is not the expected JSON ({e}); send {{\"text\": \"...\", \"chat\": \"...\"}}"
                ),
            );
        }
    };
    let text = request.text.trim();
    if text.is_empty() {
        return error(StatusCode::BAD_REQUEST, "`text` is empty");
    }
    let (chat, sender) = match (
        name(request.chat, "default", "chat"),
        name(request.sender, "gateway", "sender"),
    ) {
        (Ok(c), Ok(s)) => (c, s),
        (Err(why), _) | (_, Err(why)) => return error(StatusCode::BAD_REQUEST, why),
    };
    let (message, reply) = app.shared.admit(&chat, &sender, text);
    let _pending = Pending {
        shared: &app.shared,
        id: message.id.clone(),
    };
    if app.bus.send(message).await.is_err() {
        return error(StatusCode::SERVICE_UNAVAILABLE, "hearth is shutting down");
    }
    let wait = app.shared.reply_timeout;
    match tokio::time::timeout(wait, reply).await {
        Ok(Ok(text)) => axum::Json(json!({ "reply": text, "chat": chat })).into_response(),
        Ok(Err(_)) => error(StatusCode::BAD_GATEWAY, "the message ended without a reply"),
        Err(_) => error(
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "no reply within {} s (`[channels.gateway] reply_timeout_secs`)",
                wait.as_secs()
            ),
        ),
    }
}
