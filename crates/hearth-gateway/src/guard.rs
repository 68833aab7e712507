//! Who may talk to the gateway: the checks every request passes before its
//! body is read.
//!
//! A browser sends requests to any address for any page it shows, so the
//! address a request arrives on proves nothing. In order:
//!
//! 1. `Host` must name the listen address, an IP literal when listening on
//!    every address, `localhost` on loopback, or a configured name: a DNS
//!    name an attacker controls (rebinding) is refused;
//! 2. an `Origin` header (sent by browsers with cross-site requests) must be
//!    an allowed origin, or the gateway's own (its web page);
//! 3. a body must be declared `application/json`: a form or `text/plain`
//!    post, which browsers send cross-site without asking, is refused;
//! 4. the bearer token, compared in constant time, or the web page's
//!    session cookie ([`super::page::session`]) with, on every request that
//!    changes something (any method but GET and HEAD, and a WebSocket),
//!    the session's CSRF token in `X-Hearth-CSRF`.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::http::{HeaderMap, Method, StatusCode, header};

use super::page::session::{CSRF_HEADER, Sessions};
use hearth_core::secret::Secret;

use super::GatewaySettings;

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: StatusCode,
    pub message: String,
}

impl Refusal {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Guard {
    token: Option<Secret>,
    origins: Vec<String>,
    hosts: Vec<String>,
    sessions: Arc<Sessions>,
}

impl Guard {
    pub fn new(settings: &GatewaySettings) -> Self {
        Self {
            token: settings.token.clone(),
            origins: settings.allowed_origins.clone(),
            hosts: settings.allowed_hosts.clone(),
            sessions: Arc::new(Sessions::new(settings.session)),
        }
    }

    /// The web page's sign-ins.
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// Whether the gateway asks for a token at all.
    pub fn needs_token(&self) -> bool {
        self.token.is_some()
    }

    /// Whether `given` is the gateway's token (compared in constant time).
    pub fn is_token(&self, given: &str) -> bool {
        self.token
            .as_ref()
            .is_some_and(|t| constant_time_eq(given.as_bytes(), t.expose().as_bytes()))
    }

    /// Checks a request that arrived on `local`.
    pub fn check(
        &self,
        method: &Method,
        headers: &HeaderMap,
        local: SocketAddr,
    ) -> Result<(), Refusal> {
        self.check_site(method, headers, local)?;
        self.check_person(method, headers)
    }

    /// The token, or a session with its CSRF token where one is due.
    fn check_person(&self, method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
        if self.token.is_none() {
            return Ok(());
        }
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if let Some(given) = given {
            return if self.is_token(given) {
                Ok(())
            } else {
                Err(wrong_token())
            };
        }
        let Some(signed) = self.sessions.signed(headers) else {
            return Err(wrong_token());
        };
        let changes =
            !matches!(*method, Method::GET | Method::HEAD) || headers.contains_key(header::UPGRADE);
        let csrf = headers
            .get(CSRF_HEADER)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if changes && !constant_time_eq(csrf.as_bytes(), signed.csrf.as_bytes()) {
            return Err(Refusal::new(
                StatusCode::FORBIDDEN,
                "this request needs the page's CSRF token in `X-Hearth-CSRF`; reload the page",
            ));
        }
        Ok(())
    }

    /// What every request passes, signing in included: the host, the
    /// origin and the content type.
    pub fn check_site(
        &self,
        method: &Method,
        headers: &HeaderMap,
        local: SocketAddr,
    ) -> Result<(), Refusal> {
        self.check_host(headers, local)?;
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("").to_ascii_lowercase();
            if !self.origins.contains(&origin) && !same_origin(&origin, headers) {
                return Err(Refusal::new(
                    StatusCode::FORBIDDEN,
                    format!(
                        "requests from the web page at `{origin}` are refused; list it in `[channels.gateway] allowed_origins` to allow it"
                    ),
                ));
            }
        }
        if *method == Method::POST {
            let kind = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let essence = kind.split(';').next().unwrap_or("").trim();
            if !essence.eq_ignore_ascii_case("application/json") {
                return Err(Refusal::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "send the body as `Content-Type: application/json`",
                ));
            }
        }
        Ok(())
    }

    fn check_host(&self, headers: &HeaderMap, local: SocketAddr) -> Result<(), Refusal> {
        let given = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let (name, port) = split_host(&given);
        if name.is_empty() {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "the request has no `Host` header",
            ));
        }
        let port_fine = port.is_none_or(|p| p == local.port());
        let fine = match name.parse::<IpAddr>() {
            // An IP literal cannot be rebound; it must be where we listen,
            // or any address when listening on all of them.
            Ok(ip) => port_fine && (ip == local.ip() || local.ip().is_unspecified()),
            Err(_) if name == "localhost" => port_fine && local.ip().is_loopback(),
            Err(_) => self.hosts.iter().any(|h| *h == name),
        };
        if fine {
            Ok(())
        } else {
            Err(Refusal::new(
                StatusCode::FORBIDDEN,
                format!(
                    "`Host: {given}` is not this gateway's address; add the name to `[channels.gateway] allowed_hosts` if it is yours"
                ),
            ))
        }
    }
}

fn wrong_token() -> Refusal {
    Refusal::new(
        StatusCode::UNAUTHORIZED,
        "missing or wrong token: send `Authorization: Bearer <[channels.gateway] token>`, or sign in on the gateway's page",
    )
}

/// Whether `origin` is the gateway's own: the page it serves, at the host
/// the request names (already checked to be this gateway).
fn same_origin(origin: &str, headers: &HeaderMap) -> bool {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    !host.is_empty()
        && ["http://", "https://"]
            .iter()
            .any(|scheme| origin.strip_prefix(scheme) == Some(host.as_str()))
}

/// `name:port`, `[v6]:port` or a bare name → the name (brackets off) and the port.
fn split_host(host: &str) -> (&str, Option<u16>) {
    if let Some(rest) = host.strip_prefix('[') {
        let Some((ip, after)) = rest.split_once(']') else {
            return ("", None);
        };
        return (ip, after.strip_prefix(':').and_then(|p| p.parse().ok()));
    }
    match host.rsplit_once(':') {
        Some((name, port)) => match port.parse() {
            Ok(p) => (name, Some(p)),
            Err(_) => ("", None),
        },
        None => (host, None),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(origins: &[&str], hosts: &[&str]) -> Guard {
        Guard {
            token: Some(Secret::new("0123456789abcdef")),
            origins: origins.iter().map(|s| s.to_string()).collect(),
            hosts: hosts.iter().map(|s| s.to_string()).collect(),
            sessions: Arc::new(Sessions::new(std::time::Duration::from_secs(60))),
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            "Bearer 0123456789abcdef".parse().unwrap(),
        );
        h.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn host_names_that_could_be_rebound_are_refused() {
        let loopback: SocketAddr = "127.0.0.1:8787".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:8787".parse().unwrap();
        let g = guard(&[], &["hearth.lan"]);
        let check = |host: &str, local| {
            g.check(&Method::POST, &headers(&[("host", host)]), local)
                .map_err(|r| r.status.as_u16())
        };
        assert_eq!(check("127.0.0.1:8787", loopback), Ok(()));
        assert_eq!(check("localhost:8787", loopback), Ok(()));
        assert_eq!(check("hearth.lan:8787", loopback), Ok(()));
        assert_eq!(check("HEARTH.LAN", loopback), Ok(()));
        assert_eq!(check("192.168.1.20:8787", any), Ok(()));
        assert_eq!(check("attacker.example:8787", loopback), Err(403));
        assert_eq!(check("127.0.0.1.nip.io:8787", loopback), Err(403));
        assert_eq!(check("localhost:9999", loopback), Err(403));
        assert_eq!(check("192.168.1.20:8787", loopback), Err(403));
        assert_eq!(check("localhost:8787", any), Err(403));
        assert_eq!(check("[::1]:8787", "[::1]:8787".parse().unwrap()), Ok(()));
        assert_eq!(check("", loopback), Err(400));
    }

    #[test]
    fn origins_tokens_and_content_types() {
        let local: SocketAddr = "127.0.0.1:8787".parse().unwrap();
        let g = guard(&["http://homeassistant.local:8123"], &[]);
        let host = ("host", "127.0.0.1:8787");
        let status = |h: HeaderMap| {
            g.check(&Method::POST, &h, local)
                .map_err(|r| r.status.as_u16())
        };
        assert_eq!(status(headers(&[host])), Ok(()));
        assert_eq!(
            status(headers(&[
                host,
                ("origin", "http://homeassistant.local:8123")
            ])),
            Ok(())
        );
        assert_eq!(
            status(headers(&[host, ("origin", "https://evil.example")])),
            Err(403)
        );
        assert_eq!(status(headers(&[host, ("origin", "null")])), Err(403));
        assert_eq!(
            status(headers(&[host, ("content-type", "text/plain")])),
            Err(415)
        );
        assert_eq!(
            status(headers(&[
                host,
                ("content-type", "application/json; charset=utf-8")
            ])),
            Ok(())
        );
        assert_eq!(
            status(headers(&[
                host,
                ("authorization", "Bearer 0123456789abcdeX")
            ])),
            Err(401)
        );
        let open = Guard {
            token: None,
            ..g.clone()
        };
        let mut no_token = headers(&[host]);
        no_token.remove(header::AUTHORIZATION);
        assert_eq!(open.check(&Method::POST, &no_token, local), Ok(()));
        assert_eq!(
            g.check(&Method::POST, &no_token, local).unwrap_err().status,
            401
        );
    }

    #[test]
    fn the_page_s_own_origin_and_session_pass_and_nothing_else_does() {
        let local: SocketAddr = "127.0.0.1:8787".parse().unwrap();
        let g = guard(&[], &[]);
        let (id, csrf) = g.sessions.open();
        let page = |pairs: &[(&'static str, &str)]| {
            let mut h = HeaderMap::new();
            h.insert(header::HOST, "127.0.0.1:8787".parse().unwrap());
            h.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
            for (k, v) in pairs {
                h.insert(*k, v.parse().unwrap());
            }
            h
        };
        let cookie = format!("hearth_session={id}");
        let check = |method: Method, h: HeaderMap| {
            g.check(&method, &h, local).map_err(|r| r.status.as_u16())
        };
        let own = ("origin", "http://127.0.0.1:8787");
        // Controls: the page's own reads, and its changes with the CSRF token.
        assert_eq!(
            check(Method::GET, page(&[own, ("cookie", &cookie)])),
            Ok(())
        );
        let with_csrf = [own, ("cookie", &cookie), ("x-hearth-csrf", &csrf)];
        assert_eq!(check(Method::POST, page(&with_csrf)), Ok(()));
        // Hostile: a change without the CSRF token, a WebSocket without it,
        // a look-alike origin, a forged cookie, a wrong bearer beside a good cookie.
        assert_eq!(
            check(Method::POST, page(&[own, ("cookie", &cookie)])),
            Err(403)
        );
        let socket = [own, ("cookie", &cookie), ("upgrade", "websocket")];
        assert_eq!(check(Method::GET, page(&socket)), Err(403));
        let other = [
            ("origin", "http://127.0.0.1:8788"),
            ("cookie", &cookie),
            ("x-hearth-csrf", &csrf),
        ];
        assert_eq!(check(Method::POST, page(&other)), Err(403));
        let suffix = [("origin", "http://127.0.0.1:8787.evil.example")];
        assert_eq!(check(Method::GET, page(&suffix)), Err(403));
        assert_eq!(
            check(
                Method::GET,
                page(&[own, ("cookie", "hearth_session=forged")])
            ),
            Err(401)
        );
        let both = [own, ("cookie", &cookie), ("authorization", "Bearer wrong")];
        assert_eq!(check(Method::GET, page(&both)), Err(401));
        assert_eq!(check(Method::GET, page(&[own])), Err(401));
    }
}
