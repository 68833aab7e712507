//! Removing credentials from tool output.
//!
//! A tool may print an API key, a token or a password (`env`, a config file,
//! a URL with user info). Before the output reaches the model or the
//! history, every value that looks like a credential is replaced by
//! `[REDACTED]`: `key=value` and `key: value` pairs, JSON fields, URL user
//! info and query parameters, well-known token shapes, Bot API URLs
//! (`/bot<token>/`), PEM private keys, and the exact values of the secrets
//! the daemon itself holds ([`Scrubber::with_secrets`]), also when spaced
//! out, quoted character by character or base64-encoded.

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
    bot_url: Regex,
    pem: Regex,
    /// The daemon's own secrets in every form; `None` when it has none.
    known: Option<Regex>,
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
            // https://api.telegram.org/bot123456:AA…/getMe
            bot_url: build(r"/bot\d{4,12}:[A-Za-z0-9_-]{10,}"),
            // A private key, up to its end or the end of the (cut) text.
            pem: build(
                r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
            ),
            known: None,
        }
    }

    /// Also removes these exact values (secrets shorter than 8 characters
    /// are too likely to be ordinary words and are left to the patterns):
    /// plain, with up to four non-alphanumeric characters between their
    /// characters (spaced, quoted one by one, one per line), and in base64
    /// (standard and URL-safe) at each of the three byte alignments.
    pub fn with_secrets<S: AsRef<str>>(mut self, secrets: impl IntoIterator<Item = S>) -> Self {
        let mut forms: Vec<String> = Vec::new();
        for secret in secrets {
            let secret = secret.as_ref();
            if secret.chars().count() < 8 {
                continue;
            }
            let spaced: Vec<String> = secret
                .chars()
                .map(|c| regex::escape(&c.to_string()))
                .collect();
            forms.push(spaced.join("[^A-Za-z0-9]{0,4}"));
            forms.extend(
                base64_forms(secret.as_bytes())
                    .iter()
                    .map(|f| regex::escape(f)),
            );
        }
        forms.sort();
        forms.dedup();
        // Longest first, so a form is not cut short by another.
        forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
        if !forms.is_empty() {
            match Regex::new(&forms.join("|")) {
                Ok(known) => self.known = Some(known),
                Err(e) => {
                    tracing::error!(error = %e, "the daemon's secrets cannot be matched; only the patterns scrub them")
                }
            }
        }
        self
    }

    /// `text` with every credential replaced by `[REDACTED]`.
    pub fn scrub(&self, text: &str) -> String {
        let t = match &self.known {
            Some(known) => known.replace_all(text, REDACTED),
            None => text.into(),
        };
        let t = self.pem.replace_all(&t, "[REDACTED PRIVATE KEY]");
        let t = self.bot_url.replace_all(&t, "/bot[REDACTED]");
        let t = self
            .json_field
            .replace_all(&t, |c: &Captures| format!("{}\"{REDACTED}\"", &c[1]));
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

/// The parts of `secret`'s base64 encodings that do not depend on the
/// bytes around it: one per alignment and alphabet, at least 8 characters.
fn base64_forms(secret: &[u8]) -> Vec<String> {
    use base64::Engine;
    let mut forms = Vec::new();
    for pad in 0..3usize {
        let mut bytes = vec![0u8; pad];
        bytes.extend_from_slice(secret);
        // Characters before `skip` hold bits of the padding, those from
        // `end` bits of whatever follows.
        let skip = (pad * 8).div_ceil(6);
        let end = bytes.len() * 8 / 6;
        for engine in [
            &base64::engine::general_purpose::STANDARD,
            &base64::engine::general_purpose::URL_SAFE,
        ] {
            let encoded = engine.encode(&bytes);
            if end > skip + 8 {
                forms.push(encoded[skip..end].to_string());
            }
        }
    }
    forms
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
    fn removes_the_daemons_own_secrets_in_any_disguise() {
        use base64::Engine;
        let token = "7712345678:AAEbcdefGhIjklMNopqrsTuvwxYZ0123456";
        let key = "local-gateway-secret-0123";
        let s = Scrubber::new().with_secrets([token, key, "short"]);
        let spaced: String = token.chars().map(|c| format!("{c} ")).collect();
        let quoted: String = token.chars().map(|c| format!("'{c}',")).collect();
        let lines: String = key.chars().map(|c| format!("{c}\n")).collect();
        let b64 = base64::engine::general_purpose::STANDARD;
        for text in [
            format!("HEARTH_TELEGRAM_TOKEN={token}"),
            format!("x{key}y"),
            spaced,
            quoted,
            lines,
            b64.encode(format!("TOKEN={token}\n")),
            b64.encode(format!("ab{key}")),
            b64.encode(format!("a{key}zz")),
            base64::engine::general_purpose::URL_SAFE.encode(token),
            format!("GET https://api.telegram.org/bot{token}/getMe"),
        ] {
            let out = s.scrub(&text);
            for secret in [token, key] {
                assert!(!out.contains(secret), "{text:?} -> {out:?}");
                assert!(!out.contains(&secret[4..14]), "{text:?} -> {out:?}");
            }
            let b64_token = b64.encode(token);
            assert!(!out.contains(&b64_token[4..20]), "{text:?} -> {out:?}");
        }
        assert_eq!(s.scrub("a short word"), "a short word");
    }

    #[test]
    fn removes_private_keys_and_bot_api_urls() {
        let s = Scrubber::new();
        let pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----\nafter";
        let out = s.scrub(pem);
        assert!(!out.contains("b3BlbnNz"), "{out}");
        assert!(out.ends_with("after"), "{out}");
        let cut = "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA";
        assert!(!s.scrub(cut).contains("MIIEow"));
        let url = "curl https://api.telegram.org/bot12345:AAH-short_token_x/sendMessage";
        let out = s.scrub(url);
        assert!(!out.contains("AAH-short"), "{out}");
        assert!(out.contains("/sendMessage"), "{out}");
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
