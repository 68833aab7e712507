//! `[channels.gateway]`: a small HTTP API on the home network, so scripts,
//! home automation or a phone shortcut can talk to the assistant.

use std::fmt::Write;
use std::net::SocketAddr;

use serde::Deserialize;

use super::{ConfigError, Environment, Secret};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGateway {
    pub listen: Option<String>,
    pub token: Option<String>,
    pub reply_timeout_secs: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayConfig {
    /// Where to listen; `None` keeps the gateway off.
    pub listen: Option<SocketAddr>,
    /// The bearer token clients send; `HEARTH_GATEWAY_TOKEN` wins. Required
    /// unless the address is loopback.
    pub token: Option<Secret>,
    /// How long a request waits for its reply.
    pub reply_timeout_secs: u64,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            listen: None,
            token: None,
            reply_timeout_secs: 600,
        }
    }
}

impl GatewayConfig {
    pub(super) fn from_raw(
        raw: Option<RawGateway>,
        env: &Environment,
    ) -> Result<Self, ConfigError> {
        let raw = raw.unwrap_or_default();
        let listen = match raw.listen.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(text) => Some(text.parse::<SocketAddr>().map_err(|_| {
                ConfigError::invalid(
                    "channels.gateway.listen",
                    format!("`{text}` is not an address with a port, such as \"127.0.0.1:8787\""),
                )
            })?),
        };
        let token = env
            .var("HEARTH_GATEWAY_TOKEN")
            .map(str::to_string)
            .or(raw.token.filter(|t| !t.is_empty()))
            .map(Secret::new);
        if let Some(addr) = listen
            && !addr.ip().is_loopback()
            && token.is_none()
        {
            return Err(ConfigError::invalid(
                "channels.gateway.token",
                format!(
                    "listening on {addr}, beyond this machine, needs a token (or HEARTH_GATEWAY_TOKEN)"
                ),
            ));
        }
        if let Some(token) = &token
            && token.expose().chars().count() < 16
        {
            return Err(ConfigError::invalid(
                "channels.gateway.token",
                "must be at least 16 characters (try `openssl rand -hex 24`)",
            ));
        }
        let reply_timeout_secs = raw.reply_timeout_secs.unwrap_or(600);
        if reply_timeout_secs == 0 {
            return Err(ConfigError::invalid(
                "channels.gateway.reply_timeout_secs",
                "must be at least 1",
            ));
        }
        Ok(Self {
            listen,
            token,
            reply_timeout_secs,
        })
    }

    pub(super) fn render(&self, out: &mut String) {
        out.push_str("[channels.gateway]\n");
        match self.listen {
            Some(addr) => {
                let _ = writeln!(out, "listen = \"{addr}\"");
            }
            None => out.push_str("# listen: not set (the gateway is off)\n"),
        }
        let _ = writeln!(
            out,
            "{}\nreply_timeout_secs = {}\n",
            super::render::secret_line("token", &self.token),
            self.reply_timeout_secs
        );
    }
}
