//! What the daemon hands the Matrix channel: its homeserver, its login, who
//! may write to it, and where its session and keys are kept.

use std::path::PathBuf;
use std::time::Duration;

use hearth_core::secret::Secret;

/// How the bot logs in the first time. Once logged in, the session kept in
/// the state folder is used, and this is asked again only when the server
/// no longer takes that session.
#[derive(Debug, Clone)]
pub enum Login {
    /// The bot account's password: a new device is made on first login.
    Password(Secret),
    /// An access token made elsewhere (Element's settings, or the admin
    /// API), with the device it belongs to.
    Token(Secret),
}

#[derive(Debug, Clone)]
pub struct MatrixSettings {
    /// The homeserver's client-server API root: `https://matrix.example.org`.
    pub homeserver: String,
    /// The bot's Matrix ID: `@hearth:example.org`.
    pub user: String,
    pub login: Login,
    /// The name the bot's device shows in Element's session list.
    pub device_name: String,
    /// Matrix IDs whose messages are answered and whose invites are taken.
    pub allowed_users: Vec<String>,
    /// The longest a sync waits for news on the server.
    pub sync_timeout: Duration,
    /// The longest any one request may take beyond that.
    pub request_timeout: Duration,
    /// Where the session, the encryption keys and the sync token are kept.
    pub state_dir: PathBuf,
}

impl MatrixSettings {
    pub fn allows(&self, user: &str) -> bool {
        self.allowed_users.iter().any(|u| u == user)
    }
}
