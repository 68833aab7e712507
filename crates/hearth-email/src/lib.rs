//! The mail channel: a personal assistant reached by email.
//!
//! - [`listen`]: IMAP, IDLE where the server has it and polling where not;
//!   a quiet first run; a mail counts only from an allowed sender whose
//!   `From:` the receiving server vouched for ([`verdict`]) or who wrote to
//!   their secret address; the quoted thread trimmed off ([`quote`]);
//!   attachments to the picture, voice and document paths ([`inbound`]).
//! - [`compose`] and [`smtp`]: the answer in the same thread, over SMTP.
//! - [`state`]: the mailbox cursor and the threads, kept across restarts.
//!
//! Tests run it against the real Dovecot and Postfix (`tests/email.rs`).

mod compose;
mod error;
mod inbound;
mod listen;
mod probe;
mod quote;
mod settings;
mod smtp;
mod state;
mod tls;
mod verdict;

use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;
use hearth_channel::{Channel, ChannelError, ChannelMessage, ChannelPolicy, Intake, SendMessage};

pub use error::EmailError;
pub use probe::{Probe, fix};
pub use settings::{EmailSettings, Security};
pub use state::describe;
pub use verdict::secret_address;

/// The channel's name, and its folder in the data folder.
pub const NAME: &str = "email";

pub struct EmailChannel {
    settings: EmailSettings,
    state: state::State,
    trust: tls::Trust,
    /// Whether the last login to the IMAP server succeeded.
    healthy: AtomicBool,
}

impl EmailChannel {
    /// Builds the channel; opens its state folder.
    pub fn new(settings: EmailSettings) -> Result<Self, EmailError> {
        let state = state::State::open(&settings.state_dir)?;
        let trust = tls::Trust::new(settings.ca_file.as_deref())?;
        if settings.allowed_senders.is_empty() {
            tracing::warn!("email: allowed_senders is empty, so every mail is ignored");
        }
        Ok(Self {
            settings,
            state,
            trust,
            healthy: AtomicBool::new(false),
        })
    }

    pub fn settings(&self) -> &EmailSettings {
        &self.settings
    }

    fn relay(&self) -> smtp::Relay<'_> {
        let s = &self.settings;
        smtp::Relay {
            server: (&s.smtp.0, s.smtp.1),
            security: s.smtp_security,
            trust: &self.trust,
            username: &s.username,
            password: s.password.expose(),
            from: &s.address,
            timeout: s.timeout,
        }
    }
}

impl Channel for EmailChannel {
    fn name(&self) -> &str {
        NAME
    }

    fn send<'a>(&'a self, message: &'a SendMessage) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let to = message.recipient.trim().to_ascii_lowercase();
            if !compose::is_address(&to) {
                return Err(EmailError::BadRecipient(message.recipient.clone()).into());
            }
            let thread = message
                .in_reply_to
                .as_deref()
                .and_then(|id| self.state.thread(id));
            let mail = compose::compose(
                &self.settings.address,
                &to,
                &message.content,
                thread.as_ref(),
            );
            self.relay().send(&mail).await.map_err(ChannelError::from)
        })
    }

    fn listen(&self, intake: Intake) -> BoxFuture<'_, Result<(), ChannelError>> {
        Box::pin(async move {
            let result = self.listen_once(&intake).await;
            self.healthy.store(false, Ordering::Relaxed);
            result.map_err(|e| {
                tracing::warn!("email: {e}");
                ChannelError::from(e)
            })
        })
    }

    fn still_allows(&self, message: &ChannelMessage) -> bool {
        self.settings.allows(&message.sender)
    }

    fn policy(&self) -> ChannelPolicy {
        ChannelPolicy {
            // Each mail is a question of its own: a second one is answered
            // after the first, not instead of it.
            interrupt_on_new_message: false,
            ..ChannelPolicy::default()
        }
    }

    fn health_check(&self) -> BoxFuture<'_, bool> {
        Box::pin(async { self.healthy.load(Ordering::Relaxed) })
    }

    fn shows(&self) -> &'static str {
        "an email in plain text: write it as a short letter, no Markdown"
    }
}
