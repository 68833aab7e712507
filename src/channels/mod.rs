//! Channels: where messages come from and where replies go.
//!
//! A [`Channel`] is one platform (Telegram, the CLI, the LMS poller, ...).
//! It turns the platform's updates into [`ChannelMessage`]s handed to an
//! [`Intake`] (the durable inbox and the dispatcher's bus), and delivers [`SendMessage`]s back. Channels never call
//! providers; the dispatcher and the pipeline sit between.

pub mod acp;
pub mod approval;
pub mod asked;
mod channel;
pub mod cli;
pub mod commands;
mod drafts;
mod error;
pub mod gateway;
pub mod in_memory;
pub mod intake;
mod message;
mod presence;
mod reply;
pub mod send_journal;
pub mod telegram;

pub use acp::AcpChannel;
pub use approval::{Answer, ApprovalRequest};
pub use channel::{Channel, ChannelPolicy, PLAIN_TEXT};
pub use cli::CliChannel;
pub use drafts::Drafts;
pub use error::ChannelError;
pub use gateway::GatewayChannel;
pub use in_memory::{ChannelEvent, InMemoryChannel};
pub use intake::{Accepted, Closed, Intake};
pub use message::{ChannelMessage, Initiator, SendMessage, TurnRequest};
pub use presence::Presence;
pub use reply::{ReplyEvent, ReplyStream};
pub use send_journal::{SendJournal, Unrecorded};
pub use telegram::TelegramChannel;
