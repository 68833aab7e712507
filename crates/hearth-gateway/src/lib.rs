//! The HTTP gateway: the assistant as a small JSON API on the home network,
//! for scripts, home automation or a phone shortcut.
//!
//! `POST /v1/message` (or `POST /api/chat`, the same endpoint under the
//! reference system's name) with `{"text": "...", "chat": "kitchen"}` puts
//! the message on the bus like any other channel's and answers with the reply
//! once the pipeline sends it (`{"reply": "..."}`). Conversations are kept
//! per chat (and sender), so a chat has history like a Telegram chat.
//! A request whose message ends without a reply (`/stop`, a hook,
//! shutdown) gets `(stopped)`. `GET /health` says whether the daemon is up.
//!
//! When a tool call needs the person's approval, the request answers
//! `{"approval": {"id", "tool", "arguments", "expires_in_secs"}, "chat"}`
//! instead, and the client answers with `POST /v1/approval` and
//! `{"id": "...", "chat": "...", "answer": "once" | "always" | "deny"}`,
//! whose response is the reply (or the next question), as the first
//! request's would have been. No answer in time is Deny.
//! `GET /ws/chat` streams a conversation over a WebSocket ([`ws`]);
//! `GET /` is the web page ([`page`]), signed in with the token once;
//! `POST /v1/chat/completions` and `GET /v1/models` are the
//! OpenAI-compatible API ([`openai`]); `GET /metrics` is what hearth
//! counts, in the OpenMetrics text format, when the daemon shares it;
//! `GET /cal/<secret>.ics` is the person's deadlines as a calendar feed
//! ([`calendar`]).
//! [`guard`] checks every request before its body is read (host, origin,
//! token, content type); [`connections`] keeps slow clients from holding
//! every connection.
//!
//! A person here is the token plus the chat: everyone holding the token is
//! one sender (`token`, or `loopback` where no token is required), and each
//! `chat` is a conversation of its own with its own history, memory,
//! workspace and jobs.

mod brake;
mod calendar;
mod connections;
mod guard;
mod http;
mod openai;
pub mod page;
mod served;
mod settings;
mod ws;

pub use calendar::{CalendarError, CalendarFeed};
pub use page::desk::{
    Conversation, Desk, DeskError, JobAction, KeptDocument, Question, Remembered, Shown,
};
pub use served::{Embedded, ServedModel};
pub use settings::{GatewaySettings, page_url};

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use futures::future::BoxFuture;
use hearth_channel::approval::{Answer, ApprovalRequest, Questions};
use hearth_channel::{
    Channel, ChannelError, ChannelMessage, ChannelPolicy, Intake, ReplyEvent, ReplyStream,
    SendMessage,
};
use hearth_metrics::Metrics;

pub const NAME: &str = "gateway";

/// What the client behind a message hears about it.
enum Event {
    /// Text of the reply to append to what the client has.
    Text(String),
    /// The model began to reason (what it thinks is not shown).
    Reasoning,
    /// A tool is about to run.
    Tool(String),
    /// A model round ended (what an OpenAI client's `usage` adds up).
    Round {
        usage: hearth_core::chat::Usage,
        finish: hearth_core::chat::FinishReason,
    },
    Question(Box<ApprovalRequest>),
    Reply(String),
    /// The message ended without a reply (`/stop`, a hook, shutdown).
    Stopped,
}

/// A message whose client waits for what happens to it.
struct Waiter {
    events: mpsc::UnboundedSender<Event>,
}

/// A message waiting for the client's answer to `question`; the request
/// that answers it takes over `events`.
struct Parked {
    chat: String,
    message_id: String,
    events: mpsc::UnboundedReceiver<Event>,
    /// The question was answered on the web page, as this.
    on_page: Option<Answer>,
}

/// What the channel and its HTTP handlers share.
struct Shared {
    guard: guard::Guard,
    reply_timeout: Duration,
    request_timeout: Duration,
    max_connections: usize,
    /// How often a WebSocket client is pinged.
    ws_ping: Duration,
    /// WebSockets open now: at most three quarters of `max_connections`,
    /// so that open sockets never shut out requests (and `/health`).
    sockets: std::sync::atomic::AtomicUsize,
    /// By message id.
    waiting: Mutex<HashMap<String, Waiter>>,
    /// By question id.
    parked: Mutex<HashMap<String, Parked>>,
    questions: Questions,
    /// The address listened on, once bound.
    bound: watch::Sender<Option<SocketAddr>>,
    /// What the web page reads, once the daemon attached it.
    desk: std::sync::OnceLock<Arc<dyn Desk>>,
    /// The calendar feed, once the daemon attached it.
    calendar: std::sync::OnceLock<Arc<dyn CalendarFeed>>,
}

impl Shared {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiter>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn parked(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parked>> {
        self.parked.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Parks a message on question `q` until its client answers. A client
    /// that never comes back leaves nothing behind: the message is let go
    /// once the question's and a reply's wait are over.
    fn park(shared: &Arc<Self>, q: &ApprovalRequest, parked: Parked) {
        shared.parked().insert(q.id.clone(), parked);
        let (shared, id, wait) = (shared.clone(), q.id.clone(), q.timeout);
        tokio::spawn(async move {
            tokio::time::sleep(wait + shared.reply_timeout).await;
            if let Some(p) = shared.parked().remove(&id) {
                tracing::info!(
                    "gateway: nobody came back for the answer to a question; its message is let go"
                );
                shared.forget(&p.message_id);
            }
        });
    }

    /// Who every request is: the token holder, or loopback without one.
    /// The message id of a request with `Idempotency-Key: key` in `chat`:
    /// the same for every retry, so the inbox knows it. The key comes
    /// first and cannot hold a '/', so no other chat and key give this id.
    fn keyed_id(chat: &str, key: &str) -> String {
        format!("{KEYED}{key}/{chat}")
    }

    /// A new message from a request, and what its request will hear.
    /// `id`: the message's id when the request names one (its key).
    fn admit(
        &self,
        chat: &str,
        text: &str,
        id: Option<String>,
    ) -> (ChannelMessage, mpsc::UnboundedReceiver<Event>) {
        // Unique across restarts: memories are saved under message ids.
        let id = id.unwrap_or_else(|| format!("gw-{}", uuid::Uuid::new_v4().simple()));
        let (events, rx) = mpsc::unbounded_channel();
        self.waiting().insert(id.clone(), Waiter { events });
        // Each chat is its own person on the gateway: its own memory and
        // history (a front end that serves several people names them with
        // `user`, `X-Hearth-Chat` or the chat).
        let message = ChannelMessage::now(NAME, id, chat, chat, text);
        (message, rx)
    }

    fn forget(&self, id: &str) {
        self.waiting().remove(id);
    }

    /// Tells the client of `message_id` about `event`; false when nobody waits.
    fn tell(&self, message_id: &str, event: Event) -> bool {
        self.waiting()
            .get(message_id)
            .is_some_and(|w| w.events.send(event).is_ok())
    }
}

/// A message's text, or what stands for it when documents came alone (the
/// history keeps no empty turn): `[sent syllabus.pdf]`.
fn sent_documents(text: &str, documents: &[hearth_core::chat::Attachment]) -> String {
    if !text.trim().is_empty() || documents.is_empty() {
        return text.to_string();
    }
    let names: Vec<&str> = documents.iter().map(|d| d.name.as_str()).collect();
    format!("[sent {}]", names.join(", "))
}

/// A question as clients read it.
fn question(q: &ApprovalRequest) -> serde_json::Value {
    serde_json::json!({
        "id": q.id,
        "tool": q.tool,
        "arguments": q.arguments,
        "expires_in_secs": q.timeout.as_secs(),
    })
}

/// The id prefix of messages whose request named an `Idempotency-Key`.
const KEYED: &str = "gw-key-";

pub struct GatewayChannel {
    listen: SocketAddr,
    shared: Arc<Shared>,
    metrics: Option<Arc<Metrics>>,
    /// The local model served as itself to OpenAI clients.
    served: Option<Arc<dyn ServedModel>>,
    /// The socket [`GatewayChannel::bind_now`] took at start, used by the
    /// first listen; a restarted listener binds again.
    bound_at_start: Mutex<Option<std::net::TcpListener>>,
}

/// The listen address could not be taken at start.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {addr}: {source}; {fix}")]
pub struct BindError {
    addr: SocketAddr,
    source: std::io::Error,
    fix: &'static str,
}

impl GatewayChannel {
    /// The gateway the daemon's settings describe.
    pub fn new(settings: GatewaySettings) -> Self {
        Self {
            listen: settings.listen,
            shared: Arc::new(Shared {
                guard: guard::Guard::new(&settings),
                reply_timeout: settings.reply_timeout,
                request_timeout: settings.request_timeout,
                max_connections: settings.max_connections,
                ws_ping: settings.ws_ping,
                sockets: std::sync::atomic::AtomicUsize::new(0),
                waiting: Mutex::default(),
                parked: Mutex::default(),
                questions: Questions::default(),
                bound: watch::Sender::new(None),
                desk: std::sync::OnceLock::new(),
                calendar: std::sync::OnceLock::new(),
            }),
            metrics: None,
            served: None,
            bound_at_start: Mutex::new(None),
        }
    }

    /// Binds the listen address now, so that a taken port stops the start
    /// with the fix instead of being retried in the background.
    pub fn bind_now(self) -> Result<Self, BindError> {
        let addr = self.listen;
        let bound = std::net::TcpListener::bind(addr)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|source| BindError {
                fix: match source.kind() {
                    std::io::ErrorKind::AddrInUse => "another program (perhaps another hearth) has that port: stop it, or set `[channels.gateway] listen` to a free port",
                    std::io::ErrorKind::PermissionDenied => "ports below 1024 need privileges: set `[channels.gateway] listen` to a port above 1024",
                    _ => "set `[channels.gateway] listen` to an address of this machine",
                },
                addr,
                source,
            })?;
        *self
            .bound_at_start
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(bound);
        Ok(self)
    }

    /// Serves `metrics` at `GET /metrics` (behind the same guard).
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Serves `model` as itself on the OpenAI-compatible API, beside the
    /// assistant.
    pub fn with_served_model(mut self, model: Arc<dyn ServedModel>) -> Self {
        self.served = Some(model);
        self
    }

    /// Gives the web page what it reads (conversations, the box); the
    /// first desk attached stays.
    pub fn attach_desk(&self, desk: Arc<dyn Desk>) {
        if self.shared.desk.set(desk).is_err() {
            tracing::warn!("the gateway's page already has a desk; keeping the first");
        }
    }

    /// Serves the calendar feed (`/cal/<secret>.ics`); the first attached
    /// stays.
    pub fn attach_calendar(&self, calendar: Arc<dyn CalendarFeed>) {
        if self.shared.calendar.set(calendar).is_err() {
            tracing::warn!("the gateway already has a calendar feed; keeping the first");
        }
    }

    /// Questions whose client has yet to come back for what followed
    /// (`POST /v1/approval`).
    pub fn parked_questions(&self) -> usize {
        self.shared.parked().len()
    }

    /// The web page's address, as a person types it: the port taken at
    /// start (port 0 picks a free one), and this machine's loopback for an
    /// address that listens on every interface.
    pub fn page_url(&self) -> String {
        let taken = self
            .bound_at_start
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|l| l.local_addr().ok());
        page_url(taken.unwrap_or(self.listen))
    }

    /// The address it listens on, once it does (port 0 picks a free one).
    pub async fn local_addr(&self) -> SocketAddr {
        let mut bound = self.shared.bound.subscribe();
        loop {
            if let Some(addr) = *bound.borrow_and_update() {
                return addr;
            }
            if bound.changed().await.is_err() {
                return self.listen;
            }
        }
    }
}

impl Channel for GatewayChannel {
    fn name(&self) -> &str {
        NAME
    }

    fn send<'a>(&'a self, message: &'a SendMessage) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let waiter = message
                .in_reply_to
                .as_deref()
                .and_then(|id| self.shared.waiting().remove(id));
            match waiter {
                Some(w) => w
                    .events
                    .send(Event::Reply(message.content.clone()))
                    .map_err(|_| {
                        ChannelError::Rejected("the client stopped waiting for this reply".into())
                    }),
                // The client went away; the inbox keeps the reply for its
                // retry with the same Idempotency-Key.
                None if message
                    .in_reply_to
                    .as_deref()
                    .is_some_and(|id| id.starts_with(KEYED)) =>
                {
                    Ok(())
                }
                None => Err(ChannelError::Rejected(format!(
                    "no request is waiting in chat `{}`; the gateway only answers requests",
                    message.recipient
                ))),
            }
        })
    }

    fn listen(&self, intake: Intake) -> BoxFuture<'_, Result<(), ChannelError>> {
        let bound = self
            .bound_at_start
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        Box::pin(http::serve(
            self.listen,
            bound,
            self.shared.clone(),
            intake,
            self.metrics.clone(),
            self.served.clone(),
        ))
    }

    fn unanswered<'a>(&'a self, message: &'a ChannelMessage) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Some(w) = self.shared.waiting().remove(&message.id) {
                let _ = w.events.send(Event::Stopped);
            }
            self.shared
                .parked()
                .retain(|_, p| p.message_id != message.id);
        })
    }

    fn ask_approval<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<Option<Answer>, ChannelError>> {
        Box::pin(async move {
            let ticket = self.shared.questions.ask(request);
            if !self.shared.tell(
                &request.message_id,
                Event::Question(Box::new(request.clone())),
            ) {
                return Err(ChannelError::Rejected(
                    "the client stopped waiting for this message".into(),
                ));
            }
            let answer = ticket.wait().await;
            if answer.is_none() {
                // Unanswered: nobody will collect what follows.
                self.shared.parked().remove(&request.id);
                self.shared.forget(&request.message_id);
            }
            Ok(answer)
        })
    }

    fn answered_elsewhere(&self, id: &str, answer: Answer) -> bool {
        if !self.shared.questions.settle(id, answer) {
            return false;
        }
        if let Some(parked) = self.shared.parked().get_mut(id) {
            parked.on_page = Some(answer);
        }
        true
    }

    fn policy(&self) -> ChannelPolicy {
        ChannelPolicy {
            // Requests queue: each client waits for its own answer.
            interrupt_on_new_message: false,
            // The reply's events go to the message's own client: a
            // WebSocket or a streamed completion shows them, a plain
            // request waits for the reply alone.
            show_tool_calls: true,
            stream_replies: true,
            // One token, any chat name.
            one_credential: true,
        }
    }

    fn stream(&self) -> Option<&dyn ReplyStream> {
        Some(self)
    }
}

/// Each event goes to the client waiting for its message, if one still is.
impl ReplyStream for GatewayChannel {
    fn event<'a>(&'a self, message_id: &'a str, event: &'a ReplyEvent) -> BoxFuture<'a, ()> {
        let told = match event {
            ReplyEvent::Text(piece) => Some(Event::Text(piece.clone())),
            ReplyEvent::Reasoning => Some(Event::Reasoning),
            ReplyEvent::ToolStarted { name, .. } => Some(Event::Tool(name.clone())),
            ReplyEvent::ToolFinished { .. } => None,
            ReplyEvent::Round { usage, finish } => Some(Event::Round {
                usage: *usage,
                finish: *finish,
            }),
        };
        if let Some(told) = told {
            self.shared.tell(message_id, told);
        }
        Box::pin(async {})
    }
}

/// The next event a plain request answers with: drafts and tool notices
/// are for streaming clients.
async fn settled(events: &mut tokio::sync::mpsc::UnboundedReceiver<Event>) -> Option<Event> {
    loop {
        match events.recv().await? {
            Event::Text(_) | Event::Reasoning | Event::Tool(_) | Event::Round { .. } => continue,
            event => return Some(event),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_ids_of_different_chats_never_meet() {
        assert_ne!(Shared::keyed_id("a", "b-c"), Shared::keyed_id("a-b", "c"));
        assert_eq!(
            Shared::keyed_id("a", "k"),
            Shared::keyed_id("a", "k"),
            "a retry finds its record"
        );
    }
}
