//! hearth-app: the assistant between the channels and the binary: config,
//! stores, the pipeline and the agent, tools, providers and the daemon's
//! parts. Five crates lie below it and are re-exported under the names used
//! here: `hearth-core` ([`chat`], [`retry`], [`clock`], [`file_modes`],
//! [`workspace`]), `hearth-channel` (in [`channels`]), `hearth-engine`
//! ([`engine`], [`models`]), `hearth-sandbox` ([`sandbox`]) and
//! `hearth-voice` ([`voice`]). The `hearth` crate above wires in the
//! channels that are crates of their own (Telegram, ACP) and holds the
//! command line; `docs/ARCHITECTURE.md` draws them. The folder tree is the
//! architecture, from the edges inwards:
//!
//! - [`daemon`]: `hearth daemon`'s parts: providers, services, the dispatcher.
//! - [`channels`]: the [`channels::Channel`] seam to messaging platforms (`hearth-channel`).
//! - [`dispatch`]: the bus, supervised listeners, in-flight limits, interruption.
//! - [`paths`]: where a path really leads, before it exists.
//! - [`pipeline`]: one message's phases, from hooks to the persisted reply.
//! - [`agent`]: the tool-call loop, the call formats, the system prompt, context management.
//! - [`tools`]: shell, file and HTTP tools in one registry, under the policy.
//! - [`sandbox`]: the OS sandbox every command runs in (bubblewrap, Landlock), with limits.
//! - [`security`]: the workspace and command policy; credential scrubbing.
//! - [`speech`]: voice notes to text with the local Whisper model ([`voice`]).
//! - [`memory`]: what hearth remembers; the [`memory::TurnMemory`] seam.
//! - [`metrics`]: what hearth counts, for `GET /metrics` (`hearth-metrics`).
//! - [`scheduler`]: cron jobs and reminders, delivered to a chat.
//! - [`lms`]: the LMS notifier (Moodle, Canvas, iCal, RSS/Atom).
//! - [`history`]: conversation turns persisted in SQLite.
//! - [`lock`]: one daemon per data folder.
//! - [`storage`]: opening the SQLite files (WAL, busy timeout, schema).
//! - [`scenarios`]: the requests users make, through the pipeline, scored by the state they leave.
//! - [`retention`]: every store kept within `[retention]`; how full each is.
//! - [`backup`]: `hearth backup` and `hearth restore`.
//! - [`file_modes`]: files and folders only hearth's user may read.
//! - [`providers`]: the [`providers::Provider`] seam replies come from.
//! - [`engine`]: llama.cpp on one worker thread; KV cache per conversation; templates.
//! - [`models`]: the model catalogue, downloads from a Hugging Face hub, what fits here.
//! - [`config`]: TOML → validated configuration; [`engine_setup`]: its engine settings.
//! - [`retry`]: the one retry policy: a wait that doubles up to a ceiling.
//! - [`clock`]: wall-clock time behind a trait, for the scheduler and the LMS notifier.
//! - [`workspace`]: one workspace folder per conversation.

pub mod agent;
pub mod backup;
pub mod config;
pub mod daemon;
pub mod dispatch;
pub mod engine_setup;
pub mod history;
pub mod inbox;
pub mod lms;
pub mod lock;
pub mod mcp;
pub mod memory;
pub mod paths;
pub mod pipeline;
pub mod providers;
pub mod retention;
pub mod scenarios;
pub mod scheduler;
pub mod security;
pub mod speech;
pub mod storage;
pub mod tools;

// The floors below, under the names the rest of hearth uses.
pub use hearth_channel as channels;
pub use hearth_core::{chat, clock, disk, file_modes, hex, retry, workspace};
pub use hearth_engine as engine;
pub use hearth_engine::models;
pub use hearth_metrics as metrics;
pub use hearth_sandbox as sandbox;
pub use hearth_voice as voice;
