//! The OpenAI-compatible API: `POST /v1/chat/completions` (streamed as
//! server-sent events or not) and `GET /v1/models`, so clients made for
//! OpenAI (the `openai` libraries, Open WebUI, Home Assistant) talk to
//! hearth's agent, with its tools, memory and per-conversation cache.
//!
//! hearth keeps each conversation itself: a request names it with the
//! `X-Hearth-Chat` header or the `user` field (the header wins; neither is
//! the chat `default`), and only the last `user` message of `messages` is
//! read; earlier messages and the client's system prompt and `tools` are
//! left out, since hearth has the history, its own prompt and its tools.
//! A tool call that needs approval is denied: these clients cannot answer
//! a question. Errors come in OpenAI's shape,
//! `{"error": {"message", "type", "param", "code"}}`.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::connections::ConnectionHandle;
use super::guard::Refusal;
use super::http::{App, Pending, admitted, guarded, name};
use super::{Event, Shared};
use crate::channels::Accepted;
use crate::channels::approval::{Answer, ApprovalRequest};

/// The one model hearth offers: its agent, whichever model answers.
const MODEL: &str = "hearth";
/// The header naming the conversation.
const CHAT_HEADER: &str = "x-hearth-chat";

#[derive(Deserialize)]
struct CompletionRequest {
    #[serde(default)]
    model: Option<String>,
    messages: Vec<RequestMessage>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    user: Option<String>,
}

#[derive(Deserialize)]
struct RequestMessage {
    role: String,
    #[serde(default)]
    content: Option<Content>,
}

/// A message's content: a string, or parts of which the text ones count.
#[derive(Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Deserialize)]
struct Part {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

impl Content {
    fn text(&self) -> String {
        match self {
            Content::Text(t) => t.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter(|p| p.kind == "text")
                .filter_map(|p| p.text.as_deref())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// An error in OpenAI's shape.
fn error(status: StatusCode, message: impl Into<String>) -> Response {
    let (kind, code) = match status {
        StatusCode::UNAUTHORIZED => ("invalid_request_error", Some("invalid_api_key")),
        StatusCode::FORBIDDEN => ("invalid_request_error", Some("forbidden")),
        s if s.is_server_error() => ("server_error", None),
        _ => ("invalid_request_error", None),
    };
    let body = json!({
        "error": { "message": message.into(), "type": kind, "param": null, "code": code }
    });
    (status, axum::Json(body)).into_response()
}

fn refusal(r: Refusal) -> Response {
    error(r.status, r.message)
}

pub(super) async fn models(State(app): State<App>, method: Method, headers: HeaderMap) -> Response {
    if let Err(r) = guarded(&app, &method, &headers) {
        return refusal(r);
    }
    axum::Json(json!({
        "object": "list",
        "data": [{ "id": MODEL, "object": "model", "created": app.started, "owned_by": "hearth" }],
    }))
    .into_response()
}

pub(super) async fn completions(
    State(app): State<App>,
    Extension(connection): Extension<ConnectionHandle>,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let shape = r#"{"model": "hearth", "messages": [{"role": "user", "content": "..."}]}"#;
    let request: CompletionRequest =
        match admitted(&app, &connection, &method, &headers, body, shape).await {
            Ok(r) => r,
            Err(r) => return refusal(r),
        };
    let Some(text) = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == "user")
        .and_then(|m| m.content.as_ref())
        .map(|c| c.text().trim().to_string())
        .filter(|t| !t.is_empty())
    else {
        return error(
            StatusCode::BAD_REQUEST,
            "`messages` has no user message with text",
        );
    };
    let given = headers
        .get(CHAT_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or(request.user);
    let chat = match name(given, "default", "user") {
        Ok(c) => c,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    let (message, events) = app.shared.admit(&chat, &text, None);
    let id = message.id.clone();
    match app.bus.accept(message).await {
        Ok(Accepted::Queued) => {}
        Ok(Accepted::Known { .. }) | Err(_) => {
            app.shared.forget(&id);
            return error(StatusCode::SERVICE_UNAVAILABLE, "hearth is shutting down");
        }
    }
    let pending = Pending {
        shared: app.shared.clone(),
        id,
        parked: false,
    };
    let completion = Completion {
        id: format!("chatcmpl-{}", uuid::Uuid::new_v4().simple()),
        created: chrono::Utc::now().timestamp(),
        model: request.model.unwrap_or_else(|| MODEL.to_string()),
    };
    if request.stream {
        streamed(app.shared.clone(), completion, events, pending)
    } else {
        whole(&app, completion, events, pending).await
    }
}

/// What every object of one completion repeats.
struct Completion {
    id: String,
    created: i64,
    model: String,
}

impl Completion {
    fn chunk(&self, delta: Value, finish: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish }],
        })
    }

    fn whole(&self, text: &str) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": { "role": "assistant", "content": text, "refusal": null },
                "logprobs": null,
                "finish_reason": "stop",
            }],
        })
    }
}

/// Denies a call these clients cannot be asked about.
fn deny(shared: &Shared, q: &ApprovalRequest) {
    tracing::info!(
        tool = q.tool,
        "denied a call that needs approval: OpenAI clients cannot answer"
    );
    shared.questions.answer(&q.id, &q.sender, Answer::Deny);
}

/// The final text of a turn; `None` when it ended without one.
async fn reply(shared: &Shared, events: &mut mpsc::UnboundedReceiver<Event>) -> Option<String> {
    loop {
        match super::http::settled(events).await? {
            Event::Question(q) => deny(shared, &q),
            Event::Reply(text) => return Some(text),
            Event::Stopped => return Some("(stopped)".to_string()),
            Event::Text(_) | Event::Reasoning | Event::Tool(_) => {}
        }
    }
}

async fn whole(
    app: &App,
    completion: Completion,
    mut events: mpsc::UnboundedReceiver<Event>,
    _pending: Pending,
) -> Response {
    let wait = app.shared.reply_timeout;
    match tokio::time::timeout(wait, reply(&app.shared, &mut events)).await {
        Ok(Some(text)) => axum::Json(completion.whole(&text)).into_response(),
        Ok(None) => error(StatusCode::BAD_GATEWAY, "the message ended without a reply"),
        Err(_) => error(
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "no reply within {} s (`[channels.gateway] reply_timeout_secs`)",
                wait.as_secs()
            ),
        ),
    }
}

/// The reply as server-sent events: a role chunk, text chunks as they are
/// made, a final chunk with `finish_reason`, then `[DONE]`.
fn streamed(
    shared: Arc<Shared>,
    completion: Completion,
    mut events: mpsc::UnboundedReceiver<Event>,
    pending: Pending,
) -> Response {
    let (tx, mut rx) = mpsc::channel::<Bytes>(32);
    let wait = shared.reply_timeout;
    tokio::spawn(async move {
        let _pending = pending;
        let send = |value: Value| {
            let tx = tx.clone();
            async move {
                tx.send(Bytes::from(format!("data: {value}\n\n")))
                    .await
                    .is_ok()
            }
        };
        if !send(completion.chunk(json!({ "role": "assistant", "content": "" }), None)).await {
            return;
        }
        // Whether any text streamed: if none did, the reply goes out whole.
        let mut streamed = false;
        let deadline = tokio::time::Instant::now() + wait;
        let last = loop {
            let event = match tokio::time::timeout_at(deadline, events.recv()).await {
                Ok(event) => event,
                Err(_) => break None,
            };
            let whole = match event {
                Some(Event::Text(piece)) => {
                    streamed = true;
                    if !send(completion.chunk(json!({ "content": piece }), None)).await {
                        return;
                    }
                    continue;
                }
                Some(Event::Question(q)) => {
                    deny(&shared, &q);
                    continue;
                }
                Some(Event::Reasoning | Event::Tool(_)) => continue,
                Some(Event::Reply(text)) => text,
                Some(Event::Stopped) => "(stopped)".to_string(),
                None => break None,
            };
            break Some(whole);
        };
        let finish = match last {
            Some(text) => {
                // A reply that did not stream (a notice, a stopped turn)
                // goes out whole; one that did has had its last piece.
                if !streamed
                    && !text.is_empty()
                    && !send(completion.chunk(json!({ "content": text }), None)).await
                {
                    return;
                }
                "stop"
            }
            None => "length",
        };
        if send(completion.chunk(json!({}), Some(finish))).await {
            let _ = tx.send(Bytes::from_static(b"data: [DONE]\n\n")).await;
        }
    });
    let body = Body::from_stream(futures::stream::poll_fn(move |cx| {
        rx.poll_recv(cx).map(|b| b.map(Ok::<_, Infallible>))
    }));
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body)
        .unwrap_or_else(|_| error(StatusCode::INTERNAL_SERVER_ERROR, "cannot stream"))
}
