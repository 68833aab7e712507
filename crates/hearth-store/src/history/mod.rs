//! Conversation history that survives restarts.
//!
//! Turns are appended to a SQLite database under the data dir, keyed by a
//! conversation key (for the CLI: `cli_<session name>`). Loading returns the
//! most recent messages, oldest first. The same file keeps the tools a
//! person allowed for good in a chat ([`Grants`]), and the pictures
//! the turns showed (`pictures`).

mod file;
mod forget;
mod grants;
mod listing;
mod pictures;
mod store;

pub use file::FILE;
pub use forget::forget;

pub use grants::{Grantee, Grants};
pub use listing::Listed;
pub use store::{HistoryError, HistoryStore, append_rows};

/// How many messages of a conversation are loaded back (DESIGN.md: 50).
pub const HISTORY_LIMIT: usize = 50;
