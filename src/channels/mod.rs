//! Every channel under one name: the vocabulary (`hearth-channel`), the
//! channels that are crates of their own (`hearth-telegram`, `hearth-email`,
//! `hearth-matrix`, `hearth-gateway`, `hearth-acp`), and the terminal's ([`cli`], `hearth
//! chat`'s).

pub mod cli;

pub use cli::CliChannel;
pub use hearth_acp as acp;
pub use hearth_acp::AcpChannel;
pub use hearth_channel::*;
pub use hearth_email as email;
pub use hearth_email::EmailChannel;
pub use hearth_gateway as gateway;
pub use hearth_gateway::GatewayChannel;
pub use hearth_matrix as matrix;
pub use hearth_matrix::MatrixChannel;
pub use hearth_telegram as telegram;
pub use hearth_telegram::TelegramChannel;
