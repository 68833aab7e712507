//! Embeds the memories that have no vector from the loaded model yet: an
//! existing database after an upgrade, everything after the model changed,
//! and the entries each turn adds, with the loop every store's vectors
//! share ([`hearth_core::embed::index`]: a batch at a time, only while the
//! engine has nothing to decode, saved as made).

use std::sync::Arc;

use hearth_core::embed::{Backlog, BacklogError};
use tokio_util::sync::CancellationToken;

use super::MemoryStore;
use super::hybrid::BATCH;

pub use hearth_core::embed::Idle;

impl Backlog for MemoryStore {
    fn what(&self) -> &'static str {
        "memories"
    }

    fn has_model(&self) -> bool {
        self.vector_counts().ok().flatten().is_some()
    }

    fn drop_other_vectors(&self) -> Result<usize, BacklogError> {
        MemoryStore::drop_other_vectors(self).map_err(Into::into)
    }

    fn embed_missing(&self, most: usize) -> Result<usize, BacklogError> {
        MemoryStore::embed_missing(self, None, most.min(BATCH)).map_err(Into::into)
    }
}

/// Runs until `stop`; returns at once when the store has no model.
pub async fn run(store: Arc<MemoryStore>, idle: Idle, stop: CancellationToken) {
    hearth_core::embed::index(store, idle, stop).await
}
