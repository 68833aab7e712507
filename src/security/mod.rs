//! Security: what tools may touch, and what must never leave a tool's output.
//!
//! So far: [`scrub`], which removes credentials from tool output before it
//! reaches the model or the history.

pub mod scrub;

pub use scrub::Scrubber;
