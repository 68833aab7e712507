//! What a [`super::TelegramChannel`] is built from: the validated config plus
//! the daemon's folders (the daemon turns its config into these).

use std::path::PathBuf;
use std::time::Duration;

use super::allowlist::Allowlist;
use hearth_channel::StreamMode;
use hearth_core::secret::Secret;
use hearth_core::workspace::Workspaces;

/// Everything the channel needs, already checked.
#[derive(Debug, Clone)]
pub struct TelegramSettings {
    pub token: Secret,
    /// The Bot API base URL, without a trailing slash.
    pub api_url: String,
    pub allowlist: Allowlist,
    pub mention_only: bool,
    pub stream_mode: StreamMode,
    /// The shortest time between two edits of a draft.
    pub draft_interval: Duration,
    pub interrupt_on_new_message: bool,
    pub ack_reactions: bool,
    pub show_tool_calls: bool,
    /// Each chat's incoming media are saved in its folder, and its outgoing
    /// media must lie inside it.
    pub workspaces: Workspaces,
    /// Where the confirmed update offset is kept across restarts.
    pub state_dir: PathBuf,
    /// How long one `getUpdates` call waits for news (Telegram's long poll).
    pub poll_timeout: Duration,
    /// How often a send or edit is retried after a 429 before giving up.
    pub max_rate_limit_retries: u32,
}

impl TelegramSettings {
    /// The workspace folder of `chat` (it may not exist yet).
    pub fn folder(&self, chat: &str) -> PathBuf {
        self.workspaces.of_chat(super::NAME, chat)
    }
}
