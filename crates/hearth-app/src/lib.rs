//! hearth-app: the assistant between the channels and the binary: the
//! pipeline, the agent's tool loop, the dispatcher, retention and backups,
//! and the daemon's parts. Everything it stands on is a crate of its own,
//! re-exported here under the names hearth has always used; the `hearth`
//! crate above wires in the channel crates and holds the command line.
//! `docs/ARCHITECTURE.md` draws the floors. Its own parts:
//!
//! - [`daemon`]: `hearth daemon`'s parts: local models, services, the sweeper.
//! - [`dispatch`]: the bus, supervised listeners, in-flight limits, interruption.
//! - [`pipeline`]: one message's phases, from hooks to the persisted reply.
//! - [`agent`]: the tool-call loop, the call formats, the system prompt, context management.
//! - [`speech`]: voice notes to text with the local Whisper model ([`voice`]).
//! - [`scenarios`]: the requests users make, through the pipeline, scored by the state they leave.
//! - [`retention`]: every store kept within `[retention]`; how full each is.
//! - [`backup`]: `hearth backup` and `hearth restore`.
//! - [`engine_setup`]: the config's engine settings.
//!
//! Below it: [`channels`] (`hearth-channel`), [`config`] (`hearth-config`),
//! [`tools`] and [`security`] (`hearth-tools`), [`providers`]
//! (`hearth-providers`), [`history`], [`inbox`], [`storage`] and [`lock`]
//! (`hearth-store`), [`memory`], [`documents`], [`scheduler`], [`lms`], [`mcp`] (a crate
//! each), [`metrics`] (`hearth-metrics`), [`engine`] and [`models`]
//! (`hearth-engine`), [`sandbox`] (`hearth-sandbox`), [`voice`]
//! (`hearth-voice`), and from `hearth-core` [`chat`], [`retry`],
//! [`clock`], [`file_modes`], [`paths`], [`workspace`].

pub mod agent;
pub mod backup;
pub mod daemon;
pub mod dispatch;
pub mod engine_setup;
pub mod pipeline;
pub mod retention;
pub mod scenarios;
pub mod speech;

// The floors below, under the names the rest of hearth uses.
pub use hearth_channel as channels;
pub use hearth_config as config;
pub use hearth_core::{chat, clock, disk, embed, file_modes, hex, paths, retry, workspace};
pub use hearth_engine as engine;
pub use hearth_engine::models;
pub use hearth_metrics as metrics;
pub use hearth_providers as providers;
pub use hearth_sandbox as sandbox;
pub use hearth_store::{history, inbox, lock, storage};
pub use hearth_tools as tools;
pub use hearth_tools::security;
pub use hearth_voice as voice;
pub use {
    hearth_documents as documents, hearth_lms as lms, hearth_mcp as mcp, hearth_memory as memory,
    hearth_scheduler as scheduler,
};
