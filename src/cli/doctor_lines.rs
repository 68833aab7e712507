//! `hearth doctor`'s lines that read only the config: where the service's
//! secrets come from, whether the gateway can serve as configured (with the
//! web page's address when it can), and what the cloud providers are for;
//! and the one line that asks servers: whether the mail channel can log in.

use super::doctor_memory::Mark;
use crate::channels::gateway::page_url as gateway_page_url;
use crate::config::{Config, Environment, secrets};

/// Where the secrets come from.
pub fn secrets_line(env: &Environment) -> (Mark, String) {
    match env.secrets_read() {
        Some(path) => (Mark::Ok, format!("read from {}", path.display())),
        None => (
            Mark::Info,
            format!(
                "no {}: tokens (HEARTH_TELEGRAM_TOKEN, HEARTH_GATEWAY_TOKEN, an LMS or MCP server's) go there, one NAME=value a line, chmod 600",
                secrets::HINT
            ),
        ),
    }
}

/// The gateway: off, refused for want of a token, or where its page is.
pub fn gateway_line(config: &Config) -> (Mark, String) {
    let Some(addr) = config.gateway.listen else {
        return (
            Mark::Info,
            "off (`[channels.gateway] listen` is not set)".into(),
        );
    };
    match config.gateway.check_serving() {
        Ok(()) => (
            Mark::Ok,
            format!("the daemon serves the page at {}", gateway_page_url(addr)),
        ),
        Err(e) => (Mark::Fail, e.to_string()),
    }
}

/// What the cloud providers are set up to do (not contacted).
pub fn cloud_line(config: &Config) -> String {
    let providers = [
        (
            "openai",
            config.openai.model.as_deref(),
            config.openai.base_url.as_str(),
            config.openai.api_key.is_some(),
        ),
        (
            "anthropic",
            config.anthropic.model.as_deref(),
            config.anthropic.base_url.as_str(),
            config.anthropic.api_key.is_some(),
        ),
    ];
    let lines: Vec<String> = providers
        .into_iter()
        .filter_map(|(name, model, url, key)| {
            let key = if key {
                "with an API key"
            } else {
                "without an API key"
            };
            let url = crate::config::mask_url(url);
            Some(format!(
                "{name} `{}` at {url} {key}, {}",
                model?,
                cloud_role(config, name)
            ))
        })
        .collect();
    if lines.is_empty() {
        return "none configured: hearth answers only locally".to_string();
    }
    format!("{} (not contacted)", lines.join("; "))
}

/// What the routes use cloud provider `name` for.
fn cloud_role(config: &Config, name: &str) -> String {
    let routing = &config.routing;
    if routing.default_provider == name {
        "the default provider".into()
    } else if routing.fallback.iter().any(|p| p == name) {
        "a fallback".into()
    } else if routing.rules.iter().any(|r| r.provider == name) {
        "for matching routing rules".into()
    } else {
        format!("unused: no [routing] entry names \"{name}\"")
    }
}

/// The Matrix channel: what the homeserver said of the saved session or
/// the configured login (nothing synced, no device made), with the fix
/// when it refused.
pub async fn matrix_line(config: &Config) -> (Mark, String) {
    let Some(mut settings) = crate::daemon::matrix_settings(config) else {
        return (Mark::Info, "off (no [channels.matrix])".into());
    };
    settings.request_timeout = std::time::Duration::from_secs(10);
    let channel = match crate::channels::MatrixChannel::new(settings) {
        Ok(c) => c,
        Err(e) => return (Mark::Fail, e.to_string()),
    };
    match channel.probe().await {
        Ok(said) => (Mark::Ok, said),
        Err(e) => (
            Mark::Fail,
            format!("{e}: {}", crate::channels::matrix::fix(&e)),
        ),
    }
}

/// The mail channel: off, or what its IMAP and SMTP servers answered to a
/// login (nothing read or marked), with the fix when they did not.
pub async fn email_line(config: &Config) -> (Mark, String) {
    let Some(mut settings) = crate::daemon::email_settings(config) else {
        return (Mark::Info, "off (no [channels.email])".into());
    };
    settings.timeout = std::time::Duration::from_secs(10);
    let (imap, smtp) = (
        format!("{}:{}", settings.imap.0, settings.imap.1),
        format!("{}:{}", settings.smtp.0, settings.smtp.1),
    );
    let user = settings.username.clone();
    let channel = match crate::channels::EmailChannel::new(settings) {
        Ok(c) => c,
        Err(e) => return (Mark::Fail, e.to_string()),
    };
    match channel.probe().await {
        Ok(p) => (
            Mark::Ok,
            format!(
                "IMAP {imap} takes the login as {user} ({} mails in {}; {}), SMTP {smtp} answers",
                p.mails,
                channel.settings().mailbox,
                if p.idle { "IDLE" } else { "no IDLE: polled" }
            ),
        ),
        Err(e) => (
            Mark::Fail,
            format!("{e}: {}", crate::channels::email::fix(&e)),
        ),
    }
}
