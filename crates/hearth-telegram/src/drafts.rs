//! Draft streaming: the reply grows in one message edited in place.
//!
//! The pipeline calls `update_draft` for every new piece of text; the channel
//! edits at most once per `draft_update_interval_ms` (counted from the end of
//! the previous edit, so Telegram never sees two edits closer than that) and
//! never with unchanged text. Media markers do not show while streaming (the
//! files follow the final text). The final reply's first part replaces the
//! draft, formatted; further parts and media follow as new messages
//! (`send_parts`).

use std::collections::HashMap;
use std::future::IntoFuture;
use std::sync::Mutex;

use teloxide::prelude::Requester;
use teloxide::types::{ChatId, MessageId};
use tokio::time::Instant;

use super::TelegramChannel;
use super::error::channel_error;
use super::media::draft_text;
use super::outbound::{Target, parse_message_id};
use super::split::{MAX_MESSAGE_UTF16, truncate};
use hearth_channel::{ChannelError, SendMessage};

/// What a draft shows now and when it last changed.
#[derive(Debug)]
struct Draft {
    shown: String,
    last_edit: Instant,
}

/// Open drafts, by `chat:message`.
#[derive(Debug, Default)]
pub(super) struct Drafts(Mutex<HashMap<String, Draft>>);

impl Drafts {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Draft>) -> T) -> T {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut map)
    }
}

fn key(chat: ChatId, id: MessageId) -> String {
    format!("{}:{}", chat.0, id.0)
}

impl TelegramChannel {
    pub(super) async fn start_draft(&self, message: &SendMessage) -> Result<String, ChannelError> {
        let to = Target::parse(&message.recipient, message.thread_ts.as_deref())?;
        let visible = draft_text(&message.content, &self.settings.folder(&message.recipient));
        let first = truncate(visible.trim(), MAX_MESSAGE_UTF16);
        let first = if first.is_empty() {
            "…".to_string()
        } else {
            first
        };
        let id = self.post(to, &first, None).await.map_err(channel_error)?;
        self.drafts.with(|d| {
            d.insert(
                key(to.chat, id),
                Draft {
                    shown: first,
                    last_edit: Instant::now(),
                },
            )
        });
        Ok(id.0.to_string())
    }

    pub(super) async fn edit_draft(
        &self,
        recipient: &str,
        draft_id: &str,
        text: &str,
    ) -> Result<(), ChannelError> {
        let to = Target::parse(recipient, None)?;
        let id = parse_message_id(draft_id)?;
        let visible = draft_text(text, &self.settings.folder(recipient));
        let shown = truncate(visible.trim(), MAX_MESSAGE_UTF16);
        if shown.is_empty() {
            return Ok(());
        }
        let interval = self.settings.draft_interval;
        let due = self.drafts.with(|d| {
            let draft = d.entry(key(to.chat, id)).or_insert_with(|| Draft {
                shown: String::new(),
                last_edit: Instant::now() - interval,
            });
            draft.shown != shown && draft.last_edit.elapsed() >= interval
        });
        if !due {
            return Ok(());
        }
        let result = self.edit_part(to.chat, id, &shown, false).await;
        self.drafts.with(|d| {
            if let Some(draft) = d.get_mut(&key(to.chat, id)) {
                if result.is_ok() {
                    draft.shown = shown;
                }
                draft.last_edit = Instant::now();
            }
        });
        result
    }

    /// Puts `first` (the reply's first part) in place of draft `draft_id`,
    /// formatted, keeping the edit spacing. `Ok(false)`: the draft is gone
    /// (deleted by the user), so the part must be sent anew.
    pub(super) async fn finish_draft(
        &self,
        to: Target,
        draft_id: &str,
        first: &str,
    ) -> Result<bool, ChannelError> {
        let id = parse_message_id(draft_id)?;
        // The final edit keeps the spacing too.
        let last = self.drafts.with(|d| d.remove(&key(to.chat, id)));
        if let Some(last) = last {
            tokio::time::sleep_until(last.last_edit + self.settings.draft_interval).await;
        }
        match self.edit_part(to.chat, id, first, true).await {
            Ok(()) => Ok(true),
            Err(ChannelError::Rejected(why)) => {
                tracing::info!("telegram: draft {draft_id} cannot be edited ({why}); sending anew");
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    pub(super) async fn drop_draft(
        &self,
        recipient: &str,
        draft_id: &str,
    ) -> Result<(), ChannelError> {
        let to = Target::parse(recipient, None)?;
        let id = parse_message_id(draft_id)?;
        self.drafts.with(|d| d.remove(&key(to.chat, id)));
        self.delete(to.chat, id).await
    }

    async fn delete(&self, chat: ChatId, id: MessageId) -> Result<(), ChannelError> {
        self.retrying("deleteMessage", || {
            self.bot.delete_message(chat, id).into_future()
        })
        .await
        .map(|_| ())
        .map_err(channel_error)
    }
}
