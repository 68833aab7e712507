//! The LMS notifier: course sites polled, new and changed items and due-date
//! reminders pushed to a chat, each exactly once.
//!
//! - [`LmsSource`] is the seam to a site: [`moodle`], [`canvas`], [`ical`]
//!   and [`feed`] (RSS/Atom) turn their payloads into [`LmsItem`]s.
//! - [`SeenStore`] (`lms.sqlite3`) remembers what was listed and what was
//!   delivered, across restarts.
//! - [`Notifier::poll_once`] ties them together and hands [`Notice`]s to a
//!   [`NoticeSink`], which the daemon implements over its channels.
//! - [`LmsUpcoming`] is the agent's `lms_upcoming` tool.

pub mod canvas;
mod error;
pub mod feed;
mod http;
pub mod ical;
mod item;
mod json;
pub mod moodle;
mod notice;
mod notifier;
mod source;
mod store;
mod summary;
mod tool;

pub use crate::clock::{Clock, ManualClock, SystemClock};
pub use error::LmsError;
pub use item::{ItemKind, LmsItem};
pub use notice::{Notice, NoticeKind, NoticeSink, format_due};
pub use notifier::{MAX_BACKOFF, Notifier, PollReport, SourceReport};
pub use source::{LmsSource, from_config};
pub use store::{Pending, SeenStore};
pub use summary::summarise;
pub use tool::LmsUpcoming;
