//! `GET /ws/chat?chat=NAME`: one WebSocket per conversation, the reply
//! streamed as it is made.
//!
//! The client sends `{"type":"message","text":"..."}`; the server answers
//! with `{"type":"chunk","text":"..."}` pieces (appended in order),
//! `{"type":"tool","name":"..."}` when a tool is about to run, and ends the
//! turn with `{"type":"done","text":"<the whole reply>"}`; a turn that was
//! stopped ends with `{"type":"done","text":"","stopped":true}`.
//! `{"type":"stop"}` cancels the turn (`/stop`). A tool call that needs
//! the person's approval arrives as `{"type":"approval","id",...}`, answered
//! with `{"type":"approval","id":"...","answer":"once"|"always"|"deny"}`.
//! A picture goes as a binary frame (the file's bytes, at most
//! [`PICTURE_LIMIT`]) before the message it belongs to, which takes every
//! picture sent since the last message (at most [`PICTURES_PER_MESSAGE`]).
//! A document goes the same way, its binary frame announced by
//! `{"type":"file","name":"syllabus.pdf"}` (at most [`DOCUMENTS_PER_MESSAGE`]
//! a message, each within the same limit); it is read in the document cage
//! and kept for the person's later questions.
//! A frame the server cannot take gets `{"type":"error","error":"..."}` and
//! the socket stays open; a text frame over [`FRAME_LIMIT`] or a binary one
//! over [`PICTURE_LIMIT`] closes it (1009, with the limit as the reason).
//!
//! The upgrade request passes the same guard as every request (host,
//! origin, token). Browsers cannot set `Authorization` on a WebSocket, so
//! the token may also come as a subprotocol, `bearer.<token>`, beside
//! `hearth` (the one the server picks). The web page's own socket comes
//! with its session cookie instead, and its CSRF token as `csrf.<token>`. The server pings every
//! `ws_ping_secs` (20 s); a client that sends nothing, not even a pong,
//! for three of those intervals is closed, and its connection freed.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::extract::ws::{
    CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code,
    rejection::WebSocketUpgradeRejection,
};
use axum::extract::{Extension, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

use super::connections::ConnectionHandle;
use super::http::{App, guarded, name};
use super::page::session::CSRF_HEADER;
use super::{Event, question};
use hearth_channel::Accepted;
use hearth_channel::approval::{Answer, Delivered};
use hearth_core::chat::Attachment;

/// The largest text frame a client may send.
const FRAME_LIMIT: usize = 64 * 1024;
/// The largest picture (a binary frame); the engine's own limits apply after.
const PICTURE_LIMIT: usize = 20 << 20;
/// Pictures one message may bring.
const PICTURES_PER_MESSAGE: usize = 4;
/// Documents one message may bring.
const DOCUMENTS_PER_MESSAGE: usize = 4;
/// The subprotocol the server speaks.
const PROTOCOL: &str = "hearth";

#[derive(Deserialize)]
pub(super) struct Params {
    chat: Option<String>,
}

/// What a client sends.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
enum Frame {
    Message {
        text: String,
    },
    /// The next binary frame is a document of this name.
    File {
        name: String,
    },
    Stop,
    Approval {
        id: String,
        answer: String,
    },
}

pub(super) async fn chat(
    State(app): State<App>,
    Extension(connection): Extension<ConnectionHandle>,
    Query(params): Query<Params>,
    method: Method,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    if let Err(r) = guarded(&app, &method, &with_protocol_token(&headers)) {
        return (r.status, axum::Json(json!({ "error": r.message }))).into_response();
    }
    let upgrade = match upgrade {
        Ok(u) => u,
        Err(e) => return e.into_response(),
    };
    let chat = match name(params.chat, "default", "chat") {
        Ok(c) => c,
        Err(why) => {
            return (StatusCode::BAD_REQUEST, axum::Json(json!({ "error": why }))).into_response();
        }
    };
    let Some(socket_slot) = SocketSlot::take(&app.shared) else {
        let most = max_sockets(app.shared.max_connections);
        let why = format!(
            "{most} WebSockets are open, the most `[channels.gateway] max_connections` ({}) leaves room for; close one, or raise it",
            app.shared.max_connections
        );
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({ "error": why })),
        )
            .into_response();
    };
    connection.0.request_read();
    upgrade
        .protocols([PROTOCOL])
        .max_message_size(PICTURE_LIMIT)
        .on_upgrade(move |socket| async move {
            // The connection's slot stays taken while the socket is open.
            let _connection = connection;
            let _socket_slot = socket_slot;
            Session::new(app, chat).run(socket).await;
        })
}

/// The most WebSockets open at once: three quarters of the connections,
/// at least one.
fn max_sockets(max_connections: usize) -> usize {
    (max_connections * 3 / 4).max(1)
}

/// One open WebSocket, counted until dropped.
struct SocketSlot(Arc<super::Shared>);

impl SocketSlot {
    fn take(shared: &Arc<super::Shared>) -> Option<Self> {
        let most = max_sockets(shared.max_connections);
        shared
            .sockets
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < most).then_some(n + 1)
            })
            .ok()
            .map(|_| Self(Arc::clone(shared)))
    }
}

impl Drop for SocketSlot {
    fn drop(&mut self) {
        self.0.sockets.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `headers` with a `bearer.<token>` subprotocol as `Authorization`, and
/// a `csrf.<token>` one (the web page's) as `X-Hearth-CSRF`, where the
/// request carries no such header of its own.
fn with_protocol_token(headers: &HeaderMap) -> HeaderMap {
    let mut headers = headers.clone();
    let offered = |prefix: &str| {
        headers
            .get_all(header::SEC_WEBSOCKET_PROTOCOL)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .find_map(|p| p.trim().strip_prefix(prefix).map(str::to_string))
    };
    let token = offered("bearer.").filter(|_| !headers.contains_key(header::AUTHORIZATION));
    let csrf = offered("csrf.").filter(|_| !headers.contains_key(CSRF_HEADER));
    if let Some(value) = token.and_then(|t| HeaderValue::from_str(&format!("Bearer {t}")).ok()) {
        headers.insert(header::AUTHORIZATION, value);
    }
    if let Some(value) = csrf.and_then(|t| HeaderValue::from_str(&t).ok()) {
        headers.insert(CSRF_HEADER, value);
    }
    headers
}

/// Why a socket that sent what it may not is closed: a frame over
/// [`FRAME_LIMIT`] gets 1009 (too big) with the limit, anything else 1002
/// (a protocol error) with what was wrong.
fn closing(error: &axum::Error) -> CloseFrame {
    let text = error.to_string();
    tracing::info!("closing a WebSocket: {text}");
    // tungstenite's words for a message over the limit ("Space limit
    // exceeded: Message too long: N > M"); axum does not type them.
    if text.contains("Message too long") {
        CloseFrame {
            code: close_code::SIZE,
            reason: format!(
                "pictures are limited to {} MB; send a smaller one",
                PICTURE_LIMIT >> 20
            )
            .into(),
        }
    } else {
        // A close reason is at most 123 bytes.
        let mut reason = text;
        while reason.len() > 120 {
            reason.pop();
        }
        CloseFrame {
            code: close_code::PROTOCOL,
            reason: reason.into(),
        }
    }
}

/// The turn in progress on a socket.
struct Turn {
    id: String,
    events: UnboundedReceiver<Event>,
}

/// One socket's conversation.
struct Session {
    app: App,
    chat: String,
    turn: Option<Turn>,
    /// Questions asked on this socket, the only ones it may answer.
    asked: HashSet<String>,
    /// Pictures sent for the next message.
    pictures: Vec<hearth_core::chat::Image>,
    /// Documents sent for the next message, and the name of the one whose
    /// bytes come next.
    documents: Vec<Attachment>,
    next_file: Option<String>,
}

impl Session {
    fn new(app: App, chat: String) -> Self {
        Self {
            app,
            chat,
            turn: None,
            asked: HashSet::new(),
            pictures: Vec::new(),
            documents: Vec::new(),
            next_file: None,
        }
    }

    async fn run(mut self, mut socket: WebSocket) {
        let mut ping = tokio::time::interval(self.app.shared.ws_ping);
        ping.tick().await;
        let mut silent_ticks = 0u32;
        loop {
            let out = tokio::select! {
                frame = socket.recv() => {
                    silent_ticks = 0;
                    match frame {
                        Some(Ok(Message::Text(text))) if text.len() > FRAME_LIMIT => {
                            let close = CloseFrame {
                                code: close_code::SIZE,
                                reason: format!(
                                    "text frames are limited to {} KiB; send a shorter message",
                                    FRAME_LIMIT / 1024
                                )
                                .into(),
                            };
                            let _ = socket.send(Message::Close(Some(close))).await;
                            break;
                        }
                        Some(Ok(Message::Text(text))) => self.frame(text.as_str()).await,
                        Some(Ok(Message::Binary(bytes))) => self.binary(&bytes),
                        Some(Ok(Message::Close(_))) | None => break,
                        Some(Err(e)) => {
                            let _ = socket.send(Message::Close(Some(closing(&e)))).await;
                            break;
                        }
                        // Pings are answered by the socket; pongs only show life.
                        Some(Ok(_)) => Vec::new(),
                    }
                }
                event = next_event(&mut self.turn) => self.event(event),
                _ = ping.tick() => {
                    silent_ticks += 1;
                    if silent_ticks > 2 {
                        tracing::info!(chat = self.chat, "a WebSocket client stopped answering pings");
                        break;
                    }
                    if socket.send(Message::Ping(Default::default())).await.is_err() {
                        break;
                    }
                    Vec::new()
                }
            };
            for frame in out {
                if socket
                    .send(Message::Text(frame.to_string().into()))
                    .await
                    .is_err()
                {
                    self.end_turn();
                    return;
                }
            }
        }
        self.end_turn();
    }

    /// A client's frame; what to answer it with.
    async fn frame(&mut self, text: &str) -> Vec<Value> {
        let shape = r#"{"type":"message","text":"..."}, {"type":"file","name":"..."} before a document's binary frame, {"type":"stop"} or {"type":"approval","id":"...","answer":"once"|"always"|"deny"}"#;
        let frame = match serde_json::from_str::<Frame>(text) {
            Ok(f) => f,
            Err(e) => return vec![error(&format!("cannot read the frame ({e}); send {shape}"))],
        };
        match frame {
            Frame::Message { text } => self.message(text.trim()).await,
            Frame::File { .. } if self.documents.len() >= DOCUMENTS_PER_MESSAGE => {
                vec![error(&format!(
                    "at most {DOCUMENTS_PER_MESSAGE} documents go with one message; send the message first"
                ))]
            }
            Frame::File { name } => {
                self.next_file = Some(name);
                Vec::new()
            }
            Frame::Stop => {
                if self.turn.is_some() {
                    self.stop().await;
                }
                Vec::new()
            }
            Frame::Approval { id, answer } => self.answer(&id, &answer),
        }
    }

    /// A binary frame: the document a `file` frame announced, or else a
    /// picture for the next message.
    fn binary(&mut self, bytes: &[u8]) -> Vec<Value> {
        if let Some(name) = self.next_file.take() {
            if bytes.is_empty() {
                return vec![error(&format!("{name} is empty"))];
            }
            self.documents.push(Attachment::new(&name, bytes.to_vec()));
            return Vec::new();
        }
        if self.pictures.len() >= PICTURES_PER_MESSAGE {
            return vec![error(&format!(
                "at most {PICTURES_PER_MESSAGE} pictures go with one message; send the message first"
            ))];
        }
        if bytes.is_empty() {
            return vec![error("an empty binary frame is no picture")];
        }
        self.pictures
            .push(hearth_core::chat::Image::new(bytes.to_vec()));
        Vec::new()
    }

    async fn message(&mut self, text: &str) -> Vec<Value> {
        if text.is_empty() && self.pictures.is_empty() && self.documents.is_empty() {
            return vec![error("`text` is empty")];
        }
        if self.turn.is_some() {
            return vec![error(
                "a reply is still being made; wait for `done` or send {\"type\":\"stop\"}",
            )];
        }
        let shared = &self.app.shared;
        let documents = std::mem::take(&mut self.documents);
        let text = super::sent_documents(text, &documents);
        let (mut message, events) = shared.admit(&self.chat, &text, None);
        message.images = std::mem::take(&mut self.pictures);
        message.documents = documents;
        let id = message.id.clone();
        match self.app.bus.accept(message).await {
            Ok(Accepted::Queued) => {
                self.turn = Some(Turn { id, events });
                Vec::new()
            }
            Ok(Accepted::Known { .. }) => {
                shared.forget(&id);
                vec![error("this message was already taken")]
            }
            Err(_) => {
                shared.forget(&id);
                vec![error("hearth is shutting down")]
            }
        }
    }

    /// Puts `/stop` for this chat on the bus; the turn ends with `Stopped`.
    async fn stop(&self) {
        let shared = self.app.shared.clone();
        let (stop, mut said) = shared.admit(&self.chat, "/stop", None);
        let id = stop.id.clone();
        if self.app.bus.accept(stop).await.is_err() {
            shared.forget(&id);
            return;
        }
        // The command's own answer ("Stopped.") is not this client's turn.
        tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(30), said.recv()).await;
            shared.forget(&id);
        });
    }

    fn answer(&mut self, id: &str, answer: &str) -> Vec<Value> {
        let Some(answer) = Answer::parse(answer.trim()) else {
            return vec![error("`answer` must be \"once\", \"always\" or \"deny\"")];
        };
        if !self.asked.remove(id) {
            return vec![error("no open question with this id on this socket")];
        }
        let shared = &self.app.shared;
        match shared.questions.answer(id, &self.chat, answer) {
            Delivered::Taken => Vec::new(),
            Delivered::Expired | Delivered::NotYours => {
                vec![error("the question was closed before the answer came")]
            }
        }
    }

    /// What the client hears of an event of its turn.
    fn event(&mut self, event: Option<Event>) -> Vec<Value> {
        if self.turn.is_none() {
            return Vec::new();
        }
        match event {
            Some(Event::Text(piece)) => vec![json!({ "type": "chunk", "text": piece })],
            Some(Event::Reasoning) => vec![json!({ "type": "reasoning" })],
            Some(Event::Tool(name)) => vec![json!({ "type": "tool", "name": name })],
            Some(Event::Round { .. }) => Vec::new(),
            Some(Event::Question(q)) => {
                self.asked.insert(q.id.clone());
                let mut asked = question(&q);
                asked["type"] = json!("approval");
                vec![asked]
            }
            Some(Event::Reply(text)) => {
                self.end_turn();
                vec![json!({ "type": "done", "text": text })]
            }
            Some(Event::Stopped) | None => {
                self.end_turn();
                vec![json!({ "type": "done", "text": "", "stopped": true })]
            }
        }
    }

    /// Forgets the turn in progress: its reply, if it still comes, is kept
    /// in the history but reaches no client.
    fn end_turn(&mut self) {
        if let Some(turn) = self.turn.take() {
            self.app.shared.forget(&turn.id);
        }
        self.asked.clear();
    }
}

/// The turn's next event; never, without a turn.
async fn next_event(turn: &mut Option<Turn>) -> Option<Event> {
    match turn {
        Some(turn) => turn.events.recv().await,
        None => std::future::pending().await,
    }
}

fn error(message: &str) -> Value {
    json!({ "type": "error", "error": message })
}
