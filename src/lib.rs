//! hearth: a local-first AI assistant daemon.
//!
//! One binary embeds llama.cpp in-process and serves a Telegram assistant, an
//! offline CLI chat and an LMS notifier. This crate is the top floor: the
//! command line ([`cli`]), the terminal channel ([`channels::cli`]), and the
//! daemon's wiring of the channels that are crates of their own
//! (`hearth-telegram`, `hearth-acp`) into the assistant (`hearth-app`).
//! Everything below is re-exported under the names hearth has always used
//! (`hearth::pipeline`, `hearth::channels::telegram`, …);
//! `docs/ARCHITECTURE.md` draws the floors.

pub mod channels;
pub mod cli;
pub mod daemon;

pub use hearth_app::{
    agent, backup, chat, clock, config, disk, dispatch, documents, embed, engine, engine_setup,
    file_modes, hex, history, inbox, lms, lock, mcp, memory, metrics, models, paths, pipeline,
    providers, retention, retry, sandbox, scenarios, scheduler, security, speech, storage, tools,
    voice, workspace,
};
