//! The served model: a plain, stateless server over the client's own
//! messages, the way llama-server serves them. No hearth prompt, tools or
//! memory are added; client tools come back as calls in the model
//! family's format, parsed by the engine.
//!
//! The client resends the whole conversation every turn. Each
//! conversation gets its own KV sequence, named by what the client says
//! (`X-Hearth-Chat`, Open WebUI's `X-OpenWebUI-Chat-Id`, OpenAI's
//! `prompt_cache_key`) or else by its opening (the system message and the
//! first user message), so a second turn finds its first in the cache and
//! decodes only what is new, and another chat sent in between does not
//! push it out of its sequence. A new conversation copies the longest
//! prefix another one holds.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::error::ApiError;
use super::fields::Sampling;
use super::turn::{Finish, Out, Turn};
use crate::ServedModel;
use hearth_core::chat::{ChatMessage, ChatRequest, Role, StreamEvent, ToolChoice, ToolSpec};
use hearth_core::internal_tags::InternalTags;
use hearth_metrics::Metrics;

/// A request for the served model.
pub struct Direct {
    pub messages: Vec<ChatMessage>,
    pub sampling: Sampling,
    pub tools: Vec<ToolSpec>,
    pub tool_choice: ToolChoice,
    pub one_call: bool,
    pub cache_key: Option<String>,
}

/// The KV sequence's name for this conversation.
fn conversation(headers: &HeaderMap, key: Option<&str>, messages: &[ChatMessage]) -> String {
    let named = super::named_chat(headers)
        .or(key)
        .filter(|n| !n.trim().is_empty());
    let mut hash = Sha256::new();
    match named {
        Some(name) => {
            hash.update(b"named\0");
            hash.update(name.trim().as_bytes());
        }
        None => {
            // The opening: every system message before the first user
            // message, and that message.
            hash.update(b"opening\0");
            for m in messages {
                hash.update(m.role.as_str().as_bytes());
                hash.update(b"\0");
                hash.update(m.content.as_bytes());
                hash.update(b"\0");
                if m.role == Role::User {
                    break;
                }
            }
        }
    }
    let digest = hash.finalize();
    format!("api-{}", hearth_core::hex::hex(&digest[..12]))
}

/// Starts the reply; it runs until it ends, `wait` passes, or the client
/// drops the returned turn.
/// Each reply's tokens are counted in `metrics`, as the assistant's are.
pub fn start(
    served: Arc<dyn ServedModel>,
    headers: &HeaderMap,
    asked: Direct,
    wait: Duration,
    metrics: Option<Arc<Metrics>>,
) -> Turn {
    let conversation = conversation(headers, asked.cache_key.as_deref(), &asked.messages);
    let mut request = ChatRequest::new(
        conversation,
        asked.messages,
        asked.sampling.over(&served.defaults()),
    );
    request.tools = asked.tools;
    request.tool_choice = asked.tool_choice;
    // The grammar lets the model write several calls unless the client
    // asked for one (`parallel_tool_calls: false`).
    request.parallel_calls = !asked.one_call;
    let one_call = asked.one_call;
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let cancel = CancellationToken::new();
        // However this task ends, the engine stops with it.
        let _stop = cancel.clone().drop_guard();
        let deadline = tokio::time::Instant::now() + wait;
        let started = tokio::select! {
            s = served.chat(request, cancel.clone()) => s,
            _ = tx.closed() => return,
            _ = tokio::time::sleep_until(deadline) => return timed_out(&tx, wait).await,
        };
        let mut stream = match started {
            Ok(s) => s,
            Err(e) => {
                let _ = tx.send(Out::Failed(e.into())).await;
                return;
            }
        };
        let mut relay = Relay {
            one_call,
            calls: 0,
            shown: InternalTags::default(),
            metrics,
        };
        loop {
            let event = tokio::select! {
                e = stream.next() => e,
                _ = tx.closed() => return,
                _ = tokio::time::sleep_until(deadline) => return timed_out(&tx, wait).await,
            };
            for out in relay.outs(event) {
                let last = matches!(out, Out::Done { .. } | Out::Failed(_));
                if tx.send(out).await.is_err() || last {
                    return;
                }
            }
        }
    });
    rx
}

/// The engine's events as the client is sent them.
struct Relay {
    /// At most one call is passed on (`parallel_tool_calls: false`).
    one_call: bool,
    calls: usize,
    /// hearth's own markup, repeated by the model, never reaches the client.
    shown: InternalTags,
    metrics: Option<Arc<Metrics>>,
}

impl Relay {
    fn outs(&mut self, event: Option<StreamEvent>) -> Vec<Out> {
        let out = match event {
            Some(StreamEvent::TextDelta(t)) => match self.shown.push(&t) {
                piece if piece.is_empty() => return Vec::new(),
                piece => Out::Text(piece),
            },
            Some(StreamEvent::ReasoningDelta(t)) => Out::Reasoning(t),
            Some(StreamEvent::ToolCall(_)) if self.one_call && self.calls > 0 => return Vec::new(),
            Some(StreamEvent::ToolCall(c)) => {
                self.calls += 1;
                Out::Call(c)
            }
            // A call the parser could not read goes back as the text the
            // model wrote, as llama-server does.
            Some(StreamEvent::MalformedCall(raw)) => Out::Text(raw),
            Some(StreamEvent::Done { usage, finish }) => {
                if let Some(m) = &self.metrics {
                    m.usage(&usage);
                }
                let done = Out::Done {
                    usage,
                    finish: Finish::of(finish, self.calls > 0),
                };
                let rest = self.shown.finish();
                return if rest.is_empty() {
                    vec![done]
                } else {
                    vec![Out::Text(rest), done]
                };
            }
            Some(StreamEvent::Error(e)) => Out::Failed(e.into()),
            None => Out::Failed(ApiError::new(
                StatusCode::BAD_GATEWAY,
                "the engine ended the reply without finishing it",
            )),
        };
        vec![out]
    }
}

async fn timed_out(tx: &mpsc::Sender<Out>, wait: Duration) {
    let _ = tx
        .send(Out::Failed(ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "no reply within {} s (`[channels.gateway] reply_timeout_secs`); generation was stopped",
                wait.as_secs()
            ),
        )))
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_is_named_by_its_opening_or_by_the_client() {
        let none = HeaderMap::new();
        let turn1 = [ChatMessage::system("s"), ChatMessage::user("hello")];
        let turn2 = [
            ChatMessage::system("s"),
            ChatMessage::user("hello"),
            ChatMessage::assistant("hi"),
            ChatMessage::user("more"),
        ];
        let other = [ChatMessage::system("s"), ChatMessage::user("another chat")];
        assert_eq!(
            conversation(&none, None, &turn1),
            conversation(&none, None, &turn2)
        );
        assert_ne!(
            conversation(&none, None, &turn1),
            conversation(&none, None, &other)
        );
        let mut named = HeaderMap::new();
        named.insert(
            "x-openwebui-chat-id",
            "abc".parse().expect("a header value"),
        );
        assert_eq!(
            conversation(&named, None, &turn1),
            conversation(&named, None, &other),
            "the client's chat id wins"
        );
        assert_ne!(
            conversation(&named, None, &turn1),
            conversation(&none, Some("abc2"), &turn1)
        );
    }
}
