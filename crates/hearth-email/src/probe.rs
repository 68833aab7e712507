//! What `hearth doctor` asks of the mail servers: the IMAP login and the
//! mailbox, the SMTP greeting; what each said, or why it failed and what
//! to change.

use super::{EmailChannel, EmailError};

/// What the servers answered.
#[derive(Debug)]
pub struct Probe {
    /// Whether the IMAP server has IDLE (else the mailbox is polled).
    pub idle: bool,
    /// How many mails the mailbox holds.
    pub mails: u32,
}

impl EmailChannel {
    /// Logs in to the IMAP server, opens the mailbox, logs out; greets the
    /// SMTP server (and logs in where it offers AUTH), says goodbye.
    /// Nothing is read or marked.
    pub async fn probe(&self) -> Result<Probe, EmailError> {
        let mut session = self.login().await?;
        let idle = self.within(session.capabilities()).await?.has_str("IDLE");
        let mailbox = self.within(session.examine(&self.settings.mailbox)).await?;
        let _ = self.within(session.logout()).await;
        self.relay().hello().await?;
        Ok(Probe {
            idle,
            mails: mailbox.exists,
        })
    }
}

/// The change that mends `e`, for a person reading `hearth doctor`.
pub fn fix(e: &EmailError) -> &'static str {
    match e {
        EmailError::Unreachable { .. } | EmailError::SmtpIo { .. } => {
            "is the server running, and are [channels.email] imap_host/imap_port and smtp_host/smtp_port right?"
        }
        EmailError::Timeout { .. } => "the server took too long: is the port one of a mail server?",
        EmailError::Login { .. } => {
            "set [channels.email] username and password (or HEARTH_EMAIL_PASSWORD) to the bot's login"
        }
        EmailError::Smtp { .. } => {
            "the SMTP server refused the bot: does it relay for this login and address?"
        }
        EmailError::Imap(_) => "does [channels.email] mailbox name a folder of the bot's account?",
        EmailError::Tls { .. } => {
            "the server's certificate is not trusted, or is for another name: for a server that signs its own, set [channels.email] ca_file to its CA certificate (PEM)"
        }
        EmailError::CaFile { .. } => {
            "point [channels.email] ca_file at a PEM certificate this user can read"
        }
        EmailError::NoStartTls { .. } => {
            "set [channels.email] smtp_security = \"tls\" (port 465), or use a server that offers STARTTLS"
        }
        EmailError::State { .. } | EmailError::BadRecipient(_) => "",
    }
}
