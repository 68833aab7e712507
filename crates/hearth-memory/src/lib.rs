//! hearth-memory: what hearth remembers across conversations.
//!
//! The message pipeline talks to memory through one narrow seam,
//! [`TurnMemory`]: recall context for a message before the reply, and note
//! the turn afterwards. [`NoMemory`] is the seam when memory is off;
//! [`StoreMemory`] is the real one, over the SQLite [`MemoryStore`].
//!
//! - [`store`]: entries in SQLite, searched with FTS5 and BM25.
//! - [`meaning`]: the embedding model; `hybrid`: recall by words and
//!   meaning fused; `vectors`: the vectors beside the rows; [`indexer`]:
//!   embeds what has no vector yet, when the engine is idle.
//! - [`query`]: user text made into a query that cannot fail.
//! - [`scope`]: whose memory a message or tool call uses.
//! - [`context`]: the capped memory context of one turn.
//! - [`consolidate`]: durable facts the user stated, kept as `core`.
//! - [`turn`]: [`StoreMemory`], the seam's implementation.
//! - [`tools`]: `memory_store`, `memory_recall`, `memory_forget`.

pub mod consolidate;
pub mod context;
mod entry;
mod forget;
mod hybrid;
pub mod indexer;
pub mod meaning;
mod message;
pub mod query;
pub mod scope;
mod statement;
mod store;
mod tools;
mod turn;
mod vectors;

// The floors below, under the names this crate's paths use.
use hearth_config as config;
use hearth_core::{chat, hex};
use hearth_engine as engine;
use hearth_engine::models;
use hearth_providers as providers;
use hearth_store::storage;
use hearth_tools::security;

pub use entry::{Category, MemoryEntry, Recalled};
pub use forget::forget_beyond;
pub use message::Said;
pub use scope::{LOCAL_SCOPE, Scopes};
pub use store::{FILE, MemoryError, MemoryStore, relevance};
pub use tools::{MemoryForgetTool, MemoryRecallTool, MemoryStoreTool, memory_tools};
pub use turn::StoreMemory;

use futures::future::BoxFuture;

/// What the pipeline asks of memory around one turn.
pub trait TurnMemory: Send + Sync {
    /// Context for this message, appended after the stable system prompt for
    /// this turn only (never stored in history), or `None`.
    fn recall_context<'a>(&'a self, message: &'a Said) -> BoxFuture<'a, Option<String>>;

    /// Called when a user message arrives (auto-save).
    fn on_user_message<'a>(&'a self, message: &'a Said) -> BoxFuture<'a, ()>;

    /// Called after a turn was answered; consolidation runs in the
    /// background, so this returns quickly.
    fn after_turn<'a>(&'a self, message: &'a Said, reply: &'a str) -> BoxFuture<'a, ()>;
}

/// Memory turned off: recalls nothing, keeps nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoMemory;

impl TurnMemory for NoMemory {
    fn recall_context<'a>(&'a self, _: &'a Said) -> BoxFuture<'a, Option<String>> {
        Box::pin(async { None })
    }

    fn on_user_message<'a>(&'a self, _: &'a Said) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn after_turn<'a>(&'a self, _: &'a Said, _: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

#[cfg(test)]
mod tests;
