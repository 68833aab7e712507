//! What can go wrong reaching the mail servers, and how a listener's
//! failure is told to the supervisor.

use hearth_channel::ChannelError;

#[derive(Debug, thiserror::Error)]
pub enum EmailError {
    #[error("cannot reach {server}: {source}")]
    Unreachable {
        server: String,
        source: std::io::Error,
    },
    #[error("{server} did not answer within {seconds} s")]
    Timeout { server: String, seconds: u64 },
    #[error("IMAP login as `{user}` refused: {why} (check [channels.email] username and password)")]
    Login { user: String, why: String },
    #[error("IMAP: {0}")]
    Imap(#[from] async_imap::error::Error),
    #[error("SMTP {server}: {step} answered {reply}")]
    Smtp {
        server: String,
        step: &'static str,
        reply: String,
    },
    #[error("SMTP {server}: {source}")]
    SmtpIo {
        server: String,
        source: std::io::Error,
    },
    #[error("TLS with {server}: {why}")]
    Tls { server: String, why: String },
    #[error("[channels.email] ca_file {path}: {why}")]
    CaFile { path: String, why: String },
    #[error("{server} offers no STARTTLS, and the bot will not log in unencrypted")]
    NoStartTls { server: String },
    #[error("the channel's state in {path}: {source}")]
    State {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot send to `{0}`: not a mail address")]
    BadRecipient(String),
}

impl From<EmailError> for ChannelError {
    fn from(e: EmailError) -> Self {
        match e {
            EmailError::Unreachable { .. }
            | EmailError::Timeout { .. }
            | EmailError::SmtpIo { .. }
            | EmailError::Tls { .. }
            | EmailError::Imap(async_imap::error::Error::Io(_))
            | EmailError::Imap(async_imap::error::Error::ConnectionLost) => {
                ChannelError::Network(e.to_string())
            }
            // 4xx: the server asks to be tried again later.
            EmailError::Smtp { ref reply, .. } if reply.starts_with('4') => {
                ChannelError::Network(e.to_string())
            }
            EmailError::Login { .. } | EmailError::Smtp { .. } | EmailError::BadRecipient(_) => {
                ChannelError::Rejected(e.to_string())
            }
            _ => ChannelError::Other(e.to_string()),
        }
    }
}
