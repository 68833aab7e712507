//! `[models]`: where `hearth models pull` downloads from.

use std::fmt::Write;

use serde::Deserialize;

use super::ConfigError;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawModels {
    pub hub_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelsConfig {
    /// A Hugging Face hub or a mirror of it: files are fetched from
    /// `{hub_url}/{repo}/resolve/{revision}/{file}`.
    pub hub_url: String,
}

impl Default for ModelsConfig {
    fn default() -> Self {
        Self {
            hub_url: "https://huggingface.co".to_string(),
        }
    }
}

impl ModelsConfig {
    pub(super) fn from_raw(raw: Option<RawModels>) -> Result<Self, ConfigError> {
        let d = Self::default();
        let hub_url = raw
            .and_then(|r| r.hub_url)
            .map(|u| u.trim().trim_end_matches('/').to_string())
            .unwrap_or(d.hub_url);
        let valid = reqwest::Url::parse(&hub_url)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
        if !valid {
            return Err(ConfigError::invalid(
                "models.hub_url",
                format!("`{hub_url}` is not an http(s) URL (e.g. https://huggingface.co)"),
            ));
        }
        Ok(Self { hub_url })
    }

    pub(super) fn render(&self, out: &mut String) {
        let _ = writeln!(out, "[models]\nhub_url = \"{}\"\n", self.hub_url);
    }
}
