//! `[channels.gateway]`: a small HTTP API on the home network, so scripts,
//! home automation or a phone shortcut can talk to the assistant.
//!
//! A web page the user visits can send requests to any address the browser
//! reaches, loopback included, so the gateway trusts no address: a token is
//! required everywhere unless `allow_loopback_without_token` says otherwise
//! for a loopback address, and `allowed_origins` and `allowed_hosts` name
//! the only sites and host names requests may come from.

use std::fmt::Write;
use std::net::SocketAddr;

use serde::Deserialize;

use super::secrets::HINT as SECRETS_HINT;
use super::{ConfigError, Environment, Secret};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGateway {
    pub listen: Option<String>,
    pub token: Option<String>,
    pub reply_timeout_secs: Option<u64>,
    pub allow_loopback_without_token: Option<bool>,
    pub allowed_origins: Option<Vec<String>>,
    pub allowed_hosts: Option<Vec<String>>,
    pub max_connections: Option<usize>,
    pub request_timeout_secs: Option<u64>,
    pub ws_ping_secs: Option<u64>,
    pub session_minutes: Option<u64>,
    pub owner: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayConfig {
    /// Where to listen; `None` keeps the gateway off.
    pub listen: Option<SocketAddr>,
    /// The bearer token clients send; `HEARTH_GATEWAY_TOKEN` wins. Required
    /// unless `allow_loopback_without_token` and the address is loopback.
    pub token: Option<Secret>,
    /// How long a request waits for its reply.
    pub reply_timeout_secs: u64,
    /// No token on a loopback address (any local program, and any web page
    /// a local browser shows that the origin check lets through, may talk).
    pub allow_loopback_without_token: bool,
    /// `Origin` values a request may carry (`scheme://host[:port]`); a
    /// request with any other `Origin` (a web page) is refused.
    pub allowed_origins: Vec<String>,
    /// Host names, besides the listen address and IP literals, that the
    /// `Host` header may name (a name on the home network's DNS).
    pub allowed_hosts: Vec<String>,
    /// Connections served at once; past it, the oldest one still sending its
    /// request is closed.
    pub max_connections: usize,
    /// How long a client may take to send a whole request (headers, then body).
    pub request_timeout_secs: u64,
    /// How often `/ws/chat` pings a client; one that sends nothing, not
    /// even a pong, for three intervals is closed. Keep it below the idle
    /// timeout of any proxy in between (nginx's is 60 s).
    pub ws_ping_secs: u64,
    /// How long a sign-in on the web page lasts: its session cookie
    /// expires then, and the token must be entered again.
    pub session_minutes: u64,
    /// Who signs in on the web page, as `channel:sender` (`telegram:<user
    /// id>`): their approval questions on those channels are listed on the
    /// page, and may be answered there. The gateway's own are always.
    pub owner: Vec<String>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            listen: None,
            token: None,
            reply_timeout_secs: 600,
            allow_loopback_without_token: false,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_connections: 128,
            request_timeout_secs: 10,
            ws_ping_secs: 20,
            session_minutes: 12 * 60,
            owner: Vec::new(),
        }
    }
}

impl GatewayConfig {
    pub(super) fn from_raw(
        raw: Option<RawGateway>,
        env: &Environment,
    ) -> Result<Self, ConfigError> {
        let raw = raw.unwrap_or_default();
        let defaults = Self::default();
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
        let allow_loopback_without_token = raw.allow_loopback_without_token.unwrap_or(false);
        check_length(token.as_ref())?;
        let reply_timeout_secs = at_least_one(
            raw.reply_timeout_secs,
            defaults.reply_timeout_secs,
            "reply_timeout_secs",
        )?;
        let request_timeout_secs = at_least_one(
            raw.request_timeout_secs,
            defaults.request_timeout_secs,
            "request_timeout_secs",
        )?;
        let ws_ping_secs = at_least_one(raw.ws_ping_secs, defaults.ws_ping_secs, "ws_ping_secs")?;
        let session_minutes = session_minutes(raw.session_minutes, defaults.session_minutes)?;
        let max_connections = at_least_one(
            raw.max_connections.map(|n| n as u64),
            defaults.max_connections as u64,
            "max_connections",
        )? as usize;
        let allowed_origins = raw
            .allowed_origins
            .unwrap_or_default()
            .into_iter()
            .map(|o| origin(&o))
            .collect::<Result<_, _>>()?;
        let owner = raw
            .owner
            .unwrap_or_default()
            .into_iter()
            .map(|o| identity(&o))
            .collect::<Result<_, _>>()?;
        let allowed_hosts = raw
            .allowed_hosts
            .unwrap_or_default()
            .into_iter()
            .map(|h| host(&h))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            listen,
            token,
            reply_timeout_secs,
            allow_loopback_without_token,
            allowed_origins,
            allowed_hosts,
            max_connections,
            request_timeout_secs,
            ws_ping_secs,
            session_minutes,
            owner,
        })
    }

    /// Whether the gateway may serve as configured: one that listens needs
    /// a token, and without one it may listen on loopback only, and only
    /// when the config says so. Checked by what serves the gateway (the
    /// daemon, `config check`), not by every command that reads the config:
    /// `hearth ask` in a shell without the token is not refused for it.
    pub fn check_serving(&self) -> Result<(), ConfigError> {
        let Some(addr) = self.listen else {
            return Ok(());
        };
        if self.token.is_some() {
            return Ok(());
        }
        if !addr.ip().is_loopback() {
            return Err(ConfigError::invalid(
                "channels.gateway.token",
                format!(
                    "listening on {addr}, beyond this machine, needs a token (HEARTH_GATEWAY_TOKEN in {SECRETS_HINT}, or `token` here)"
                ),
            ));
        }
        if !self.allow_loopback_without_token {
            return Err(ConfigError::invalid(
                "channels.gateway.token",
                format!(
                    "the gateway needs a token even on loopback, where any web page the browser shows can reach it: put HEARTH_GATEWAY_TOKEN=<`openssl rand -hex 24`> in {SECRETS_HINT}, or set allow_loopback_without_token = true"
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn render(&self, out: &mut String) {
        out.push_str("[channels.gateway]\n");
        match self.listen {
            Some(addr) => {
                let _ = writeln!(out, "listen = \"{addr}\"");
            }
            None => out.push_str("# listen: not set (the gateway is off)\n"),
        }
        let list = |items: &[String]| {
            items
                .iter()
                .map(|i| format!("\"{i}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "{}\nallow_loopback_without_token = {}\nallowed_origins = [{}]\nallowed_hosts = [{}]\nreply_timeout_secs = {}\nrequest_timeout_secs = {}\nmax_connections = {}\nws_ping_secs = {}\nsession_minutes = {}\nowner = [{}]\n",
            super::render::secret_line("token", &self.token),
            self.allow_loopback_without_token,
            list(&self.allowed_origins),
            list(&self.allowed_hosts),
            self.reply_timeout_secs,
            self.request_timeout_secs,
            self.max_connections,
            self.ws_ping_secs,
            self.session_minutes,
            list(&self.owner),
        );
    }
}

/// The longest sign-in on the web page: 30 days.
const SESSION_MINUTES_MOST: u64 = 30 * 24 * 60;

fn session_minutes(value: Option<u64>, default: u64) -> Result<u64, ConfigError> {
    let minutes = at_least_one(value, default, "session_minutes")?;
    if minutes > SESSION_MINUTES_MOST {
        return Err(ConfigError::invalid(
            "channels.gateway.session_minutes",
            format!("must be at most {SESSION_MINUTES_MOST} (30 days)"),
        ));
    }
    Ok(minutes)
}

/// A token, wherever it came from, is 16 characters or more.
fn check_length(token: Option<&Secret>) -> Result<(), ConfigError> {
    if let Some(token) = token
        && token.expose().chars().count() < 16
    {
        return Err(ConfigError::invalid(
            "channels.gateway.token",
            "must be at least 16 characters (try `openssl rand -hex 24`)",
        ));
    }
    Ok(())
}

fn at_least_one(value: Option<u64>, default: u64, key: &str) -> Result<u64, ConfigError> {
    match value.unwrap_or(default) {
        0 => Err(ConfigError::invalid(
            &format!("channels.gateway.{key}"),
            "must be at least 1",
        )),
        n => Ok(n),
    }
}

/// `scheme://host[:port]`, lower-cased, as browsers send `Origin`.
fn origin(text: &str) -> Result<String, ConfigError> {
    let text = text.trim().trim_end_matches('/').to_ascii_lowercase();
    let fine = ["http://", "https://"].iter().any(|s| {
        text.strip_prefix(s)
            .is_some_and(|rest| !rest.is_empty() && !rest.contains('/'))
    });
    if fine {
        Ok(text)
    } else {
        Err(ConfigError::invalid(
            "channels.gateway.allowed_origins",
            format!("`{text}` is not an origin such as \"http://homeassistant.local:8123\""),
        ))
    }
}

/// `channel:sender`, as a person is named on one channel.
fn identity(text: &str) -> Result<String, ConfigError> {
    let text = text.trim();
    match text.split_once(':') {
        Some((channel, sender)) if !channel.is_empty() && !sender.is_empty() => {
            Ok(text.to_string())
        }
        _ => Err(ConfigError::invalid(
            "channels.gateway.owner",
            format!("`{text}` is not a person on a channel, such as \"telegram:123456789\""),
        )),
    }
}

/// A host name, lower-cased, without a port.
fn host(text: &str) -> Result<String, ConfigError> {
    let text = text.trim().to_ascii_lowercase();
    let fine = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.'));
    if fine {
        Ok(text)
    } else {
        Err(ConfigError::invalid(
            "channels.gateway.allowed_hosts",
            format!("`{text}` is not a host name such as \"hearth.lan\" (no scheme, no port)"),
        ))
    }
}
