//! hearth-core: the vocabulary every other hearth crate speaks, and the
//! small mechanisms under all of them. It depends on no other hearth crate.
//!
//! - [`chat`]: messages, tools and calls; what is asked of a model and what
//!   streams back.
//! - [`model`]: model families, reasoning effort, GPU layers.
//! - [`retry`]: the one retry policy: a wait that doubles up to a ceiling.
//! - [`clock`]: wall-clock time behind a trait.
//! - [`file_modes`]: files and folders only hearth's user may read.
//! - [`disk`]: the room left on a filesystem.
//! - [`embed`]: the seam to an embedding model, vectors in SQLite, and the
//!   background loop that embeds a store's backlog.
//! - [`hex`]: checksums as hexadecimal text.
//! - [`secret`]: a string that never prints itself.
//! - [`workspace`]: one workspace folder per conversation.
//! - [`confined`]: a file opened beneath a folder, never through a link out of it.
//! - [`fence`], [`call_markup`]: untrusted text fenced as data, its call markup defused.
//! - [`paths`]: where a path really leads, before it exists.
//! - [`internal_tags`]: hearth's own markup kept out of what a person sees.

pub mod call_markup;
pub mod chat;
pub mod clock;
pub mod confined;
pub mod disk;
pub mod embed;
pub mod fence;
pub mod file_modes;
pub mod hex;
pub mod internal_tags;
pub mod model;
pub mod paths;
pub mod retry;
pub mod secret;
pub mod workspace;
