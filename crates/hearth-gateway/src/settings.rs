//! What a [`super::GatewayChannel`] is built from: the checked
//! `[channels.gateway]` section, which the daemon turns into these (the
//! gateway reads no config of its own), and the page's address as a person
//! types it.

use std::net::SocketAddr;
use std::time::Duration;

use hearth_core::secret::Secret;

/// Everything the gateway needs, already checked.
#[derive(Debug, Clone)]
pub struct GatewaySettings {
    /// Where to listen.
    pub listen: SocketAddr,
    /// The bearer token clients send; `None` only where none is required
    /// (a loopback address the config lets in without one).
    pub token: Option<Secret>,
    /// How long a request waits for its reply.
    pub reply_timeout: Duration,
    /// How long a client may take to send a whole request.
    pub request_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
    /// How often `/ws/chat` pings a client.
    pub ws_ping: Duration,
    /// `Origin` values a request may carry.
    pub allowed_origins: Vec<String>,
    /// Host names, besides the listen address and IP literals, that the
    /// `Host` header may name.
    pub allowed_hosts: Vec<String>,
    /// How long a sign-in on the web page lasts.
    pub session: Duration,
}

/// The web page's address as a person types it: this machine's loopback
/// for an address that listens on every interface.
pub fn page_url(addr: SocketAddr) -> String {
    if addr.ip().is_unspecified() {
        let port = addr.port();
        return format!(
            "http://127.0.0.1:{port}/ (from another machine: http://<this machine's address>:{port}/)"
        );
    }
    format!("http://{addr}/")
}
