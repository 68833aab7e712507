//! Embeds the memories that have no vector from the loaded model yet: an
//! existing database after an upgrade, everything after the model changed,
//! and the entries each turn adds. It works a batch at a time, only while
//! the engine has nothing to decode (`idle`), so no chat's reply waits for
//! it; each batch's vectors are saved as they are made, so a restart goes
//! on where it stopped.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::MemoryStore;
use super::hybrid::BATCH;

/// How often a busy engine is looked at again.
const BUSY_PAUSE: Duration = Duration::from_secs(1);
/// How often the store is looked at when everything was embedded.
const DONE_PAUSE: Duration = Duration::from_secs(10);
/// The pause after the model failed.
const FAILED_PAUSE: Duration = Duration::from_secs(60);

/// Whether the chat engine is idle now.
pub type Idle = Arc<dyn Fn() -> bool + Send + Sync>;

/// Runs until `stop`; returns at once when the store has no model.
pub async fn run(store: Arc<MemoryStore>, idle: Idle, stop: CancellationToken) {
    if store.vector_counts().ok().flatten().is_none() {
        return;
    }
    let s = store.clone();
    match tokio::task::spawn_blocking(move || s.drop_other_vectors()).await {
        Ok(Ok(n)) if n > 0 => tracing::info!(n, "dropped the vectors of another embedding model"),
        Ok(Err(e)) => tracing::warn!("memory vectors: {e}"),
        _ => {}
    }
    loop {
        let pause = if idle() {
            let s = store.clone();
            match tokio::task::spawn_blocking(move || s.embed_missing(None, BATCH)).await {
                Ok(Ok(0)) => DONE_PAUSE,
                Ok(Ok(n)) => {
                    tracing::debug!(n, "memories embedded");
                    Duration::ZERO
                }
                Ok(Err(e)) => {
                    tracing::warn!("embedding memories: {e}; trying again in a minute");
                    FAILED_PAUSE
                }
                Err(e) => {
                    tracing::warn!("the embedding task failed: {e}");
                    FAILED_PAUSE
                }
            }
        } else {
            BUSY_PAUSE
        };
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = stop.cancelled() => return,
        }
    }
}
