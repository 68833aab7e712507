//! Security: what tools may touch, and what must never leave a tool's output.
//!
//! [`policy`] decides which paths and commands tools may use; [`scrub`]
//! removes credentials from tool output before it reaches the model or the
//! history; [`fence`] makes untrusted text inert before the model reads it;
//! [`internal_tags`] keeps hearth's own markup out of replies.

pub use hearth_core::call_markup;
pub mod fence;
pub use hearth_core::internal_tags;
pub use hearth_sandbox::policy;
pub mod scrub;

pub use policy::{Autonomy, PolicyError, SecurityPolicy};
pub use scrub::Scrubber;
