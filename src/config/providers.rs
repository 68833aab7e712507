//! `[providers.openai]`: an OpenAI-compatible API that may stand in when the
//! local engine cannot answer (or answer the routes that name it).

use std::fmt::Write;

use serde::Deserialize;

use super::{ConfigError, Environment, Secret};

pub const OPENAI_DEFAULT_URL: &str = "https://api.openai.com/v1";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOpenAi {
    pub api_key: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub timeout_secs: Option<u64>,
    pub context_window: Option<u32>,
    pub native_tools: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// From `OPENAI_API_KEY` when set, else the file. Servers on your own
    /// network often need none.
    pub api_key: Option<Secret>,
    /// The API root, up to and including `/v1`.
    pub base_url: String,
    /// The model id; unset means the provider is not configured.
    pub model: Option<String>,
    /// The longest a whole reply may take.
    pub timeout_secs: u64,
    /// The model's context window in tokens, where known.
    pub context_window: Option<u32>,
    /// Tools through the API's own function calling (`tools`,
    /// `tool_calls`); false sends them as text in hearth's protocol, for
    /// servers without function calling.
    pub native_tools: bool,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            api_key: None,
            base_url: OPENAI_DEFAULT_URL.to_string(),
            model: None,
            timeout_secs: 120,
            context_window: None,
            native_tools: true,
        }
    }
}

impl OpenAiConfig {
    pub(super) fn from_raw(raw: Option<RawOpenAi>, env: &Environment) -> Result<Self, ConfigError> {
        let raw = raw.unwrap_or_default();
        let defaults = Self::default();
        let base_url = raw
            .base_url
            .map(|u| u.trim().to_string())
            .unwrap_or(defaults.base_url);
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(ConfigError::invalid(
                "providers.openai.base_url",
                format!("`{base_url}` is not an http:// or https:// URL"),
            ));
        }
        let timeout_secs = raw.timeout_secs.unwrap_or(defaults.timeout_secs);
        if timeout_secs == 0 {
            return Err(ConfigError::invalid(
                "providers.openai.timeout_secs",
                "must be at least 1",
            ));
        }
        if raw.context_window == Some(0) {
            return Err(ConfigError::invalid(
                "providers.openai.context_window",
                "must be at least 1 (or left out)",
            ));
        }
        let api_key = env
            .var("OPENAI_API_KEY")
            .map(str::to_string)
            .or(raw.api_key.filter(|k| !k.is_empty()))
            .map(Secret::new);
        Ok(Self {
            api_key,
            base_url,
            model: raw
                .model
                .map(|m| m.trim().to_string())
                .filter(|m| !m.is_empty()),
            timeout_secs,
            context_window: raw.context_window,
            native_tools: raw.native_tools.unwrap_or(defaults.native_tools),
        })
    }

    pub(super) fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "[providers.openai]\n{}",
            super::render::secret_line("api_key", &self.api_key)
        );
        let _ = writeln!(
            out,
            "base_url = {}",
            toml::Value::from(self.base_url.as_str())
        );
        match &self.model {
            Some(model) => {
                let _ = writeln!(out, "model = {}", toml::Value::from(model.as_str()));
            }
            None => out.push_str("# model: not set (the provider is off)\n"),
        }
        let _ = writeln!(out, "timeout_secs = {}", self.timeout_secs);
        match self.context_window {
            Some(n) => {
                let _ = writeln!(out, "context_window = {n}");
            }
            None => out.push_str("# context_window: not set\n"),
        }
        let _ = writeln!(out, "native_tools = {}", self.native_tools);
        out.push('\n');
    }
}
