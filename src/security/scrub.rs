//! Removing credentials from tool output.
//!
//! A tool may print an API key, a token or a password (`env`, a config file,
//! a URL with user info). Before the output reaches the model or the
//! history, every value that looks like a credential is replaced by
//! `[REDACTED]`: `key=value` and `key: value` pairs, JSON fields, URL user
//! info and query parameters, and well-known token shapes.

use regex::{Captures, Regex};

const REDACTED: &str = "[REDACTED]";

/// Names whose values are secrets.
const SECRET_NAMES: &str = r"(?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|client[_-]?secret|secret|token|access[_-]?token|refresh[_-]?token|auth[_-]?token|bot[_-]?token|password|passwd|pwd|passphrase|private[_-]?key|authorization)";

/// Compiled patterns; build once and reuse.
pub struct Scrubber {
    json_field: Regex,
    pair: Regex,
    url_userinfo: Regex,
    url_query: Regex,
    bearer: Regex,
    shapes: Regex,
}

impl Default for Scrubber {
    fn default() -> Self {
        Self::new()
    }
}

impl Scrubber {
    pub fn new() -> Self {
        let build = |p: &str| Regex::new(p).expect("scrubber patterns are valid");
        Self {
            // "password": "x"  (also single-quoted keys)
            json_field: build(&format!(
                r#"(?i)(["']\w*{SECRET_NAMES}\w*["']\s*:\s*)"[^"]*""#
            )),
            // password=x, API_KEY: x, export TOKEN='x'
            pair: build(&format!(
                r#"(?i)\b(\w*{SECRET_NAMES}\w*)(\s*[:=]\s*)(["']?)([^\s"',;&]+)"#
            )),
            // https://user:secret@host
            url_userinfo: build(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]+):([^\s@/]+)@"),
            // ?token=x&key=y
            url_query: build(&format!(r"(?i)([?&]\w*{SECRET_NAMES}\w*=)[^&\s#]+")),
            // Authorization: Bearer x
            bearer: build(r"(?i)\b(bearer|basic)\s+[a-z0-9._~+/=-]{8,}"),
            // sk-…, ghp_…, xoxb-…, AKIA…, Telegram bot tokens
            shapes: build(
                r"\b(?:sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|\d{6,12}:[A-Za-z0-9_-]{30,})\b",
            ),
        }
    }

    /// `text` with every credential replaced by `[REDACTED]`.
    pub fn scrub(&self, text: &str) -> String {
        let t = self
            .json_field
            .replace_all(text, |c: &Captures| format!("{}\"{REDACTED}\"", &c[1]));
        let t = self
            .url_userinfo
            .replace_all(&t, |c: &Captures| format!("{}:{REDACTED}@", &c[1]));
        let t = self
            .url_query
            .replace_all(&t, |c: &Captures| format!("{}{REDACTED}", &c[1]));
        let t = self
            .bearer
            .replace_all(&t, |c: &Captures| format!("{} {REDACTED}", &c[1]));
        let t = self.pair.replace_all(&t, |c: &Captures| {
            if &c[4] == REDACTED || c[4].starts_with('[') {
                c[0].to_string()
            } else {
                format!("{}{}{}{REDACTED}", &c[1], &c[2], &c[3])
            }
        });
        self.shapes.replace_all(&t, REDACTED).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_credentials_in_every_form() {
        let s = Scrubber::new();
        let cases = [
            ("OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx", "sk-abc"),
            ("export TOKEN='s3cr3t-value'", "s3cr3t"),
            ("password: hunter2", "hunter2"),
            (r#"{"api_key": "abc123xyz", "user": "ada"}"#, "abc123xyz"),
            ("db: postgres://ada:topsecret@localhost/db", "topsecret"),
            (
                "GET https://api.example.com/v1?access_token=qwertyuiop&x=1",
                "qwertyuiop",
            ),
            (
                "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload",
                "eyJhbGci",
            ),
            (
                "token ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa in log",
                "ghp_aaaa",
            ),
            (
                "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0 ok",
                "AAHdqTcv",
            ),
            ("aws AKIAIOSFODNN7EXAMPLE", "AKIAIOSF"),
        ];
        for (input, secret) in cases {
            let out = s.scrub(input);
            assert!(!out.contains(secret), "{input:?} -> {out:?}");
            assert!(out.contains(REDACTED), "{input:?} -> {out:?}");
        }
    }

    #[test]
    fn leaves_ordinary_text_alone() {
        let s = Scrubber::new();
        for text in [
            "The token count is high.",
            "ls -la /tmp",
            "{\"name\": \"ada\", \"count\": 3}",
            "see https://example.com/page?id=7",
        ] {
            assert_eq!(s.scrub(text), text);
        }
    }
}
