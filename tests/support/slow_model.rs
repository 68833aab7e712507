//! A slow OpenAI-compatible chat-completions server on 127.0.0.1, as
//! `[providers.openai]` talks to it: streamed `chat.completion.chunk`
//! events (`data: …`, then `data: [DONE]`), as OpenAI's API reference
//! shows them. It answers "Reply to: <the last user message>" in `pieces`
//! pieces, `gap` apart; a message containing "LONG" gets a reply of about
//! 6,000 characters (two Telegram messages); [`WRITE_AGENTS`] gets a
//! `file_write` call, and a tool result a reply that ends in a result tag
//! cut short (as small models write them). A picture in the message (an
//! `image_url` part) is counted as [`picture`] names it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

#[derive(Default)]
struct Seen {
    /// Requests per last user message.
    asked: HashMap<String, usize>,
}

pub struct SlowModel {
    /// The API root to configure as `base_url` (ends in `/v1`).
    pub base_url: String,
    seen: Arc<Mutex<Seen>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for SlowModel {
    fn drop(&mut self) {
        self.server.abort();
    }
}

#[derive(Clone)]
struct App {
    seen: Arc<Mutex<Seen>>,
    pieces: usize,
    gap: Duration,
}

/// What the model writes when asked to write AGENTS.md: a `file_write`
/// call whose 720-character content comes before its path.
pub const WRITE_AGENTS: &str = "WRITE_AGENTS_MD";

/// The reply the model gives to `asked`.
pub fn reply_to(asked: &str) -> String {
    if asked.contains("<tool_result") {
        // A small model imitating the result tags, cut short.
        return "Saved AGENTS.md.\n<tool_result name=\"file_write\" status=\"ok".to_string();
    }
    if asked.contains(WRITE_AGENTS) {
        let call = serde_json::json!({
            "name": "file_write",
            "arguments": {"content": "A".repeat(720), "path": "AGENTS.md"},
        });
        return format!("<tool_call>{call}</tool_call>");
    }
    if asked.contains("LONG") {
        let paragraph = format!("{} ", "All work and no play makes a dull reply.".repeat(9));
        let mut text = format!("Reply to: {asked}\n\n");
        for i in 0..16 {
            text.push_str(&format!("Paragraph {i}. {paragraph}\n\n"));
        }
        text
    } else {
        format!("Reply to: {asked}")
    }
}

/// The last user message's words; a picture sent with them (an
/// `image_url` part) as [`picture`] names it.
fn last_user(body: &Value) -> String {
    let content = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .rfind(|m| m["role"] == "user")
        .map(|m| &m["content"]);
    let Some(parts) = content.and_then(Value::as_array) else {
        return content
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
    };
    let said: Vec<String> = parts
        .iter()
        .map(|part| match part["type"].as_str() {
            Some("image_url") => {
                let url = part["image_url"]["url"].as_str().unwrap_or_default();
                let data = url.split_once(";base64,").map_or("", |(_, d)| d);
                let bytes =
                    base64::Engine::decode(&base64::engine::general_purpose::STANDARD, data)
                        .unwrap_or_default();
                picture(&bytes)
            }
            _ => part["text"].as_str().unwrap_or_default().to_string(),
        })
        .collect();
    said.join("\n")
}

/// How a picture the model was sent shows in what it was asked: its
/// bytes' SHA-256.
pub fn picture(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("[picture {:x}]", sha2::Sha256::digest(bytes))
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let event = json!({
        "id": "chatcmpl-slow",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "slow",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {event}\n\n")
}

async fn completions(State(app): State<App>, body: axum::Json<Value>) -> Response {
    let asked = last_user(&body.0);
    *app.seen
        .lock()
        .unwrap()
        .asked
        .entry(asked.clone())
        .or_default() += 1;
    let text = reply_to(&asked);
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(app.pieces.max(1)).max(1);
    let mut frames = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    frames.extend(
        chars
            .chunks(size)
            .map(|c| chunk(json!({"content": c.iter().collect::<String>()}), None)),
    );
    frames.push(chunk(json!({}), Some("stop")));
    frames.push("data: [DONE]\n\n".to_string());
    let gap = app.gap;
    let stream = async_stream(frames, gap);
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
        .into_response()
}

fn async_stream(
    frames: Vec<String>,
    gap: Duration,
) -> impl futures::Stream<Item = Result<String, Infallible>> {
    futures::stream::unfold(
        (frames.into_iter(), true),
        move |(mut it, first)| async move {
            let frame = it.next()?;
            if !first {
                tokio::time::sleep(gap).await;
            }
            Some((Ok(frame), (it, false)))
        },
    )
}

impl SlowModel {
    /// Starts the server: replies in `pieces` pieces, `gap` apart.
    pub async fn start(pieces: usize, gap: Duration) -> Self {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(completions))
            .with_state(App {
                seen: seen.clone(),
                pieces,
                gap,
            });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            base_url: format!("http://{addr}/v1"),
            seen,
            server,
        }
    }

    /// How often the model was asked about a last user message containing
    /// `text`.
    pub fn asked(&self, text: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .asked
            .iter()
            .filter(|(k, _)| k.contains(text))
            .map(|(_, n)| n)
            .sum()
    }

    /// Requests so far.
    pub fn requests(&self) -> usize {
        self.seen.lock().unwrap().asked.values().sum()
    }
}
