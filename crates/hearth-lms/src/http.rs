//! HTTP for every source: one client, and one place that turns status codes
//! into [`LmsError`]s (401/403 auth, 429 rate limit with `Retry-After`,
//! other failures by status) and caps how much of a body is read.

use std::time::Duration;

use chrono::Utc;
use reqwest::{RequestBuilder, Response, StatusCode, header};

use super::LmsError;

/// The most of one response body that is read.
const MAX_BODY: usize = 8 * 1024 * 1024;

/// A client for LMS requests: a request timeout and hearth's user agent.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .user_agent(concat!(
            "hearth/",
            env!("CARGO_PKG_VERSION"),
            " (LMS notifier)"
        ))
        .build()
        .unwrap_or_default()
}

/// Sends a request; a success status gives the response, others an error.
pub async fn send(request: RequestBuilder) -> Result<Response, LmsError> {
    let response = request
        .send()
        .await
        .map_err(|e| LmsError::Network(without_url(&e)))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = response
        .headers()
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    let body = response.text().await.unwrap_or_default();
    let excerpt: String = body.chars().take(200).collect();
    Err(match status {
        StatusCode::TOO_MANY_REQUESTS => LmsError::RateLimited { retry_after },
        // Canvas throttles with 403 and this text.
        StatusCode::FORBIDDEN if body.contains("Rate Limit Exceeded") => {
            LmsError::RateLimited { retry_after }
        }
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            LmsError::Auth(format!("HTTP {}: {}", status.as_u16(), excerpt.trim()))
        }
        _ => LmsError::Http {
            status: status.as_u16(),
            message: excerpt.trim().to_string(),
        },
    })
}

/// The body as text, at most [`MAX_BODY`] bytes.
pub async fn text(mut response: Response) -> Result<String, LmsError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| LmsError::Network(without_url(&e)))?
    {
        if bytes.len() + chunk.len() > MAX_BODY {
            return Err(LmsError::Malformed(format!(
                "the response is larger than {} MiB",
                MAX_BODY / (1024 * 1024)
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    String::from_utf8(bytes).map_err(|_| LmsError::Malformed("the body is not UTF-8".into()))
}

/// The body as bytes, at most `max`: a file.
pub async fn bytes(mut response: Response, max: u64) -> Result<Vec<u8>, LmsError> {
    if response.content_length().is_some_and(|l| l > max) {
        return Err(LmsError::TooLarge { max });
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| LmsError::Network(without_url(&e)))?
    {
        if (bytes.len() + chunk.len()) as u64 > max {
            return Err(LmsError::TooLarge { max });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Whether `url` is on `base`'s origin (scheme, host and port), where the
/// source's token may go.
pub fn same_origin(base: &str, url: &str) -> bool {
    match (reqwest::Url::parse(base), reqwest::Url::parse(url)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

/// The body parsed as JSON.
pub async fn json(response: Response) -> Result<serde_json::Value, LmsError> {
    let body = text(response).await?;
    serde_json::from_str(&body).map_err(|e| LmsError::Malformed(format!("not JSON: {e}")))
}

/// `Retry-After` as seconds or an HTTP date.
fn parse_retry_after(value: &str) -> Option<Duration> {
    if let Ok(secs) = value.trim().parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = chrono::DateTime::parse_from_rfc2822(value.trim()).ok()?;
    let secs = (when.with_timezone(&Utc) - Utc::now()).num_seconds().max(0);
    Some(Duration::from_secs(secs as u64))
}

/// A reqwest error without its URL, which may carry a token (Moodle's
/// `wstoken`, a calendar's `authtoken`).
fn without_url(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    };
    let mut source = std::error::Error::source(e);
    let mut detail = String::new();
    while let Some(s) = source {
        detail = s.to_string();
        source = s.source();
    }
    if detail.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}: {detail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_forms() {
        assert_eq!(parse_retry_after("120"), Some(Duration::from_secs(120)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO),
            "a date in the past means now"
        );
        assert_eq!(parse_retry_after("soon"), None);
    }
}
