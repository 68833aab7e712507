//! Every channel under one name: the vocabulary and the gateway from
//! `hearth-app`, the channels that are crates of their own, and the
//! terminal's ([`cli`], `hearth chat`'s).

pub mod cli;

pub use cli::CliChannel;
pub use hearth_acp as acp;
pub use hearth_acp::AcpChannel;
pub use hearth_app::channels::*;
pub use hearth_telegram as telegram;
pub use hearth_telegram::TelegramChannel;
