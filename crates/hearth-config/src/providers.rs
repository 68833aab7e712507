//! `[providers.openai]` and `[providers.anthropic]`: cloud APIs that may
//! stand in when the local engine cannot answer (or answer the routes that
//! name them).

use std::fmt::Write;

use serde::Deserialize;

use super::{ConfigError, Environment, Secret};

pub const OPENAI_DEFAULT_URL: &str = "https://api.openai.com/v1";
pub const ANTHROPIC_DEFAULT_URL: &str = "https://api.anthropic.com";

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
        let e = Endpoint::check(
            "providers.openai",
            Endpoint {
                base_url: raw.base_url.unwrap_or(defaults.base_url),
                model: raw.model,
                timeout_secs: raw.timeout_secs.unwrap_or(defaults.timeout_secs),
                context_window: raw.context_window,
            },
        )?;
        Ok(Self {
            api_key: key(env, "OPENAI_API_KEY", raw.api_key),
            base_url: e.base_url,
            model: e.model,
            timeout_secs: e.timeout_secs,
            context_window: e.context_window,
            native_tools: raw.native_tools.unwrap_or(defaults.native_tools),
        })
    }

    pub(super) fn render(&self, out: &mut String) {
        render_endpoint(
            out,
            "openai",
            &self.api_key,
            &self.base_url,
            &self.model,
            self.timeout_secs,
            self.context_window,
        );
        let _ = writeln!(out, "native_tools = {}", self.native_tools);
        out.push('\n');
    }
}

/// What both cloud sections hold besides the key, checked.
struct Endpoint {
    base_url: String,
    model: Option<String>,
    timeout_secs: u64,
    context_window: Option<u32>,
}

impl Endpoint {
    fn check(section: &str, mut e: Endpoint) -> Result<Endpoint, ConfigError> {
        e.base_url = e.base_url.trim().to_string();
        if !(e.base_url.starts_with("http://") || e.base_url.starts_with("https://")) {
            return Err(ConfigError::invalid(
                &format!("{section}.base_url"),
                format!("`{}` is not an http:// or https:// URL", e.base_url),
            ));
        }
        if e.timeout_secs == 0 {
            return Err(ConfigError::invalid(
                &format!("{section}.timeout_secs"),
                "must be at least 1",
            ));
        }
        if e.context_window == Some(0) {
            return Err(ConfigError::invalid(
                &format!("{section}.context_window"),
                "must be at least 1 (or left out)",
            ));
        }
        e.model = e
            .model
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty());
        Ok(e)
    }
}

/// The API key: the environment's `var` first, else the file's.
fn key(env: &Environment, var: &str, file: Option<String>) -> Option<Secret> {
    env.var(var)
        .map(str::to_string)
        .or(file.filter(|k| !k.is_empty()))
        .map(Secret::new)
}

fn render_endpoint(
    out: &mut String,
    name: &str,
    api_key: &Option<Secret>,
    base_url: &str,
    model: &Option<String>,
    timeout_secs: u64,
    context_window: Option<u32>,
) {
    let _ = writeln!(
        out,
        "[providers.{name}]\n{}",
        super::render::secret_line("api_key", api_key)
    );
    let shown = super::mask_url(base_url);
    let _ = writeln!(out, "base_url = {}", toml::Value::from(shown));
    match model {
        Some(model) => {
            let _ = writeln!(out, "model = {}", toml::Value::from(model.as_str()));
        }
        None => out.push_str("# model: not set (the provider is off)\n"),
    }
    let _ = writeln!(out, "timeout_secs = {timeout_secs}");
    match context_window {
        Some(n) => {
            let _ = writeln!(out, "context_window = {n}");
        }
        None => out.push_str("# context_window: not set\n"),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAnthropic {
    pub api_key: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub timeout_secs: Option<u64>,
    pub context_window: Option<u32>,
}

/// `[providers.anthropic]`: Anthropic's Messages API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnthropicConfig {
    /// From `ANTHROPIC_API_KEY` when set, else the file.
    pub api_key: Option<Secret>,
    /// The API root, without `/v1`.
    pub base_url: String,
    /// The model id; unset means the provider is not configured.
    pub model: Option<String>,
    /// The longest a whole reply may take.
    pub timeout_secs: u64,
    /// The model's context window in tokens, where known.
    pub context_window: Option<u32>,
}

impl Default for AnthropicConfig {
    fn default() -> Self {
        Self {
            api_key: None,
            base_url: ANTHROPIC_DEFAULT_URL.to_string(),
            model: None,
            timeout_secs: 120,
            context_window: None,
        }
    }
}

impl AnthropicConfig {
    pub(super) fn from_raw(
        raw: Option<RawAnthropic>,
        env: &Environment,
    ) -> Result<Self, ConfigError> {
        let raw = raw.unwrap_or_default();
        let defaults = Self::default();
        let e = Endpoint::check(
            "providers.anthropic",
            Endpoint {
                base_url: raw.base_url.unwrap_or(defaults.base_url),
                model: raw.model,
                timeout_secs: raw.timeout_secs.unwrap_or(defaults.timeout_secs),
                context_window: raw.context_window,
            },
        )?;
        Ok(Self {
            api_key: key(env, "ANTHROPIC_API_KEY", raw.api_key),
            base_url: e.base_url.trim_end_matches('/').to_string(),
            model: e.model,
            timeout_secs: e.timeout_secs,
            context_window: e.context_window,
        })
    }

    pub(super) fn render(&self, out: &mut String) {
        render_endpoint(
            out,
            "anthropic",
            &self.api_key,
            &self.base_url,
            &self.model,
            self.timeout_secs,
            self.context_window,
        );
        out.push('\n');
    }
}
