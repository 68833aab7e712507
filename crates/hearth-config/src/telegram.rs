//! `[channels.telegram]`: the Telegram channel's keys, raw and validated.
//!
//! Kept apart from the other sections so the Telegram channel owns its whole
//! configuration: [`RawTelegram`] is what the file says (unknown keys refused),
//! [`TelegramConfig`] is the checked result with defaults filled in, and
//! [`TelegramConfig::render`] prints it back for `hearth config check`.

use std::fmt::Write;

use serde::Deserialize;

use super::{ConfigError, Environment, Secret};

/// Telegram's own Bot API server.
pub const DEFAULT_TELEGRAM_API_URL: &str = "https://api.telegram.org";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTelegram {
    pub bot_token: Option<String>,
    pub api_url: Option<String>,
    pub allowed_users: Option<Vec<String>>,
    pub mention_only: Option<bool>,
    pub stream_mode: Option<String>,
    pub draft_update_interval_ms: Option<u64>,
    pub interrupt_on_new_message: Option<bool>,
    pub ack_reactions: Option<bool>,
    pub show_tool_calls: Option<bool>,
}

pub use hearth_channel::StreamMode;

#[derive(Debug, Clone)]
pub struct TelegramConfig {
    /// From BotFather; `HEARTH_TELEGRAM_TOKEN` wins over the file.
    pub bot_token: Option<Secret>,
    /// The Bot API server (tests point it at a local fake).
    pub api_url: String,
    /// Numeric user ids or `@usernames`; empty allows nobody, `"*"` everyone.
    pub allowed_users: Vec<String>,
    /// In groups, answer only messages that mention the bot or reply to it.
    pub mention_only: bool,
    pub stream_mode: StreamMode,
    /// The shortest time between two edits of a draft.
    pub draft_update_interval_ms: u64,
    pub interrupt_on_new_message: bool,
    /// 👀 on receipt, then ✅ or ⚠️; off turns reactions into no-ops.
    pub ack_reactions: bool,
    pub show_tool_calls: bool,
}

impl Default for TelegramConfig {
    fn default() -> Self {
        Self {
            bot_token: None,
            api_url: DEFAULT_TELEGRAM_API_URL.to_string(),
            allowed_users: Vec::new(),
            mention_only: true,
            stream_mode: StreamMode::Off,
            draft_update_interval_ms: 1000,
            interrupt_on_new_message: true,
            ack_reactions: true,
            show_tool_calls: false,
        }
    }
}

impl TelegramConfig {
    /// Stage two for this section: defaults, the token variable, checks.
    pub(super) fn from_raw(
        raw: Option<RawTelegram>,
        env: &Environment,
    ) -> Result<Self, ConfigError> {
        let t = raw.unwrap_or_default();
        let d = Self::default();
        let bot_token = env
            .var("HEARTH_TELEGRAM_TOKEN")
            .map(str::to_string)
            .or(t.bot_token.filter(|s| !s.is_empty()))
            .map(Secret::new);
        let api_url = t
            .api_url
            .map(|u| u.trim_end_matches('/').to_string())
            .unwrap_or(d.api_url);
        if !(api_url.starts_with("http://") || api_url.starts_with("https://")) {
            return Err(ConfigError::invalid(
                "channels.telegram.api_url",
                format!("`{api_url}` is not an http:// or https:// URL"),
            ));
        }
        let allowed_users = t.allowed_users.unwrap_or(d.allowed_users);
        for user in &allowed_users {
            let bare = user.trim().trim_start_matches('@');
            let ok = user.trim() == "*"
                || user.trim().parse::<i64>().is_ok()
                || (!bare.is_empty()
                    && bare.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
            if !ok {
                return Err(ConfigError::invalid(
                    "channels.telegram.allowed_users",
                    format!("`{user}` is neither a numeric user id, an @username nor \"*\""),
                ));
            }
        }
        let stream_mode = match t.stream_mode.as_deref() {
            None => d.stream_mode,
            Some("off") => StreamMode::Off,
            Some("partial") => StreamMode::Partial,
            Some(other) => {
                return Err(ConfigError::invalid(
                    "channels.telegram.stream_mode",
                    format!("`{other}` is not one of off, partial"),
                ));
            }
        };
        let draft_update_interval_ms = t
            .draft_update_interval_ms
            .unwrap_or(d.draft_update_interval_ms);
        if !(100..=60_000).contains(&draft_update_interval_ms) {
            return Err(ConfigError::invalid(
                "channels.telegram.draft_update_interval_ms",
                "must be between 100 and 60000",
            ));
        }
        Ok(Self {
            bot_token,
            api_url,
            allowed_users,
            mention_only: t.mention_only.unwrap_or(d.mention_only),
            stream_mode,
            draft_update_interval_ms,
            interrupt_on_new_message: t
                .interrupt_on_new_message
                .unwrap_or(d.interrupt_on_new_message),
            ack_reactions: t.ack_reactions.unwrap_or(d.ack_reactions),
            show_tool_calls: t.show_tool_calls.unwrap_or(d.show_tool_calls),
        })
    }

    /// The section as TOML, the token masked.
    pub fn render(&self) -> String {
        let mut out = String::from("[channels.telegram]\n");
        match &self.bot_token {
            Some(s) => {
                let _ = writeln!(out, "bot_token = \"{s}\"");
            }
            None => out.push_str("# bot_token: not set\n"),
        }
        let users: Vec<String> = self.allowed_users.iter().map(|u| quote(u)).collect();
        let _ = writeln!(
            out,
            "api_url = {}\nallowed_users = [{}]\nmention_only = {}\nstream_mode = \"{}\"\ndraft_update_interval_ms = {}\ninterrupt_on_new_message = {}\nack_reactions = {}\nshow_tool_calls = {}",
            quote(&self.api_url),
            users.join(", "),
            self.mention_only,
            self.stream_mode.as_str(),
            self.draft_update_interval_ms,
            self.interrupt_on_new_message,
            self.ack_reactions,
            self.show_tool_calls,
        );
        out
    }
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml_text: &str) -> Result<TelegramConfig, ConfigError> {
        let raw: RawTelegram = toml::from_str(toml_text).unwrap();
        TelegramConfig::from_raw(Some(raw), &Environment::with_home("/home/u"))
    }

    #[test]
    fn defaults_allow_nobody_and_do_not_stream() {
        let c = parse("").unwrap();
        assert!(c.allowed_users.is_empty());
        assert_eq!(c.stream_mode, StreamMode::Off);
        assert_eq!(c.draft_update_interval_ms, 1000);
        assert_eq!(c.api_url, DEFAULT_TELEGRAM_API_URL);
    }

    #[test]
    fn values_are_read_and_checked() {
        let c = parse(
            "allowed_users = [\"123\", \"@alice\", \"*\"]\nstream_mode = \"partial\"\napi_url = \"http://127.0.0.1:9/\"",
        )
        .unwrap();
        assert_eq!(c.allowed_users, ["123", "@alice", "*"]);
        assert_eq!(c.stream_mode, StreamMode::Partial);
        assert_eq!(c.api_url, "http://127.0.0.1:9");
        let bad = parse("stream_mode = \"full\"").unwrap_err().to_string();
        assert!(bad.contains("channels.telegram.stream_mode"), "{bad}");
        let bad = parse("allowed_users = [\"al ice\"]")
            .unwrap_err()
            .to_string();
        assert!(bad.contains("allowed_users"), "{bad}");
        assert!(parse("draft_update_interval_ms = 5").is_err());
        assert!(parse("api_url = \"api.telegram.org\"").is_err());
    }

    #[test]
    fn the_environment_token_wins() {
        let raw: RawTelegram = toml::from_str("bot_token = \"from-file\"").unwrap();
        let env = Environment::with_home("/h").set("HEARTH_TELEGRAM_TOKEN", "from-env");
        let c = TelegramConfig::from_raw(Some(raw), &env).unwrap();
        assert_eq!(c.bot_token.unwrap().expose(), "from-env");
    }
}
