//! A reply rendered as `POST /v1/chat/completions` answers: one
//! `chat.completion`, or `chat.completion.chunk` server-sent events ending
//! with `[DONE]` (and, with `stream_options.include_usage`, a last chunk
//! carrying the usage).

use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::error::ApiError;
use super::turn::{Out, Turn, Whole, usage_json, whole};
use hearth_core::chat::ToolCall;

/// What every object of one completion repeats.
pub struct Completion {
    pub id: String,
    pub created: i64,
    pub model: String,
}

impl Completion {
    pub fn new(model: &str) -> Self {
        Self {
            id: format!("chatcmpl-{}", uuid::Uuid::new_v4().simple()),
            created: chrono::Utc::now().timestamp(),
            model: model.to_string(),
        }
    }

    fn chunk(&self, delta: Value, finish: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish }],
        })
    }

    fn whole(&self, w: &Whole) -> Value {
        let mut message = json!({
            "role": "assistant",
            "content": if w.text.is_empty() && !w.calls.is_empty() { Value::Null } else { json!(w.text) },
            "refusal": null,
        });
        if !w.calls.is_empty() {
            message["tool_calls"] = w
                .calls
                .iter()
                .enumerate()
                .map(|(i, c)| call(c, i, false))
                .collect();
        }
        if !w.reasoning.is_empty() {
            message["reasoning_content"] = json!(w.reasoning);
        }
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": message,
                "logprobs": null,
                "finish_reason": w.finish.map(|f| f.as_str()),
            }],
            "usage": usage_json(&w.usage),
        })
    }
}

/// A call as OpenAI sends it: arguments as a JSON string, an id always.
pub fn call(c: &ToolCall, index: usize, streamed: bool) -> Value {
    let id = call_id(c);
    let mut v = json!({
        "id": id,
        "type": "function",
        "function": { "name": c.name, "arguments": c.arguments.to_string() },
    });
    if streamed {
        v["index"] = json!(index);
    }
    v
}

/// The model's id for a call, or a new one where its family gives none.
pub fn call_id(c: &ToolCall) -> String {
    if c.id.is_empty() {
        format!("call_{}", &uuid::Uuid::new_v4().simple().to_string()[..24])
    } else {
        c.id.clone()
    }
}

/// The whole reply as one `chat.completion`.
pub async fn respond(completion: Completion, turn: Turn) -> Response {
    match whole(turn).await {
        Ok(w) => axum::Json(completion.whole(&w)).into_response(),
        Err(e) => e.into_response(),
    }
}

/// The reply as server-sent chunks.
pub fn stream(completion: Completion, mut turn: Turn, include_usage: bool) -> Response {
    let (tx, rx) = mpsc::channel::<Bytes>(32);
    tokio::spawn(async move {
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
        let mut calls = 0;
        while let Some(out) = turn.recv().await {
            let sent = match out {
                Out::Text(t) => send(completion.chunk(json!({ "content": t }), None)).await,
                Out::Reasoning(t) => {
                    send(completion.chunk(json!({ "reasoning_content": t }), None)).await
                }
                Out::Call(c) => {
                    calls += 1;
                    let delta = json!({ "tool_calls": [call(&c, calls - 1, true)] });
                    send(completion.chunk(delta, None)).await
                }
                Out::Done { usage, finish } => {
                    if send(completion.chunk(json!({}), Some(finish.as_str()))).await
                        && include_usage
                    {
                        let mut last = completion.chunk(json!({}), None);
                        last["choices"] = json!([]);
                        last["usage"] = usage_json(&usage);
                        send(last).await;
                    }
                    let _ = tx.send(Bytes::from_static(b"data: [DONE]\n\n")).await;
                    return;
                }
                Out::Failed(e) => {
                    send(e.body()).await;
                    return;
                }
            };
            if !sent {
                // The client hung up: dropping the turn stops the reply.
                return;
            }
        }
    });
    sse(rx)
}

/// A body of server-sent events from `rx`.
pub fn sse(mut rx: mpsc::Receiver<Bytes>) -> Response {
    let body = Body::from_stream(futures::stream::poll_fn(move |cx| {
        rx.poll_recv(cx).map(|b| b.map(Ok::<_, Infallible>))
    }));
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body)
        .unwrap_or_else(|_| {
            ApiError::new(
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                "cannot stream",
            )
            .into_response()
        })
}
