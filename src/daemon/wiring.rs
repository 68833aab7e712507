//! The channels `hearth daemon` starts, built from the config in one place:
//! each channel crate gets its settings from here, and nothing else of
//! hearth's.

use std::sync::Arc;
use std::time::Duration;

use crate::channels::gateway::{GatewaySettings, ServedModel};
use crate::channels::telegram::{Allowlist, TelegramError, TelegramSettings};
use crate::channels::{
    Channel, ChannelError, GatewayChannel, Intake, SendMessage, TelegramChannel,
};
use crate::config::{Config, GatewayConfig};
use crate::metrics::Metrics;
use crate::workspace::Workspaces;
use futures::future::BoxFuture;

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("channel `{channel}`: {message}")]
    Channel { channel: String, message: String },
}

/// The channels built, and the gateway among them (which is given its
/// desk once the runtime exists).
pub struct Built {
    pub channels: Vec<Arc<dyn Channel>>,
    pub gateway: Option<Arc<GatewayChannel>>,
}

/// Every channel the config turns on.
/// The gateway serves `metrics` at `/metrics`, and `served` as itself on
/// its OpenAI-compatible API.
pub fn build_channels(
    config: &Config,
    metrics: &Arc<Metrics>,
    served: Option<Arc<dyn ServedModel>>,
) -> Result<Built, BuildError> {
    let mut channels: Vec<Arc<dyn Channel>> = Vec::new();
    let mut built_gateway = None;
    if config.telegram.bot_token.is_some() {
        let telegram = telegram_settings(config)
            .and_then(TelegramChannel::new)
            .map_err(|e| BuildError::Channel {
                channel: "telegram".into(),
                message: e.to_string(),
            })?;
        channels.push(Arc::new(telegram));
    }
    if let Some(settings) = email_settings(config) {
        let email = hearth_email::EmailChannel::new(settings).map_err(|e| BuildError::Channel {
            channel: hearth_email::NAME.into(),
            message: e.to_string(),
        })?;
        channels.push(Arc::new(email));
    }
    if let Some(settings) = matrix_settings(config) {
        let matrix =
            hearth_matrix::MatrixChannel::new(settings).map_err(|e| BuildError::Channel {
                channel: hearth_matrix::NAME.into(),
                message: e.to_string(),
            })?;
        channels.push(Arc::new(matrix));
    }
    if let Some(gateway) = gateway_settings(&config.gateway).map(GatewayChannel::new) {
        config
            .gateway
            .check_serving()
            .map_err(|e| BuildError::Channel {
                channel: "gateway".into(),
                message: e.to_string(),
            })?;
        let gateway = gateway.bind_now().map_err(|e| BuildError::Channel {
            channel: "gateway".into(),
            message: e.to_string(),
        })?;
        let mut gateway = gateway.with_metrics(metrics.clone());
        if let Some(served) = served {
            gateway = gateway.with_served_model(served);
        }
        let gateway = Arc::new(gateway);
        built_gateway = Some(gateway.clone());
        channels.push(gateway);
    }
    if config.daemon.loopback_channel {
        channels.push(Arc::new(LoopbackChannel));
    }
    Ok(Built {
        channels,
        gateway: built_gateway,
    })
}

/// The mail channel's settings for `hearth daemon`, when `[channels.email]`
/// is there; its state in the data folder's `email/`.
pub fn email_settings(config: &Config) -> Option<hearth_email::EmailSettings> {
    let e = config.email.as_ref()?;
    Some(hearth_email::EmailSettings {
        address: e.address.clone(),
        username: e.username.clone(),
        password: e.password.clone(),
        imap: (e.imap_host.clone(), e.imap_port),
        smtp: (e.smtp_host.clone(), e.smtp_port),
        imap_security: security(e.imap_security),
        smtp_security: security(e.smtp_security),
        ca_file: e.ca_file.clone(),
        mailbox: e.mailbox.clone(),
        allowed_senders: e.allowed_senders.clone(),
        authserv_id: e.authserv_id.clone(),
        tokens: e.tokens.clone(),
        poll_interval: Duration::from_secs(e.poll_interval_secs),
        timeout: Duration::from_secs(60),
        state_dir: config.data_dir.join(hearth_email::NAME),
    })
}

/// The Matrix channel's settings for `hearth daemon`, when
/// `[channels.matrix]` is there; its session, keys and sync token in the
/// data folder's `matrix/`.
pub fn matrix_settings(config: &Config) -> Option<hearth_matrix::MatrixSettings> {
    let m = config.matrix.as_ref()?;
    Some(hearth_matrix::MatrixSettings {
        homeserver: m.homeserver.clone(),
        user: m.user.clone(),
        login: match &m.login {
            crate::config::MatrixLogin::Password(p) => hearth_matrix::Login::Password(p.clone()),
            crate::config::MatrixLogin::AccessToken(t) => hearth_matrix::Login::Token(t.clone()),
        },
        device_name: m.device_name.clone(),
        allowed_users: m.allowed_users.clone(),
        sync_timeout: Duration::from_secs(30),
        request_timeout: Duration::from_secs(30),
        state_dir: config.data_dir.join(hearth_matrix::NAME),
    })
}

fn security(s: crate::config::MailSecurity) -> hearth_email::Security {
    use crate::config::MailSecurity as M;
    match s {
        M::Tls => hearth_email::Security::Tls,
        M::StartTls => hearth_email::Security::StartTls,
        M::Plain => hearth_email::Security::Plain,
    }
}

/// The Telegram channel's settings for `hearth daemon`; an error when no
/// token is set.
pub fn telegram_settings(config: &Config) -> Result<TelegramSettings, TelegramError> {
    let t = &config.telegram;
    let token = t.bot_token.clone().ok_or(TelegramError::NoToken)?;
    Ok(TelegramSettings {
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

/// The gateway's settings; `None` when `[channels.gateway] listen` is
/// unset (the gateway is off).
pub fn gateway_settings(config: &GatewayConfig) -> Option<GatewaySettings> {
    Some(GatewaySettings {
        listen: config.listen?,
        token: config.token.clone(),
        reply_timeout: Duration::from_secs(config.reply_timeout_secs),
        request_timeout: Duration::from_secs(config.request_timeout_secs),
        max_connections: config.max_connections,
        ws_ping: Duration::from_secs(config.ws_ping_secs),
        allowed_origins: config.allowed_origins.clone(),
        allowed_hosts: config.allowed_hosts.clone(),
        session: Duration::from_secs(config.session_minutes * 60),
    })
}

/// A channel that receives nothing and logs what it is sent: the daemon
/// runs with no platform (benchmarks, smoke tests).
pub struct LoopbackChannel;

impl Channel for LoopbackChannel {
    fn name(&self) -> &str {
        "loopback"
    }

    fn send<'a>(&'a self, message: &'a SendMessage) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            tracing::info!(
                to = message.recipient,
                chars = message.content.len(),
                "loopback send"
            );
            Ok(())
        })
    }

    fn listen(&self, intake: Intake) -> BoxFuture<'_, Result<(), ChannelError>> {
        Box::pin(async move {
            intake.closed().await;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::channels::StreamMode;
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
        let s = telegram_settings(&c).unwrap();
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
        let e = telegram_settings(&c).unwrap_err().to_string();
        assert!(e.contains("HEARTH_TELEGRAM_TOKEN"), "{e}");
    }
}
