//! Finding by meaning, the parts every store shares: [`Embed`], the seam to
//! an embedding model (its name and its vectors); vectors as SQLite blobs
//! ([`encode`], [`dot`]); and [`index`], the background loop that embeds
//! what a store has not embedded yet while the chat engine is idle.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::chat::ProviderError;

/// What makes vectors.
pub trait Embed: Send + Sync {
    /// The model that makes them: vectors of two models never mix.
    fn model_id(&self) -> &str;

    /// One vector of length 1 per text. Blocking.
    fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError>;
}

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("the embedding model failed: {0}")]
    Failed(#[from] ProviderError),
    #[error("the embedding model gave {got} vectors for {asked} texts")]
    Count { asked: usize, got: usize },
}

/// A vector as little-endian `f32`s.
pub fn encode(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The dot product of a stored vector and `query`; `None` when their
/// lengths differ (a vector that cannot be compared is skipped).
pub fn dot(blob: &[u8], query: &[f32]) -> Option<f32> {
    if blob.len() != query.len() * 4 {
        return None;
    }
    Some(
        blob.chunks_exact(4)
            .zip(query)
            .map(|(b, q)| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) * q)
            .sum(),
    )
}

/// Why a store's backlog could not be embedded this time.
pub type BacklogError = Box<dyn std::error::Error + Send + Sync>;

/// A store with rows waiting for vectors.
pub trait Backlog: Send + Sync + 'static {
    /// What it holds, for the log (`memories`, `document pieces`).
    fn what(&self) -> &'static str;
    /// Whether it has a model at all (no model: nothing to do).
    fn has_model(&self) -> bool;
    /// Drops vectors another model made; how many.
    fn drop_other_vectors(&self) -> Result<usize, BacklogError>;
    /// Embeds up to `most` rows that have none yet; how many. Blocking.
    fn embed_missing(&self, most: usize) -> Result<usize, BacklogError>;
}

/// Texts sent to the model at once.
pub const BATCH: usize = 16;
/// How often a busy engine is looked at again.
const BUSY_PAUSE: Duration = Duration::from_secs(1);
/// How often the store is looked at when everything was embedded.
const DONE_PAUSE: Duration = Duration::from_secs(10);
/// The pause after the model failed.
const FAILED_PAUSE: Duration = Duration::from_secs(60);

/// Whether the chat engine is idle now.
pub type Idle = Arc<dyn Fn() -> bool + Send + Sync>;

/// Embeds `store`'s backlog a batch at a time, only while `idle` says the
/// engine has nothing to decode, until `stop`; returns at once when the
/// store has no model. Each batch's vectors are saved as they are made, so
/// a restart goes on where it stopped.
pub async fn index(store: Arc<dyn Backlog>, idle: Idle, stop: CancellationToken) {
    if !store.has_model() {
        return;
    }
    let what = store.what();
    let s = store.clone();
    match tokio::task::spawn_blocking(move || s.drop_other_vectors()).await {
        Ok(Ok(n)) if n > 0 => tracing::info!(
            n,
            "dropped the vectors of another embedding model from the {what}"
        ),
        Ok(Err(e)) => tracing::warn!("{what} vectors: {e}"),
        _ => {}
    }
    loop {
        let pause = if idle() {
            let s = store.clone();
            match tokio::task::spawn_blocking(move || s.embed_missing(BATCH)).await {
                Ok(Ok(0)) => DONE_PAUSE,
                Ok(Ok(n)) => {
                    tracing::debug!(n, "{what} embedded");
                    Duration::ZERO
                }
                Ok(Err(e)) => {
                    tracing::warn!("embedding the {what}: {e}; trying again in a minute");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_reads_back_as_written_and_a_wrong_length_is_skipped() {
        let v = [0.6f32, -0.8];
        assert_eq!(dot(&encode(&v), &v), Some(1.0));
        assert_eq!(dot(&encode(&v), &[1.0, 0.0, 0.0]), None);
        assert_eq!(dot(&[1, 2, 3], &[1.0]), None);
    }
}
