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
//!    an allowed origin;
//! 3. the bearer token, compared in constant time;
//! 4. a body must be declared `application/json`: a form or `text/plain`
//!    post, which browsers send cross-site without asking, is refused.

use std::net::{IpAddr, SocketAddr};

use axum::http::{HeaderMap, Method, StatusCode, header};

use crate::config::{GatewayConfig, Secret};

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
}

impl Guard {
    pub fn new(config: &GatewayConfig) -> Self {
        Self {
            token: config.token.clone(),
            origins: config.allowed_origins.clone(),
            hosts: config.allowed_hosts.clone(),
        }
    }

    /// Checks a request that arrived on `local`.
    pub fn check(
        &self,
        method: &Method,
        headers: &HeaderMap,
        local: SocketAddr,
    ) -> Result<(), Refusal> {
        self.check_host(headers, local)?;
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("").to_ascii_lowercase();
            if !self.origins.contains(&origin) {
                return Err(Refusal::new(
                    StatusCode::FORBIDDEN,
                    format!(
                        "requests from the web page at `{origin}` are refused; list it in `[channels.gateway] allowed_origins` to allow it"
                    ),
                ));
            }
        }
        if let Some(token) = &self.token {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or("");
            if !constant_time_eq(given.as_bytes(), token.expose().as_bytes()) {
                return Err(Refusal::new(
                    StatusCode::UNAUTHORIZED,
                    "missing or wrong token: send `Authorization: Bearer <[channels.gateway] token>`",
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
}
