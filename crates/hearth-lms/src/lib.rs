//! hearth-lms, the LMS notifier: course sites polled, new and changed items and due-date
//! reminders pushed to a chat, each exactly once.
//!
//! - [`LmsSource`] is the seam to a site: [`moodle`], [`canvas`], [`ical`]
//!   and [`feed`] (RSS/Atom) turn their payloads into [`LmsItem`]s.
//! - [`SeenStore`] (`lms.sqlite3`) remembers what was listed and what was
//!   delivered, across restarts.
//! - [`Notifier::poll`] fetches and records; [`Notifier::deliver`] (the
//!   courier) hands what is due to a [`NoticeSink`], which the daemon
//!   implements over its channels. The daemon runs them apart, so a chat
//!   outage never delays a poll; [`Notifier::poll_once`] does both.
//! - [`FileKeeper`] takes the courses' files a poll found new or changed
//!   (`files.rs`), downloaded once per version.
//! - [`LmsUpcoming`] is the agent's `lms_upcoming` tool, [`LmsRecent`] its
//!   `lms_recent`.

mod brief;
mod caldav;
mod calendar_feed;
pub mod canvas;
mod canvas_files;
mod canvas_grades;
mod courier;
mod error;
pub mod feed;
mod files;
mod forget;
mod http;
pub mod ical;
mod item;
mod json;
mod lines_and_polls;
pub mod moodle;
mod named;
mod notice;
mod notifier;
mod recent;
mod recurrence;
mod scrubbed;
mod source;
mod store;
mod summary;
mod tool;

// The floors below, under the names this crate's paths use.
use hearth_config as config;
use hearth_core::{chat, clock, hex, retry};
use hearth_providers as providers;
use hearth_store::storage;
use hearth_tools::{self as tools, security};

pub use crate::clock::{Clock, ManualClock, SystemClock};
pub use brief::{BRIEF, BriefExtras, due_day as brief_due_day};
pub use caldav::{Published, publish as publish_to_caldav};
pub use calendar_feed::{FeedEvent, ics, uid as feed_uid};
pub use courier::GIVE_UP_AFTER;
pub use error::LmsError;
pub use files::{CourseFile, Fetched, FileKeeper, KeepError, LastListed, MAX_FILE, linked};
pub use forget::forget;
pub use item::{ItemKind, LmsItem};
pub use lines_and_polls::{Queued, SourceStatus};
pub use named::{named_in, named_items};
pub use notice::{Notice, NoticeError, NoticeKind, NoticeSink, format_due};
pub use notifier::{MAX_BACKOFF, Notifier, PollReport, SourceReport};
pub use recent::LmsRecent;
pub use source::{LmsSource, check as check_source, from_config};
pub use store::{FILE, Pending, Recorded, SeenStore};
pub use summary::summarise;
pub use tool::LmsUpcoming;
