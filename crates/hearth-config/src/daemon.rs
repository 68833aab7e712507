//! The `[daemon]` and `[routing]` sections: how `hearth daemon` runs
//! messages, and which provider and model answer which message.
//!
//! Both stages live here (raw serde structs, then the validated types) so
//! the rest of the config module only gains one call and one render line.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Deserialize;

use super::ConfigError;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDaemon {
    pub message_timeout_secs: Option<u64>,
    pub shutdown_grace_secs: Option<u64>,
    pub loopback_channel: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRouting {
    pub default_provider: Option<String>,
    pub fallback: Option<Vec<String>>,
    pub models: Option<BTreeMap<String, String>>,
    pub rules: Option<Vec<RawRouteRule>>,
    pub images: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRouteRule {
    pub hint: Option<String>,
    pub keywords: Option<Vec<String>>,
    pub priority: Option<i32>,
    pub provider: Option<String>,
    pub model: Option<String>,
}

/// How the daemon treats messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonConfig {
    /// Seconds one model round may take; a message's budget is this ×
    /// min(max_tool_iterations, 4).
    pub message_timeout_secs: u64,
    /// Seconds in-flight replies get to finish at shutdown.
    pub shutdown_grace_secs: u64,
    /// A channel that receives nothing and logs what it is sent: lets the
    /// daemon run without any platform (benchmarks, smoke tests).
    pub loopback_channel: bool,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        Self {
            message_timeout_secs: 300,
            shutdown_grace_secs: 20,
            loopback_channel: false,
        }
    }
}

/// Which provider and model answer a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutingConfig {
    /// The provider for messages no rule matches.
    pub default_provider: String,
    /// Providers tried in order when the routed one fails before answering.
    pub fallback: Vec<String>,
    /// Models `/model NAME` and rules may name: name → GGUF file (for the
    /// local provider) or the provider's model id.
    pub models: BTreeMap<String, String>,
    /// Keyword rules; the matching rule with the highest priority wins.
    pub rules: Vec<RouteRule>,
    /// The provider for messages with pictures, when the local model
    /// cannot see (`"openai"` or `"anthropic"`); `None`: the usual route.
    pub images: Option<String>,
}

impl Default for RoutingConfig {
    fn default() -> Self {
        Self {
            default_provider: "local".to_string(),
            fallback: Vec::new(),
            models: BTreeMap::new(),
            rules: Vec::new(),
            images: None,
        }
    }
}

/// One keyword rule: a message containing any keyword gets this hint, and
/// the hint's provider and model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteRule {
    pub hint: String,
    /// Matched case-insensitively as whole words.
    pub keywords: Vec<String>,
    pub priority: i32,
    pub provider: String,
    /// A name from `[routing.models]`; `None` keeps the provider's default.
    pub model: Option<String>,
}

/// Stage two for both sections.
impl RoutingConfig {
    /// Checks that every provider the routes name exists: `"local"`, or
    /// `"openai"` / `"anthropic"` once its `[providers.*] model` is set.
    pub(super) fn check_providers(
        &self,
        openai_configured: bool,
        anthropic_configured: bool,
    ) -> Result<(), ConfigError> {
        let known = |name: &str| match name {
            "local" => true,
            "openai" => openai_configured,
            "anthropic" => anthropic_configured,
            _ => false,
        };
        let explain = |name: &str| match name {
            "openai" | "anthropic" => {
                format!("`{name}` needs `[providers.{name}] model` (and usually an api_key)")
            }
            _ => format!("`{name}` is not a provider; use \"local\", \"openai\" or \"anthropic\""),
        };
        if !known(&self.default_provider) {
            return Err(ConfigError::invalid(
                "routing.default_provider",
                explain(&self.default_provider),
            ));
        }
        for (i, name) in self.fallback.iter().enumerate() {
            if !known(name) {
                return Err(ConfigError::invalid(
                    &format!("routing.fallback[{i}]"),
                    explain(name),
                ));
            }
        }
        if let Some(name) = self.images.as_deref().filter(|n| !known(n)) {
            return Err(ConfigError::invalid("routing.images", explain(name)));
        }
        for (i, rule) in self.rules.iter().enumerate() {
            if !known(&rule.provider) {
                return Err(ConfigError::invalid(
                    &format!("routing.rules[{i}].provider"),
                    explain(&rule.provider),
                ));
            }
        }
        Ok(())
    }
}

pub(super) fn validate(
    daemon: Option<RawDaemon>,
    routing: Option<RawRouting>,
) -> Result<(DaemonConfig, RoutingConfig), ConfigError> {
    let daemon = daemon_config(daemon)?;
    let r = routing.unwrap_or_default();
    let default_provider = r
        .default_provider
        .unwrap_or_else(|| RoutingConfig::default().default_provider);
    if default_provider.trim().is_empty() {
        return Err(ConfigError::invalid(
            "routing.default_provider",
            "must name a provider, such as \"local\"",
        ));
    }
    let models = r.models.unwrap_or_default();
    for (name, file) in &models {
        if file.trim().is_empty() {
            return Err(ConfigError::invalid(
                &format!("routing.models.{name}"),
                "must name a model file or id",
            ));
        }
    }
    let rules = r
        .rules
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, rule)| route_rule(i, rule, &models, &default_provider))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((
        daemon,
        RoutingConfig {
            default_provider,
            fallback: r
                .fallback
                .unwrap_or_default()
                .into_iter()
                .map(|p| p.trim().to_string())
                .collect(),
            models,
            rules,
            images: r
                .images
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty()),
        },
    ))
}

/// `[daemon]`.
fn daemon_config(daemon: Option<RawDaemon>) -> Result<DaemonConfig, ConfigError> {
    let d = daemon.unwrap_or_default();
    let dd = DaemonConfig::default();
    let daemon = DaemonConfig {
        message_timeout_secs: d.message_timeout_secs.unwrap_or(dd.message_timeout_secs),
        shutdown_grace_secs: d.shutdown_grace_secs.unwrap_or(dd.shutdown_grace_secs),
        loopback_channel: d.loopback_channel.unwrap_or(dd.loopback_channel),
    };
    if !(1..=3600).contains(&daemon.message_timeout_secs) {
        return Err(ConfigError::invalid(
            "daemon.message_timeout_secs",
            "must be between 1 and 3600",
        ));
    }
    if daemon.shutdown_grace_secs > 600 {
        return Err(ConfigError::invalid(
            "daemon.shutdown_grace_secs",
            "must be at most 600",
        ));
    }
    Ok(daemon)
}

/// `[[routing.rules]]` number `i`; `models`: the names it may use.
fn route_rule(
    i: usize,
    rule: RawRouteRule,
    models: &BTreeMap<String, String>,
    default_provider: &str,
) -> Result<RouteRule, ConfigError> {
    let key = |field: &str| format!("routing.rules[{i}].{field}");
    let keywords: Vec<String> = rule
        .keywords
        .unwrap_or_default()
        .into_iter()
        .map(|k| k.trim().to_lowercase())
        .filter(|k| !k.is_empty())
        .collect();
    if keywords.is_empty() {
        return Err(ConfigError::invalid(
            &key("keywords"),
            "needs at least one keyword",
        ));
    }
    let model = rule.model.filter(|m| !m.trim().is_empty());
    if let Some(m) = &model
        && !models.contains_key(m)
    {
        return Err(ConfigError::invalid(
            &key("model"),
            format!("`{m}` is not a name in [routing.models]"),
        ));
    }
    Ok(RouteRule {
        hint: rule.hint.unwrap_or_else(|| format!("rule{i}")),
        keywords,
        priority: rule.priority.unwrap_or(0),
        provider: rule
            .provider
            .filter(|p| !p.trim().is_empty())
            .unwrap_or_else(|| default_provider.to_string()),
        model,
    })
}

/// Both sections as TOML, for `hearth config check`.
pub(super) fn render(out: &mut String, daemon: &DaemonConfig, routing: &RoutingConfig) {
    let _ = writeln!(
        out,
        "[daemon]\nmessage_timeout_secs = {}\nshutdown_grace_secs = {}\nloopback_channel = {}\n",
        daemon.message_timeout_secs, daemon.shutdown_grace_secs, daemon.loopback_channel
    );
    let _ = writeln!(
        out,
        "[routing]\ndefault_provider = {}\nfallback = [{}]\n",
        quote(&routing.default_provider),
        routing
            .fallback
            .iter()
            .map(|p| quote(p))
            .collect::<Vec<_>>()
            .join(", ")
    );
    match &routing.images {
        Some(p) => {
            let _ = writeln!(
                out,
                "# pictures go to this provider\nimages = {}\n",
                quote(p)
            );
        }
        None => out.push_str("# images: unset (pictures take the usual route)\n\n"),
    }
    if routing.models.is_empty() {
        out.push_str("# [routing.models]: none\n\n");
    } else {
        out.push_str("[routing.models]\n");
        for (name, file) in &routing.models {
            let _ = writeln!(out, "{} = {}", key(name), quote(file));
        }
        out.push('\n');
    }
    if routing.rules.is_empty() {
        out.push_str("# [[routing.rules]]: none\n\n");
    }
    for rule in &routing.rules {
        let keywords: Vec<String> = rule.keywords.iter().map(|k| quote(k)).collect();
        let _ = writeln!(
            out,
            "[[routing.rules]]\nhint = {}\nkeywords = [{}]\npriority = {}\nprovider = {}",
            quote(&rule.hint),
            keywords.join(", "),
            rule.priority,
            quote(&rule.provider)
        );
        if let Some(m) = &rule.model {
            let _ = writeln!(out, "model = {}", quote(m));
        }
        out.push('\n');
    }
}

/// A bare TOML key where it may be one, else quoted.
fn key(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        s.to_string()
    } else {
        quote(s)
    }
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::{Config, Environment};

    fn parse(text: &str) -> Result<Config, crate::ConfigError> {
        Config::parse(
            text,
            Path::new("/c.toml"),
            &Environment::with_home("/home/u"),
        )
    }

    #[test]
    fn rules_parse_and_render() {
        let c = parse(
            "[daemon]\nmessage_timeout_secs = 30\n[routing]\nmodels = { coder = \"qwen.gguf\" }\n[[routing.rules]]\nhint = \"code\"\nkeywords = [\"Rust\", \"python\"]\npriority = 5\nmodel = \"coder\"\n",
        )
        .unwrap();
        assert_eq!(c.daemon.message_timeout_secs, 30);
        let rule = &c.routing.rules[0];
        assert_eq!(rule.keywords, ["rust", "python"]);
        assert_eq!(rule.provider, "local");
        assert_eq!(rule.model.as_deref(), Some("coder"));
        let shown = c.render();
        assert!(
            shown.contains("[[routing.rules]]\nhint = \"code\""),
            "{shown}"
        );
        assert!(shown.contains("coder = \"qwen.gguf\""), "{shown}");
    }

    #[test]
    fn bad_rules_are_named() {
        let e = parse("[[routing.rules]]\nkeywords = []\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("routing.rules[0].keywords"), "{e}");
        let e = parse("[[routing.rules]]\nkeywords = [\"a\"]\nmodel = \"nope\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("routing.rules[0].model"), "{e}");
        let e = parse("[daemon]\nmessage_timeout_secs = 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("daemon.message_timeout_secs"), "{e}");
        let e = parse("[daemon]\nbogus = 1\n").unwrap_err().to_string();
        assert!(e.contains("daemon.bogus"), "{e}");
    }
}
