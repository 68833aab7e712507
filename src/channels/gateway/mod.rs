//! The HTTP gateway: the assistant as a small JSON API on the home network,
//! for scripts, home automation or a phone shortcut.
//!
//! `POST /v1/message` with `{"text": "...", "chat": "kitchen"}` puts the
//! message on the bus like any other channel's and answers with the reply
//! once the pipeline sends it (`{"reply": "..."}`). Conversations are kept
//! per chat (and sender), so a chat has history like a Telegram chat.
//! A request whose message ends without a reply (`/stop`, a hook,
//! shutdown) gets `(stopped)`. `GET /health` says whether the daemon is up.
//! [`guard`] checks every request before its body is read (host, origin,
//! token, content type); [`connections`] keeps slow clients from holding
//! every connection.
//!
//! A person here is the token plus the chat: everyone holding the token is
//! one sender (`token`, or `loopback` where no token is required), and each
//! `chat` is a conversation of its own with its own history, memory,
//! workspace and jobs.

mod connections;
mod guard;
mod http;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

use super::{Channel, ChannelError, ChannelMessage, ChannelPolicy, SendMessage};
use crate::config::GatewayConfig;
use crate::tools::BoxFuture;

pub const NAME: &str = "gateway";

/// A request waiting for its reply.
struct Waiter {
    reply: oneshot::Sender<String>,
}

/// What the channel and its HTTP handlers share.
struct Shared {
    guard: guard::Guard,
    reply_timeout: Duration,
    request_timeout: Duration,
    max_connections: usize,
    /// By message id.
    waiting: Mutex<HashMap<String, Waiter>>,
    /// The address listened on, once bound.
    bound: watch::Sender<Option<SocketAddr>>,
}

impl Shared {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiter>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new message from a request, and the receiver of its reply.
    fn admit(&self, chat: &str, text: &str) -> (ChannelMessage, oneshot::Receiver<String>) {
        // Unique across restarts: memories are saved under message ids.
        let id = format!("gw-{}", uuid::Uuid::new_v4().simple());
        let sender = if self.guard.token().is_some() {
            "token"
        } else {
            "loopback"
        };
        let (reply, rx) = oneshot::channel();
        self.waiting().insert(id.clone(), Waiter { reply });
        let message = ChannelMessage {
            id,
            sender: sender.to_string(),
            reply_target: chat.to_string(),
            content: text.to_string(),
            channel: NAME.to_string(),
            timestamp: chrono::Utc::now().timestamp().max(0) as u64,
            thread_ts: None,
            interruption_scope_id: None,
            initiator: Default::default(),
        };
        (message, rx)
    }

    fn forget(&self, id: &str) {
        self.waiting().remove(id);
    }
}

pub struct GatewayChannel {
    listen: SocketAddr,
    shared: Arc<Shared>,
}

impl GatewayChannel {
    /// The gateway `config` describes; `None` when it is off.
    pub fn from_config(config: &GatewayConfig) -> Option<Self> {
        Some(Self {
            listen: config.listen?,
            shared: Arc::new(Shared {
                guard: guard::Guard::new(config),
                reply_timeout: Duration::from_secs(config.reply_timeout_secs),
                request_timeout: Duration::from_secs(config.request_timeout_secs),
                max_connections: config.max_connections,
                waiting: Mutex::default(),
                bound: watch::Sender::new(None),
            }),
        })
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
                Some(w) => w.reply.send(message.content.clone()).map_err(|_| {
                    ChannelError::Rejected("the client stopped waiting for this reply".into())
                }),
                None => Err(ChannelError::Rejected(format!(
                    "no request is waiting in chat `{}`; the gateway only answers requests",
                    message.recipient
                ))),
            }
        })
    }

    fn listen(&self, tx: mpsc::Sender<ChannelMessage>) -> BoxFuture<'_, Result<(), ChannelError>> {
        Box::pin(http::serve(self.listen, self.shared.clone(), tx))
    }

    fn unanswered<'a>(&'a self, message: &'a ChannelMessage) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Some(w) = self.shared.waiting().remove(&message.id) {
                let _ = w.reply.send("(stopped)".to_string());
            }
        })
    }

    fn policy(&self) -> ChannelPolicy {
        ChannelPolicy {
            // Requests queue: each client waits for its own answer.
            interrupt_on_new_message: false,
            show_tool_calls: false,
            stream_drafts: false,
        }
    }
}
