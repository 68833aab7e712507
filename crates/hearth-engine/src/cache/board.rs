//! What the KV cache holds, for a page that shows it: each conversation's
//! tier (a sequence in the context, a state in RAM, a file on disk) and
//! size. The engine thread posts the sequences and RAM states whenever they
//! change; the files are read from the cache folder when asked.

use std::path::PathBuf;
use std::sync::Mutex;

use serde::Serialize;

/// Where a conversation's cache is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Slot,
    Ram,
    Disk,
}

/// One conversation's cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cached {
    pub conversation: String,
    pub tier: Tier,
    pub tokens: usize,
    /// Bytes of saved state (RAM and disk; a sequence's are not measured).
    pub bytes: Option<u64>,
}

/// Shared between the engine thread and whoever reads it.
#[derive(Debug, Default)]
pub struct CacheBoard {
    live: Mutex<Vec<Cached>>,
    disk_dir: Mutex<Option<PathBuf>>,
}

impl CacheBoard {
    /// Every conversation cached, in slots, then RAM, then on disk.
    pub fn entries(&self) -> Vec<Cached> {
        let mut entries = self.live.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let dir = self
            .disk_dir
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(dir) = dir {
            let mut on_disk: Vec<Cached> = super::saved::peek_all(&dir)
                .into_iter()
                .filter(|d| !entries.iter().any(|e| e.conversation == d.conversation))
                .collect();
            on_disk.sort_by(|a, b| a.conversation.cmp(&b.conversation));
            entries.extend(on_disk);
        }
        entries
    }

    pub(super) fn post(&self, live: Vec<Cached>, disk_dir: Option<PathBuf>) {
        *self.live.lock().unwrap_or_else(|e| e.into_inner()) = live;
        *self.disk_dir.lock().unwrap_or_else(|e| e.into_inner()) = disk_dir;
    }
}
