//! The fence: untrusted text made inert before the model reads it
//! (`hearth_core::fence`; tested against the agent's call parser in
//! `hearth-app`'s `agent/call_format/fence_tests.rs`).

pub use hearth_core::fence::*;
