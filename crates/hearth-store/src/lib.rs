//! hearth-store: the conversation stores that share `history.sqlite3` and
//! its one schema, and how every store's SQLite file is opened.
//!
//! - [`storage`]: opening a SQLite file (WAL, busy timeout) and running its
//!   schema's steps once, after a copy of the file; a newer file refused.
//! - [`history`]: conversation turns, the pictures they show, tool grants.
//! - [`inbox`]: the durable inbox: every message recorded until its outcome.
//! - [`lock`]: one daemon per data folder.
//!
//! Memory, the scheduler and the LMS notifier keep files of their own and
//! bring their own agent tools, so they are crates of their own above this
//! one (`docs/ARCHITECTURE.md` says why).

pub mod history;
pub mod inbox;
pub mod lock;
pub mod storage;

// The floors below, under the names this crate's paths use.
use hearth_channel as channels;
#[cfg(test)]
use hearth_config as config;
use hearth_core::{chat, file_modes, retry};
