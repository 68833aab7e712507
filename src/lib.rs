//! hearth: a local-first AI assistant daemon.
//!
//! One binary embeds llama.cpp in-process and serves an offline CLI chat (and,
//! as the project grows, a Telegram assistant and an LMS notifier). The folder
//! tree is the architecture:
//!
//! - [`agent`]: tool calls in model replies (the loop is being built).
//! - [`channels`]: the [`channels::Channel`] seam to messaging platforms.
//! - [`config`]: TOML → validated configuration.
//! - [`engine`]: llama.cpp on one worker thread; chat templates; hardware facts.
//! - [`providers`]: the [`providers::Provider`] seam the rest of hearth talks to.
//! - [`memory`]: what hearth remembers; the [`memory::TurnMemory`] seam.
//! - [`scheduler`]: cron jobs and reminders, delivered to a chat.
//! - [`history`]: conversation turns persisted in SQLite.
//! - [`lms`]: the LMS notifier (Moodle, Canvas, iCal, RSS/Atom).
//! - [`security`]: credential scrubbing (the tool policy is being built).
//! - [`tools`]: shell and file tools in one registry, under the policy.
//! - [`dispatch`]: the bus, supervised listeners, in-flight limits, interruption.
//! - [`pipeline`]: one message's phases, from hooks to the persisted reply.
//! - [`daemon`]: `hearth daemon`: channels, providers and the dispatcher together.
//! - [`cli`]: the `hearth` command line.

pub mod agent;
pub mod channels;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod dispatch;
pub mod engine;
pub mod history;
pub mod lms;
pub mod memory;
pub mod pipeline;
pub mod providers;
pub mod scheduler;
pub mod security;
pub mod tools;
