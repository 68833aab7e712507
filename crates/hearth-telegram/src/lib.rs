//! The Telegram channel: a personal assistant in Telegram, over the Bot API
//! with teloxide and long polling.
//!
//! - [`listen`]: `getUpdates` with a persisted offset; strangers get one
//!   polite refusal; photos and documents arrive as workspace markers.
//! - [`outbound`]: replies split at 4,096 UTF-16 units, HTML with a plain-text
//!   fallback, media markers sent as files, 429s waited out.
//! - [`drafts`]: a streaming reply edited in place, throttled.
//! - [`approvals`]: may a tool call run? Inline buttons, answered by the
//!   person who asked.
//!
//! Tests run it against a fake Bot API server (`tests/support/telegram_fake.rs`).

mod allowlist;
mod approvals;
mod drafts;
mod error;
mod format;
mod inbound;
mod listen;
mod media;
mod offset;
mod outbound;
mod reactions;
mod settings;
mod split;

use std::collections::HashSet;
use std::future::IntoFuture;
use std::sync::Mutex;
use std::time::Duration;

use teloxide::payloads::{SendChatActionSetters, SetMessageReactionSetters};
use teloxide::prelude::{Bot, Requester};
use teloxide::types::{ChatAction, ReactionType};

pub use allowlist::Allowlist;
pub use error::TelegramError;
pub use inbound::INBOX;
pub use settings::TelegramSettings;
pub use split::{MAX_MESSAGE_UTF16, split_message, utf16_len};

use error::channel_error;
use futures::future::BoxFuture;
use hearth_channel::StreamMode;
use hearth_channel::{
    Channel, ChannelError, ChannelPolicy, Drafts, Intake, Presence, SendJournal, SendMessage,
    Unrecorded,
};

/// The channel's name, and its folder in the workspace.
pub const NAME: &str = "telegram";
use outbound::{Target, parse_message_id};

pub struct TelegramChannel {
    bot: Bot,
    settings: TelegramSettings,
    offset: tokio::sync::Mutex<offset::OffsetStore>,
    /// Strangers already told they are not allowed (one refusal each per run).
    refused: Mutex<HashSet<u64>>,
    drafts: drafts::Drafts,
    /// Approval questions waiting for a button.
    questions: hearth_channel::approval::Questions,
}

impl TelegramChannel {
    /// Builds the channel; reads the saved update offset from `state_dir`.
    pub fn new(settings: TelegramSettings) -> Result<Self, TelegramError> {
        let url = reqwest::Url::parse(&format!("{}/", settings.api_url.trim_end_matches('/')))
            .ok()
            .filter(|u| !u.cannot_be_a_base())
            .ok_or_else(|| TelegramError::BadApiUrl(settings.api_url.clone()))?;
        // teloxide's default client gives up after 17 s, even on a long poll
        // (its per-request timeout hint is not applied): leave room for one.
        let client = teloxide::net::default_reqwest_settings()
            .timeout(settings.poll_timeout + Duration::from_secs(30))
            .build()
            .map_err(|e| TelegramError::Client(e.to_string()))?;
        let bot = Bot::with_client(settings.token.expose(), client).set_api_url(url);
        let offset = offset::OffsetStore::open(&settings.state_dir)?;
        if settings.allowlist.allows_everyone() {
            tracing::warn!(
                "telegram: allowed_users contains \"*\": anyone who finds the bot can use it and its tools"
            );
        } else if settings.allowlist.is_empty() {
            tracing::warn!(
                "telegram: allowed_users is empty, so every message is refused; the refusal shows the sender's id to add"
            );
        }
        Ok(Self {
            bot,
            settings,
            offset: tokio::sync::Mutex::new(offset),
            refused: Mutex::new(HashSet::new()),
            drafts: drafts::Drafts::default(),
            questions: Default::default(),
        })
    }

    pub fn settings(&self) -> &TelegramSettings {
        &self.settings
    }

    async fn react(
        &self,
        recipient: &str,
        message_id: &str,
        emoji: Option<&str>,
    ) -> Result<(), ChannelError> {
        if !self.settings.ack_reactions {
            return Ok(());
        }
        let to = Target::parse(recipient, None)?;
        let id = parse_message_id(message_id)?;
        let reaction: Vec<ReactionType> = emoji
            .map(|e| ReactionType::Emoji {
                emoji: reactions::telegram_reaction(e).to_string(),
            })
            .into_iter()
            .collect();
        self.retrying("setMessageReaction", || {
            self.bot
                .set_message_reaction(to.chat, id)
                .reaction(reaction.clone())
                .into_future()
        })
        .await
        .map(|_| ())
        .map_err(channel_error)
    }

    async fn typing(&self, recipient: &str, thread_ts: Option<&str>) -> Result<(), ChannelError> {
        let to = Target::parse(recipient, thread_ts)?;
        let mut req = self.bot.send_chat_action(to.chat, ChatAction::Typing);
        if let Some(t) = to.thread {
            req = req.message_thread_id(t);
        }
        req.into_future().await.map(|_| ()).map_err(channel_error)
    }
}

impl Channel for TelegramChannel {
    fn name(&self) -> &str {
        NAME
    }

    fn still_allows(&self, message: &hearth_channel::ChannelMessage) -> bool {
        message
            .sender
            .parse()
            .is_ok_and(|id| self.settings.allowlist.may_allow_id(id))
    }

    fn send<'a>(&'a self, message: &'a SendMessage) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(self.send_parts(message, None, &Unrecorded))
    }

    fn send_recorded<'a>(
        &'a self,
        message: &'a SendMessage,
        draft: Option<&'a str>,
        journal: &'a dyn SendJournal,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(self.send_parts(message, draft, journal))
    }

    fn listen(&self, intake: Intake) -> BoxFuture<'_, Result<(), ChannelError>> {
        Box::pin(self.poll(intake))
    }

    fn send_voice<'a>(
        &'a self,
        to: &'a SendMessage,
        ogg: Vec<u8>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(self.voice_note(to, ogg))
    }

    fn policy(&self) -> ChannelPolicy {
        ChannelPolicy {
            interrupt_on_new_message: self.settings.interrupt_on_new_message,
            show_tool_calls: self.settings.show_tool_calls,
            stream_replies: self.settings.stream_mode == StreamMode::Partial,
            one_credential: false,
        }
    }

    fn ask_approval<'a>(
        &'a self,
        request: &'a hearth_channel::ApprovalRequest,
    ) -> BoxFuture<'a, Result<Option<hearth_channel::Answer>, ChannelError>> {
        Box::pin(self.ask(request))
    }

    fn answered_elsewhere(&self, id: &str, answer: hearth_channel::Answer) -> bool {
        self.questions.settle(id, answer)
    }

    fn health_check(&self) -> BoxFuture<'_, bool> {
        Box::pin(async { self.bot.get_me().into_future().await.is_ok() })
    }

    fn shows(&self) -> &'static str {
        "Telegram: Markdown (bold, italics, code, links) is shown formatted; short paragraphs read best; send a workspace file with [IMAGE:path], [DOCUMENT:path] or [VOICE:path]"
    }

    fn drafts(&self) -> Option<&dyn Drafts> {
        Some(self)
    }

    fn presence(&self) -> Option<&dyn Presence> {
        Some(self)
    }
}

impl Drafts for TelegramChannel {
    fn send_draft<'a>(
        &'a self,
        message: &'a SendMessage,
    ) -> BoxFuture<'a, Result<String, ChannelError>> {
        Box::pin(self.start_draft(message))
    }

    fn update_draft<'a>(
        &'a self,
        recipient: &'a str,
        draft_id: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(self.edit_draft(recipient, draft_id, text))
    }

    fn finalize_draft<'a>(
        &'a self,
        recipient: &'a str,
        draft_id: &'a str,
        message: &'a SendMessage,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let mut message = message.clone();
            message.recipient = recipient.to_string();
            self.send_parts(&message, Some(draft_id), &Unrecorded).await
        })
    }

    fn cancel_draft<'a>(
        &'a self,
        recipient: &'a str,
        draft_id: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(self.drop_draft(recipient, draft_id))
    }
}

impl Presence for TelegramChannel {
    fn start_typing<'a>(
        &'a self,
        recipient: &'a str,
        thread_ts: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(self.typing(recipient, thread_ts))
    }

    fn add_reaction<'a>(
        &'a self,
        recipient: &'a str,
        message_id: &'a str,
        emoji: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(self.react(recipient, message_id, Some(emoji)))
    }

    fn remove_reaction<'a>(
        &'a self,
        recipient: &'a str,
        message_id: &'a str,
        _emoji: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(self.react(recipient, message_id, None))
    }
}
