//! Sending: text parts with HTML falling back to plain text, edits, media,
//! and the 429 flood-control retry every outgoing call goes through.

use std::future::{Future, IntoFuture};

use teloxide::RequestError;
use teloxide::payloads::{
    EditMessageTextSetters, SendDocumentSetters, SendMessageSetters, SendPhotoSetters,
    SendVoiceSetters,
};
use teloxide::prelude::Requester;
use teloxide::types::{ChatId, InputFile, MessageId, ParseMode, ThreadId};

use super::TelegramChannel;
use super::error::{channel_error, is_entity_error, is_not_modified};
use super::format::to_html;
use super::media::{MediaKind, OutgoingMedia, extract_media};
use super::split::{MAX_MESSAGE_UTF16, split_message};
use hearth_channel::{ChannelError, SendJournal, SendMessage};

/// Where a message goes: a chat and maybe a forum topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Target {
    pub chat: ChatId,
    pub thread: Option<ThreadId>,
}

impl Target {
    pub fn parse(recipient: &str, thread_ts: Option<&str>) -> Result<Self, ChannelError> {
        let chat = recipient.trim().parse::<i64>().map(ChatId).map_err(|_| {
            ChannelError::Rejected(format!("`{recipient}` is not a Telegram chat id"))
        })?;
        let thread = match thread_ts {
            None => None,
            Some(t) => Some(ThreadId(MessageId(t.trim().parse::<i32>().map_err(
                |_| ChannelError::Rejected(format!("`{t}` is not a Telegram topic id")),
            )?))),
        };
        Ok(Self { chat, thread })
    }
}

/// The message id in a [`hearth_channel::ChannelMessage::id`] (`chat:message`) or a bare id.
pub(super) fn parse_message_id(id: &str) -> Result<MessageId, ChannelError> {
    id.rsplit(':')
        .next()
        .and_then(|m| m.trim().parse::<i32>().ok())
        .map(MessageId)
        .ok_or_else(|| ChannelError::Rejected(format!("`{id}` is not a Telegram message id")))
}

impl TelegramChannel {
    /// Runs `call` until it is not rate-limited: each 429 waits its
    /// `retry_after`, up to the configured number of retries. A 429 means
    /// Telegram did not act, so a retry never delivers twice.
    pub(super) async fn retrying<T, F, Fut>(
        &self,
        what: &str,
        mut call: F,
    ) -> Result<T, RequestError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, RequestError>>,
    {
        let mut retries = 0;
        loop {
            match call().await {
                Err(RequestError::RetryAfter(wait))
                    if retries < self.settings.max_rate_limit_retries =>
                {
                    retries += 1;
                    tracing::warn!(
                        "telegram: {what} rate-limited, retrying in {}s ({retries}/{})",
                        wait.seconds(),
                        self.settings.max_rate_limit_retries
                    );
                    tokio::time::sleep(wait.duration()).await;
                }
                other => return other,
            }
        }
    }

    /// Sends `message` as numbered parts against `journal`: the text split
    /// at 4,096 units, then each file. Parts the journal has are skipped;
    /// each other part is recorded once it arrived. With a
    /// `draft`, the first part replaces the draft's text (an edit, which
    /// lands once however often it is repeated).
    pub(super) async fn send_parts(
        &self,
        message: &SendMessage,
        draft: Option<&str>,
        journal: &dyn SendJournal,
    ) -> Result<(), ChannelError> {
        let to = Target::parse(&message.recipient, message.thread_ts.as_deref())?;
        let (text, media) =
            extract_media(&message.content, &self.settings.folder(&message.recipient));
        let parts = split_message(&text, MAX_MESSAGE_UTF16);
        if let Some(draft) = draft
            && parts.is_empty()
        {
            // Nothing to show in the draft: it goes.
            return self.drop_draft(&message.recipient, draft).await;
        }
        for (index, part) in parts.iter().enumerate() {
            if journal.delivered(index).is_some() {
                continue;
            }
            if index == 0
                && let Some(draft) = draft
                && self.finish_draft(to, draft, part).await?
            {
                journal.sent(0, draft);
                continue;
            }
            let id = self.send_part(to, part).await?;
            journal.sent(index, &id.0.to_string());
        }
        for (n, item) in media.iter().enumerate() {
            let index = parts.len() + n;
            if journal.delivered(index).is_some() {
                continue;
            }
            let id = self.send_file(to, item).await?;
            journal.sent(index, &id.0.to_string());
        }
        Ok(())
    }

    /// One part of at most 4,096 units: as HTML, or plain if Telegram refuses the HTML.
    pub(super) async fn send_part(
        &self,
        to: Target,
        part: &str,
    ) -> Result<MessageId, ChannelError> {
        let html = to_html(part);
        match self.post(to, &html, Some(ParseMode::Html)).await {
            Err(e) if is_entity_error(&e) => {
                tracing::info!("telegram: formatting refused ({e}); sending plain text");
                self.post(to, part, None).await.map_err(channel_error)
            }
            other => other.map_err(channel_error),
        }
    }

    /// `sendMessage`, retried on 429.
    pub(super) async fn post(
        &self,
        to: Target,
        text: &str,
        mode: Option<ParseMode>,
    ) -> Result<MessageId, RequestError> {
        self.retrying("sendMessage", || {
            let mut req = self.bot.send_message(to.chat, text);
            if let Some(mode) = mode {
                req = req.parse_mode(mode);
            }
            if let Some(thread) = to.thread {
                req = req.message_thread_id(thread);
            }
            req.into_future()
        })
        .await
        .map(|m| m.id)
    }

    /// Replaces a message's text with `text` (at most one part), formatted if
    /// Telegram accepts it. An edit that changes nothing counts as done.
    pub(super) async fn edit_part(
        &self,
        chat: ChatId,
        id: MessageId,
        text: &str,
        formatted: bool,
    ) -> Result<(), ChannelError> {
        let attempt = |body: String, mode: Option<ParseMode>| {
            self.retrying("editMessageText", move || {
                let mut req = self.bot.edit_message_text(chat, id, body.clone());
                if let Some(mode) = mode {
                    req = req.parse_mode(mode);
                }
                req.into_future()
            })
        };
        let result = if formatted {
            match attempt(to_html(text), Some(ParseMode::Html)).await {
                Err(e) if is_entity_error(&e) => {
                    tracing::info!("telegram: formatting refused ({e}); editing as plain text");
                    attempt(text.to_string(), None).await
                }
                other => other,
            }
        } else {
            attempt(text.to_string(), None).await
        };
        match result {
            Ok(_) => Ok(()),
            Err(e) if is_not_modified(&e) => Ok(()),
            Err(e) => Err(channel_error(e)),
        }
    }

    /// Sends a voice note made in memory (a spoken reply).
    pub(super) async fn voice_note(
        &self,
        to: &SendMessage,
        ogg: Vec<u8>,
    ) -> Result<(), ChannelError> {
        let target = Target::parse(&to.recipient, to.thread_ts.as_deref())?;
        self.retrying("sendVoice", || {
            let mut req = self.bot.send_voice(
                target.chat,
                InputFile::memory(ogg.clone()).file_name("reply.ogg"),
            );
            if let Some(t) = target.thread {
                req = req.message_thread_id(t);
            }
            req.into_future()
        })
        .await
        .map(|_| ())
        .map_err(channel_error)
    }

    /// Sends one file as a photo, document or voice message.
    async fn send_file(&self, to: Target, item: &OutgoingMedia) -> Result<MessageId, ChannelError> {
        let file = || InputFile::file(item.path.clone());
        let sent = match item.kind {
            MediaKind::Image => {
                self.retrying("sendPhoto", || {
                    let mut req = self.bot.send_photo(to.chat, file());
                    if let Some(t) = to.thread {
                        req = req.message_thread_id(t);
                    }
                    req.into_future()
                })
                .await
            }
            MediaKind::Document => {
                self.retrying("sendDocument", || {
                    let mut req = self.bot.send_document(to.chat, file());
                    if let Some(t) = to.thread {
                        req = req.message_thread_id(t);
                    }
                    req.into_future()
                })
                .await
            }
            MediaKind::Voice => {
                self.retrying("sendVoice", || {
                    let mut req = self.bot.send_voice(to.chat, file());
                    if let Some(t) = to.thread {
                        req = req.message_thread_id(t);
                    }
                    req.into_future()
                })
                .await
            }
        };
        sent.map(|m| m.id).map_err(channel_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recipients_and_ids_parse_or_are_refused() {
        let t = Target::parse("-1001", Some("7")).unwrap();
        assert_eq!(t.chat, ChatId(-1001));
        assert_eq!(t.thread, Some(ThreadId(MessageId(7))));
        assert!(Target::parse("@someone", None).is_err());
        assert_eq!(parse_message_id("-1001:42").unwrap(), MessageId(42));
        assert_eq!(parse_message_id("42").unwrap(), MessageId(42));
        assert!(parse_message_id("x").is_err());
    }
}
