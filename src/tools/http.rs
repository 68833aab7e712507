//! `http_request`: GET or POST to an allowlisted host, with a size cap.
//!
//! Only hosts named in `agent.http_allowed_domains` (and their subdomains)
//! are reached, redirects included. The body is read up to a byte cap and
//! cut with a note past it. POST changes things elsewhere, so it is refused
//! in `readonly` autonomy.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};

use super::{BoxFuture, Tool, ToolContext, ToolResult, arg_str};
use crate::security::Autonomy;

/// The `http_request` tool.
pub struct HttpRequest {
    allowed: Vec<String>,
    max_bytes: usize,
    client: reqwest::Client,
}

impl HttpRequest {
    /// `allowed`: host names, lower case; `max_bytes`: body bytes kept.
    pub fn new(allowed: Vec<String>, max_bytes: usize, timeout: Duration) -> Self {
        let hosts = allowed.clone();
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 5 {
                attempt.error("more than 5 redirects")
            } else if attempt
                .url()
                .host_str()
                .is_some_and(|h| host_allowed(&hosts, h))
            {
                attempt.follow()
            } else {
                attempt.error("redirect to a host that is not allowed")
            }
        });
        let client = reqwest::Client::builder()
            .redirect(policy)
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
        if !host_allowed(&self.allowed, host) {
            return Err(ToolResult::error(format!(
                "host `{host}` is not allowed; allowed: {}",
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
        let response = request
            .send()
            .await
            .map_err(|e| ToolResult::error(format!("request failed: {}", e.without_url())))?;
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

/// `host` is an allowed name or a subdomain of one.
fn host_allowed(allowed: &[String], host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    allowed
        .iter()
        .any(|a| host == *a || host.ends_with(&format!(".{a}")))
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

    #[test]
    fn subdomains_are_allowed_lookalikes_are_not() {
        let allowed = vec!["example.org".to_string()];
        assert!(host_allowed(&allowed, "example.org"));
        assert!(host_allowed(&allowed, "API.example.org."));
        assert!(!host_allowed(&allowed, "badexample.org"));
        assert!(!host_allowed(&allowed, "example.org.evil.net"));
    }
}
