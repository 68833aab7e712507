//! The inbox's record of one reply's parts, as a channel's
//! [`SendJournal`]: parts already delivered are skipped, each new part's
//! intent is recorded before it is sent and its id after.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::{Entry, Inbox};
use crate::channels::{ChannelError, ChannelMessage, SendJournal};
use crate::tools::BoxFuture;

pub struct EntryJournal {
    inbox: Arc<Inbox>,
    message: ChannelMessage,
    delivered: Mutex<BTreeMap<usize, String>>,
}

impl EntryJournal {
    /// A journal for a reply to `message` with nothing sent yet.
    pub fn fresh(inbox: Arc<Inbox>, message: ChannelMessage) -> Self {
        Self {
            inbox,
            message,
            delivered: Mutex::default(),
        }
    }

    /// A journal that continues what `entry` records. A part whose send
    /// began but was never confirmed counts as not delivered: it is sent
    /// again (the one duplicate a crash at that moment can cause).
    pub fn resume(inbox: Arc<Inbox>, entry: &Entry) -> Self {
        if let Some(part) = entry.sending {
            tracing::warn!(
                message = entry.message.id,
                part,
                "inbox: a part's send began before the restart and was not confirmed; sending it again"
            );
        }
        Self {
            inbox,
            message: entry.message.clone(),
            delivered: Mutex::new(entry.parts.clone()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<usize, String>> {
        self.delivered.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl SendJournal for EntryJournal {
    fn delivered(&self, index: usize) -> Option<String> {
        self.lock().get(&index).cloned()
    }

    fn sending(&self, index: usize) -> BoxFuture<'_, Result<(), ChannelError>> {
        Box::pin(async move {
            self.inbox
                .sending(&self.message, index)
                .await
                .map_err(|e| ChannelError::Other(format!("cannot record the send: {e}")))
        })
    }

    fn sent(&self, index: usize, id: &str) {
        self.lock().insert(index, id.to_string());
        self.inbox.sent(&self.message, index, id);
    }
}
