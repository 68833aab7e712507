//! Long polling: `getUpdates` with a persisted offset, updates turned into
//! [`ChannelMessage`]s, strangers refused; button presses answer
//! approval questions.
//!
//! Each update is acknowledged (the offset raised and saved) only after the
//! intake accepted it (recorded in the durable inbox) or it was deliberately
//! dropped, so a crash or a network failure replays at most the update in
//! hand, the inbox recognises it when it comes again, and a restart loses
//! nothing.

use std::future::IntoFuture;

use teloxide::RequestError;
use teloxide::payloads::GetUpdatesSetters;
use teloxide::prelude::Requester;
use teloxide::types::{AllowedUpdate, Message, Update, UpdateKind};

use super::TelegramChannel;
use super::error::channel_error;
use super::inbound::Addressing;
use super::outbound::Target;
use hearth_channel::{ChannelError, ChannelMessage, Intake};

/// What became of one update.
enum Handled {
    /// Accepted, or deliberately dropped: acknowledge it.
    Done,
    /// The intake closed before taking it: the daemon is stopping.
    Closed,
}

impl TelegramChannel {
    pub(super) async fn poll(&self, intake: Intake) -> Result<(), ChannelError> {
        // One listener at a time per channel; the offset is its state.
        let mut offset = self.offset.lock().await;
        self.bot
            .delete_webhook()
            .into_future()
            .await
            .map_err(channel_error)?;
        let me = self
            .bot
            .get_me()
            .into_future()
            .await
            .map_err(channel_error)?;
        let addressing = Addressing {
            bot_id: me.user.id,
            username: me.user.username.clone(),
        };
        tracing::info!(
            "telegram: listening as @{} from update {}",
            addressing.username.as_deref().unwrap_or("?"),
            offset.next()
        );
        let timeout = self.settings.poll_timeout.as_secs().min(u32::MAX as u64) as u32;
        loop {
            if intake.is_closed() {
                return Ok(());
            }
            let request = self
                .bot
                .get_updates()
                .offset(offset.next().clamp(0, i32::MAX as i64) as i32)
                .timeout(timeout)
                .allowed_updates([AllowedUpdate::Message, AllowedUpdate::CallbackQuery]);
            let updates = match request.into_future().await {
                Ok(updates) => updates,
                Err(RequestError::RetryAfter(wait)) => {
                    tracing::warn!("telegram: getUpdates rate-limited for {}s", wait.seconds());
                    tokio::time::sleep(wait.duration()).await;
                    continue;
                }
                Err(e) => return Err(channel_error(e)),
            };
            for update in updates {
                let id = i64::from(update.id.0);
                if id < offset.next() {
                    continue;
                }
                if let Handled::Closed = self.handle(update, &addressing, &intake).await? {
                    return Ok(());
                }
                offset.confirm(id).map_err(|e| {
                    ChannelError::Other(format!("cannot save the Telegram update offset: {e}"))
                })?;
            }
        }
    }

    /// Hands what `update` carries to the intake, if anything.
    async fn handle(
        &self,
        update: Update,
        addressing: &Addressing,
        intake: &Intake,
    ) -> Result<Handled, ChannelError> {
        let message = match update.kind {
            UpdateKind::Message(m) => m,
            UpdateKind::CallbackQuery(query) => {
                self.on_button(query).await;
                return Ok(Handled::Done);
            }
            other => {
                tracing::debug!(
                    update = update.id.0,
                    "telegram: ignoring an update of another kind: {other:?}"
                );
                return Ok(Handled::Done);
            }
        };
        let Some(incoming) = self.accept(&message, addressing).await? else {
            return Ok(Handled::Done);
        };
        Ok(match intake.accept(incoming).await {
            Ok(_) => Handled::Done,
            Err(_) => Handled::Closed,
        })
    }

    /// The message for the bus, or `None` for one that is not for us.
    async fn accept(
        &self,
        message: &Message,
        addressing: &Addressing,
    ) -> Result<Option<ChannelMessage>, ChannelError> {
        let Some(user) = message.from.as_ref() else {
            tracing::debug!("telegram: ignoring a message without a sender");
            return Ok(None);
        };
        if user.is_bot {
            return Ok(None);
        }
        let group = message.chat.is_group() || message.chat.is_supergroup();
        let raw_text = message.text().or(message.caption()).unwrap_or_default();
        let text = if group && self.settings.mention_only {
            match addressing.strip(message, raw_text) {
                Some(text) => text,
                None => {
                    tracing::debug!(
                        chat = message.chat.id.0,
                        "telegram: group message not addressed to the bot"
                    );
                    return Ok(None);
                }
            }
        } else {
            addressing.strip_command_suffix(raw_text.trim())
        };
        if !self
            .settings
            .allowlist
            .allows(user.id.0, user.username.as_deref())
        {
            self.refuse(message, user.id.0, user.username.as_deref())
                .await;
            return Ok(None);
        }
        // A forwarded message is somebody else's words: fenced as data.
        let text = match message.forward_origin() {
            Some(_) if !text.is_empty() => hearth_core::fence::fence("forwarded message", &text),
            _ => text,
        };
        let attached = self.receive_media(message).await?;
        let media = attached.note;
        let content = match (media.is_empty(), text.is_empty()) {
            (true, true) if attached.images.is_empty() && attached.audio.is_none() => {
                tracing::debug!(
                    message = message.id.0,
                    "telegram: ignoring a message with neither text nor a photo or document"
                );
                return Ok(None);
            }
            (true, _) => text,
            (false, true) => media,
            (false, false) => format!("{media}\n{text}"),
        };
        let chat = message.chat.id.0;
        let thread = message.thread_id.map(|t| t.0.0.to_string());
        Ok(Some(ChannelMessage {
            id: format!("{chat}:{}", message.id.0),
            sender: user.id.0.to_string(),
            reply_target: chat.to_string(),
            content,
            channel: super::NAME.to_string(),
            timestamp: message.date.timestamp().max(0) as u64,
            interruption_scope_id: Some(match &thread {
                Some(t) => format!("{chat}:{t}"),
                None => chat.to_string(),
            }),
            thread_ts: thread,
            initiator: Default::default(),
            asked: None,
            images: attached.images,
            audio: attached.audio,
            documents: Vec::new(),
        }))
    }

    /// One polite refusal per stranger (per run), showing the id to allow.
    async fn refuse(&self, message: &Message, user_id: u64, username: Option<&str>) {
        tracing::warn!(
            user_id,
            username = username.unwrap_or(""),
            chat = message.chat.id.0,
            "telegram: message from a user not in allowed_users dropped"
        );
        let first_time = self
            .refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(user_id);
        if !first_time {
            return;
        }
        let to = Target {
            chat: message.chat.id,
            thread: message.thread_id,
        };
        let text = format!(
            "Sorry, this is a private assistant and I can only talk to people its owner has allowed.\n\
             Your Telegram user id is {user_id}. If you know the owner, ask them to add it to allowed_users."
        );
        if let Err(e) = self.post(to, &text, None).await {
            tracing::warn!("telegram: could not send the refusal to {user_id}: {e}");
        }
    }
}
