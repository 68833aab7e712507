//! What the daemon hands the mail channel: its servers, its login, who may
//! write to it and how their mail is believed to be theirs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use hearth_core::secret::Secret;

pub use super::tls::Security;

#[derive(Debug, Clone)]
pub struct EmailSettings {
    /// The bot's own address, lowercased: `From:` of its replies.
    pub address: String,
    pub username: String,
    pub password: Secret,
    /// Host and port of the IMAP server.
    pub imap: (String, u16),
    /// Host and port of the SMTP server.
    pub smtp: (String, u16),
    pub imap_security: Security,
    pub smtp_security: Security,
    /// More certificate authorities to trust (PEM), for a server that
    /// signs its own.
    pub ca_file: Option<PathBuf>,
    pub mailbox: String,
    /// Lowercased addresses.
    pub allowed_senders: Vec<String>,
    /// The receiving server's authserv-id, whose verdicts are believed.
    pub authserv_id: Option<String>,
    /// Sender to the token of their secret address (`bot+TOKEN@…`).
    pub tokens: BTreeMap<String, Secret>,
    /// Polling interval without IDLE; the longest one IDLE lasts.
    pub poll_interval: Duration,
    /// The longest any one exchange with a server may take.
    pub timeout: Duration,
    /// Where the mailbox cursor and the threads of open mails are kept.
    pub state_dir: PathBuf,
}

impl EmailSettings {
    pub fn allows(&self, sender: &str) -> bool {
        self.allowed_senders.iter().any(|s| s == sender)
    }
}
