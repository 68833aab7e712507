//! hearth-channel: the vocabulary every channel speaks, below the pipeline.
//!
//! A [`Channel`] is one platform (Telegram, the gateway, ACP, the CLI, ...).
//! It turns the platform's updates into [`ChannelMessage`]s handed to an
//! [`Intake`] (the durable inbox and the dispatcher's bus), and delivers
//! [`SendMessage`]s back. Channels never call providers; the dispatcher and
//! the pipeline sit between. A channel crate depends on this one and the
//! floors below it (`hearth-core`), never on the pipeline, a store or
//! another channel: what it needs of those, the daemon hands it as a narrow
//! capability (a trait defined here or in the channel's crate).

pub mod approval;
pub mod asked;
mod channel;
pub mod commands;
mod drafts;
mod error;
pub mod in_memory;
pub mod intake;
mod message;
mod presence;
mod reply;
pub mod send_journal;

pub use approval::{Answer, ApprovalRequest};
pub use channel::{Channel, ChannelPolicy, PLAIN_TEXT};
pub use drafts::{Drafts, StreamMode};
pub use error::ChannelError;
pub use in_memory::{ChannelEvent, InMemoryChannel};
pub use intake::{Accepted, Closed, Intake};
pub use message::{ChannelMessage, Initiator, SendMessage, TurnRequest};
pub use presence::Presence;
pub use reply::{ReplyEvent, ReplyStream};
pub use send_journal::{SendJournal, Unrecorded};
