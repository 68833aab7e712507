//! The inbox's record of one reply's parts, as a channel's
//! [`SendJournal`]: parts already delivered are skipped, each new part's
//! id is recorded once it arrived.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::{Entry, Inbox};
use crate::channels::{ChannelMessage, SendJournal};

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

    /// A journal that continues what `entry` records. The first part not
    /// recorded may have arrived just before a crash: it is sent again
    /// (the one duplicate a crash at that moment can cause).
    pub fn resume(inbox: Arc<Inbox>, entry: &Entry) -> Self {
        let next = (0..).find(|i| !entry.parts.contains_key(i)).unwrap_or(0);
        tracing::info!(
            message = entry.message.id,
            from_part = next,
            "inbox: sending a recorded reply on"
        );
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

    fn sent(&self, index: usize, id: &str) {
        self.lock().insert(index, id.to_string());
        self.inbox.sent(&self.message, index, id);
    }
}
