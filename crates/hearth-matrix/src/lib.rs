//! The Matrix channel: a personal assistant in the rooms of a homeserver
//! (Synapse, Conduit), through the official Rust SDK with end-to-end
//! encryption, since Element encrypts new rooms by default.
//!
//! - [`client`]: login with a password or an access token; the session and
//!   the encryption keys kept in the data folder and used again.
//! - [`listen`]: sync; invites taken from allowed people only; each new
//!   message of an allowed person to the inbox ([`inbound`]: text,
//!   pictures, voice, files), and only then the sync token kept.
//! - [`verify`]: the bot's device cross-signed by its account.
//! - [`outbound`] and [`approvals`]: replies in the room (and thread), one
//!   transaction each; approval questions answered by reaction.
//!
//! Tests run it against the real Synapse with the SDK as the person's
//! client, in an encrypted room (`tests/matrix.rs`).

mod approvals;
mod client;
mod error;
mod inbound;
mod listen;
mod outbound;
mod probe;
mod settings;
mod state;
mod verify;

use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;
use hearth_channel::approval::Questions;
use hearth_channel::{
    Answer, ApprovalRequest, Channel, ChannelError, ChannelMessage, ChannelPolicy, Intake,
    Presence, SendMessage,
};
use matrix_sdk::ruma::events::room::message::RoomMessageEventContent;

pub use error::MatrixError;
pub use probe::fix;
pub use settings::{Login, MatrixSettings};
pub use state::describe;

/// The channel's name, and its folder in the data folder.
pub const NAME: &str = "matrix";

pub struct MatrixChannel {
    settings: MatrixSettings,
    state: state::State,
    /// The logged-in client, once there is one.
    client: tokio::sync::Mutex<Option<matrix_sdk::Client>>,
    questions: Questions,
    asked: approvals::Asked,
    /// Whether the last sync succeeded.
    healthy: AtomicBool,
    /// Whether this run looked at the device's cross-signing.
    signed: AtomicBool,
}

impl MatrixChannel {
    /// Builds the channel; opens its state folder. Nothing is sent to the
    /// homeserver until it listens.
    pub fn new(settings: MatrixSettings) -> Result<Self, MatrixError> {
        let state = state::State::open(&settings.state_dir)?;
        if settings.allowed_users.is_empty() {
            tracing::warn!("matrix: allowed_users is empty, so every message is ignored");
        }
        Ok(Self {
            settings,
            state,
            client: tokio::sync::Mutex::new(None),
            questions: Questions::default(),
            asked: approvals::Asked::default(),
            healthy: AtomicBool::new(false),
            signed: AtomicBool::new(false),
        })
    }

    pub fn settings(&self) -> &MatrixSettings {
        &self.settings
    }

    /// The joined room `id`, for sending.
    async fn room(&self, id: &str) -> Result<matrix_sdk::Room, ChannelError> {
        let client = self.client().await.map_err(ChannelError::from)?;
        let room_id = <&matrix_sdk::ruma::RoomId>::try_from(id)
            .map_err(|_| ChannelError::from(MatrixError::NoRoom(id.to_string())))?;
        client
            .get_room(room_id)
            .filter(|r| r.state() == matrix_sdk::RoomState::Joined)
            .ok_or_else(|| MatrixError::NoRoom(id.to_string()).into())
    }
}

impl Channel for MatrixChannel {
    fn name(&self) -> &str {
        NAME
    }

    fn send<'a>(&'a self, message: &'a SendMessage) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let room = self.room(&message.recipient).await?;
            let content = outbound::in_thread(
                RoomMessageEventContent::text_plain(&message.content),
                message.thread_ts.as_deref(),
            );
            room.send(content)
                .with_transaction_id(outbound::transaction(message))
                .await
                .map(|_| ())
                .map_err(error::send_error)
        })
    }

    fn listen(&self, intake: Intake) -> BoxFuture<'_, Result<(), ChannelError>> {
        Box::pin(async move {
            let result = self.listen_once(&intake).await;
            self.healthy.store(false, Ordering::Relaxed);
            result.map_err(|e| {
                tracing::warn!("matrix: {e}");
                ChannelError::from(e)
            })
        })
    }

    fn still_allows(&self, message: &ChannelMessage) -> bool {
        self.settings.allows(&message.sender)
    }

    fn policy(&self) -> ChannelPolicy {
        ChannelPolicy::default()
    }

    fn ask_approval<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<Option<Answer>, ChannelError>> {
        Box::pin(self.ask(request))
    }

    fn answered_elsewhere(&self, id: &str, answer: Answer) -> bool {
        self.questions.settle(id, answer)
    }

    fn health_check(&self) -> BoxFuture<'_, bool> {
        Box::pin(async { self.healthy.load(Ordering::Relaxed) })
    }

    fn shows(&self) -> &'static str {
        "Matrix (Element): plain text; short paragraphs read best"
    }

    fn presence(&self) -> Option<&dyn Presence> {
        Some(self)
    }
}

/// "Typing…" while a reply is made. Matrix has read receipts for "seen",
/// which the listener sends; it adds no reactions of its own.
impl Presence for MatrixChannel {
    fn start_typing<'a>(
        &'a self,
        recipient: &'a str,
        _thread_ts: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let room = self.room(recipient).await?;
            room.typing_notice(true)
                .await
                .map_err(|e| MatrixError::from_sdk(&self.settings.homeserver, e).into())
        })
    }

    fn stop_typing<'a>(&'a self, recipient: &'a str) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let room = self.room(recipient).await?;
            room.typing_notice(false)
                .await
                .map_err(|e| MatrixError::from_sdk(&self.settings.homeserver, e).into())
        })
    }

    fn add_reaction<'a>(
        &'a self,
        _recipient: &'a str,
        _message_id: &'a str,
        _emoji: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async { Ok(()) })
    }
}
