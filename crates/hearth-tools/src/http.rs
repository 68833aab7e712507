//! `http_request`: GET or POST to an allowlisted host, with a size cap.
//!
//! Only hosts named in `agent.http_allowed_domains` (and their subdomains)
//! are reached, on ports 80 and 443 unless an entry names `host:port`,
//! redirects included. A name that resolves to a loopback, private,
//! link-local, shared or unspecified address is refused (DNS rebinding, a
//! cloud's metadata service), unless the allowlist names that address
//! literally; the check is in the resolver, so it holds for every redirect.
//! No `Host` header may be set. The body is read up to a byte cap and cut
//! with a note past it. POST changes things elsewhere, so it is refused in
//! `readonly` autonomy.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolResult, arg_str};
use crate::security::Autonomy;
use futures::future::BoxFuture;

/// The `http_request` tool.
pub struct HttpRequest {
    allowed: Vec<String>,
    max_bytes: usize,
    client: reqwest::Client,
}

impl HttpRequest {
    /// `allowed`: host names or `host:port`, lower case; `max_bytes`: body
    /// bytes kept.
    pub fn new(allowed: Vec<String>, max_bytes: usize, timeout: Duration) -> Self {
        let hosts = allowed.clone();
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 5 {
                attempt.error("more than 5 redirects")
            } else if url_allowed(&hosts, attempt.url()) {
                attempt.follow()
            } else {
                attempt.error("redirect to a host or port that is not allowed")
            }
        });
        let client = reqwest::Client::builder()
            .redirect(policy)
            .dns_resolver(Arc::new(PublicOnly {
                literal: allowed.iter().filter_map(|a| literal_address(a)).collect(),
            }))
            .timeout(timeout)
            .user_agent(concat!("hearth/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        Self {
            allowed,
            max_bytes,
            client,
        }
    }

    async fn request(&self, args: &Value, ctx: &ToolContext) -> Result<ToolResult, ToolResult> {
        let url = arg_str(args, "url")?;
        let url = reqwest::Url::parse(url)
            .map_err(|e| ToolResult::error(format!("`{url}` is not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolResult::error("only http and https URLs are allowed"));
        }
        let host = url.host_str().unwrap_or_default();
        if !url_allowed(&self.allowed, &url) {
            return Err(ToolResult::error(format!(
                "host `{host}` on port {} is not allowed (ports 80 and 443 unless `host:port` is listed); allowed: {}",
                url.port_or_known_default().unwrap_or(0),
                self.allowed.join(", ")
            )));
        }
        let post = match args.get("method").and_then(Value::as_str) {
            None | Some("GET") => false,
            Some("POST") => true,
            Some(other) => {
                return Err(ToolResult::error(format!(
                    "method `{other}`: use GET or POST"
                )));
            }
        };
        if post && ctx.policy.autonomy == Autonomy::ReadOnly {
            return Err(ToolResult::error(
                "POST is not allowed in readonly autonomy",
            ));
        }
        let mut request = if post {
            self.client.post(url.clone())
        } else {
            self.client.get(url.clone())
        };
        if let Some(headers) = args.get("headers").and_then(Value::as_object) {
            for (name, value) in headers {
                if name.eq_ignore_ascii_case("host") {
                    return Err(ToolResult::error(
                        "the `Host` header cannot be set; it follows the URL",
                    ));
                }
                let Some(value) = value.as_str() else {
                    return Err(ToolResult::error(format!(
                        "header `{name}` must be a string"
                    )));
                };
                request = request.header(name.as_str(), value);
            }
        }
        if let Some(body) = args.get("body").and_then(Value::as_str) {
            request = request.body(body.to_string());
        }
        let response = request.send().await.map_err(|e| {
            ToolResult::error(format!("request failed: {}", error_chain(&e.without_url())))
        })?;
        let status = response.status();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("unknown")
            .to_string();
        let (body, cut) = self.read_capped(response).await?;
        let mut text = format!("HTTP {status}\ncontent-type: {content_type}\n\n");
        text.push_str(&String::from_utf8_lossy(&body));
        if cut > 0 {
            text.push_str(&format!("\n[… body cut at {} bytes …]", self.max_bytes));
        }
        Ok(if status.is_client_error() || status.is_server_error() {
            ToolResult::error(text)
        } else {
            ToolResult::ok(text)
        })
    }

    /// The body up to `max_bytes`, and whether more was left unread.
    async fn read_capped(
        &self,
        response: reqwest::Response,
    ) -> Result<(Vec<u8>, usize), ToolResult> {
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk =
                chunk.map_err(|e| ToolResult::error(format!("reading the body failed: {e}")))?;
            let room = self.max_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                return Ok((body, 1));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body, 0))
    }
}

/// An error with its causes, so "private address" reaches the model.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

/// The URL's host is an allowed name (or a subdomain of one) and its port
/// is 80, 443 or one an entry names for that host.
fn url_allowed(allowed: &[String], url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let port = url.port_or_known_default();
    allowed.iter().any(|entry| {
        let (name, entry_port) = split_entry(entry);
        let name_ok = host == name || host.ends_with(&format!(".{name}"));
        let port_ok = match entry_port {
            Some(p) => port == Some(p),
            None => matches!(port, Some(80 | 443)),
        };
        name_ok && port_ok
    })
}

/// `example.org:8080` → (`example.org`, 8080); `[::1]:80` and `::1` too.
fn split_entry(entry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[') {
        let (host, tail) = rest.split_once(']').unwrap_or((rest, ""));
        return (host, tail.strip_prefix(':').and_then(|p| p.parse().ok()));
    }
    match entry.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => (host, port.parse().ok()),
        _ => (entry, None),
    }
}

/// The address an allowlist entry names literally, if it is one.
fn literal_address(entry: &str) -> Option<IpAddr> {
    split_entry(entry).0.parse().ok()
}

/// Whether an address is reachable only from inside: loopback, private,
/// link-local, shared (CGNAT), unspecified, broadcast, or the same inside
/// an IPv4-mapped IPv6 address.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1]))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_internal(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
}

/// The resolver `http_request` connects through: a name's internal
/// addresses are dropped unless listed literally.
struct PublicOnly {
    literal: Vec<IpAddr>,
}

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let literal = self.literal.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|a| !is_internal(a.ip()) || literal.contains(&a.ip()))
                .collect();
            if kept.is_empty() {
                let e: Box<dyn std::error::Error + Send + Sync> = format!(
                    "`{host}` resolves only to loopback, private or link-local addresses, which are refused"
                )
                .into();
                return Err(e);
            }
            let addrs: reqwest::dns::Addrs = Box::new(kept.into_iter());
            Ok(addrs)
        })
    }
}

impl Tool for HttpRequest {
    fn name(&self) -> &str {
        "http_request"
    }

    fn description(&self) -> &str {
        "Fetch a URL (GET) or send data (POST) to an allowed web host; returns status, content type and body."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "http(s) URL on an allowed host"},
                "method": {"type": "string", "enum": ["GET", "POST"]},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                "body": {"type": "string", "description": "request body for POST"}
            },
            "required": ["url"]
        })
    }

    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move { self.request(&args, ctx).await.unwrap_or_else(|e| e) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(list: &[&str], url: &str) -> bool {
        let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        url_allowed(&list, &reqwest::Url::parse(url).unwrap())
    }

    #[test]
    fn subdomains_are_allowed_lookalikes_are_not() {
        let list = ["example.org"];
        assert!(allowed(&list, "https://example.org/x"));
        assert!(allowed(&list, "http://API.example.org./x"));
        assert!(!allowed(&list, "https://badexample.org/"));
        assert!(!allowed(&list, "https://example.org.evil.net/"));
    }

    #[test]
    fn only_web_ports_unless_an_entry_names_the_port() {
        assert!(!allowed(&["example.org"], "http://example.org:22/"));
        assert!(!allowed(&["example.org"], "https://example.org:8443/"));
        assert!(allowed(&["example.org:8443"], "https://example.org:8443/"));
        assert!(!allowed(&["example.org:8443"], "https://example.org/"));
        assert!(allowed(&["[::1]:8080"], "http://[::1]:8080/"));
        assert!(allowed(&["127.0.0.1:9"], "http://127.0.0.1:9/"));
    }

    #[test]
    fn internal_addresses_are_recognised() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_internal(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:2800:220:1::1", "100.128.0.1"] {
            assert!(!is_internal(ip.parse().unwrap()), "{ip}");
        }
    }
}
