//! What a [`super::TelegramChannel`] is built from: the validated config plus
//! the daemon's folders.

use std::path::PathBuf;
use std::time::Duration;

use super::allowlist::Allowlist;
use super::error::TelegramError;
use crate::config::{Config, Secret, StreamMode};
use crate::workspace::Workspaces;

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

    /// The settings for `hearth daemon`; an error when no token is set.
    pub fn from_config(config: &Config) -> Result<Self, TelegramError> {
        let t = &config.telegram;
        let token = t.bot_token.clone().ok_or(TelegramError::NoToken)?;
        Ok(Self {
            token,
            api_url: t.api_url.clone(),
            allowlist: Allowlist::new(&t.allowed_users),
            mention_only: t.mention_only,
            stream_mode: t.stream_mode,
            draft_interval: Duration::from_millis(t.draft_update_interval_ms),
            interrupt_on_new_message: t.interrupt_on_new_message,
            ack_reactions: t.ack_reactions,
            show_tool_calls: t.show_tool_calls,
            workspaces: Workspaces::new(&config.agent.workspace, config.agent.shared_workspace),
            state_dir: config.data_dir.join("telegram"),
            poll_timeout: Duration::from_secs(30),
            max_rate_limit_retries: 5,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::Environment;

    fn config(text: &str, env: &Environment) -> Config {
        Config::parse(text, Path::new("test.toml"), env).unwrap()
    }

    #[test]
    fn built_from_the_config_with_state_under_the_data_dir() {
        let env = Environment::with_home("/home/u").set("HEARTH_TELEGRAM_TOKEN", "1:abc");
        let c = config(
            "[data]\ndir = \"/srv/hearth\"\n[channels.telegram]\nallowed_users = [\"42\"]\nstream_mode = \"partial\"\ndraft_update_interval_ms = 500\nack_reactions = false\n",
            &env,
        );
        let s = TelegramSettings::from_config(&c).unwrap();
        assert_eq!(s.token.expose(), "1:abc");
        assert!(s.allowlist.allows(42, None) && !s.allowlist.allows(43, None));
        assert_eq!(s.stream_mode, StreamMode::Partial);
        assert_eq!(s.draft_interval, Duration::from_millis(500));
        assert!(!s.ack_reactions);
        assert_eq!(s.state_dir, Path::new("/srv/hearth/telegram"));
        // The workspace is beside the data dir, never inside it.
        assert_eq!(s.workspaces.root(), Path::new("/srv/hearth-workspace"));
        assert_eq!(
            s.workspaces.of_chat("telegram", "42"),
            Path::new("/srv/hearth-workspace/telegram/42")
        );
    }

    #[test]
    fn no_token_is_a_clear_error() {
        let c = config("", &Environment::with_home("/home/u"));
        let e = TelegramSettings::from_config(&c).unwrap_err().to_string();
        assert!(e.contains("HEARTH_TELEGRAM_TOKEN"), "{e}");
    }
}
