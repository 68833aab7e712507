//! Channels as the rest of hearth sees them: the vocabulary of
//! `hearth-channel`, and the HTTP gateway (the web page and the APIs).
//!
//! Telegram and ACP are crates of their own above this one; the binary's
//! daemon wires them in. Nothing here names them.

pub mod gateway;

pub use gateway::GatewayChannel;
pub use hearth_channel::*;
