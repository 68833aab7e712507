//! Secrets in names and URLs: which keys and query parameters hold one, and
//! a URL with them masked. The [`Secret`] type itself is hearth-core's.

pub use hearth_core::secret::Secret;

/// Whether a key or query parameter named `name` holds a secret.
pub fn names_a_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let last = name.rsplit(['.', '[']).next().unwrap_or(&name);
    matches!(
        last,
        "key" | "apikey" | "sig" | "signature" | "auth" | "passwd" | "pass"
    ) || ["token", "_key", "-key", "secret", "password"]
        .iter()
        .any(|s| last.ends_with(s))
}

/// The secrets inside a URL: its password and the values of query
/// parameters whose names hold secrets (`authtoken=`, `key=`, …).
pub fn url_secrets(url: &str) -> Vec<String> {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return Vec::new();
    };
    let mut out: Vec<String> = parsed.password().map(str::to_string).into_iter().collect();
    out.extend(
        parsed
            .query_pairs()
            .filter(|(k, v)| names_a_secret(k) && !v.is_empty())
            .map(|(_, v)| v.into_owned()),
    );
    out
}

/// `url` with its password and secret query values masked, for printing.
pub fn mask_url(url: &str) -> String {
    let Ok(mut parsed) = reqwest::Url::parse(url) else {
        return url.to_string();
    };
    if url_secrets(url).is_empty() {
        // Nothing to hide: the URL as written (parsing would normalise it).
        return url.to_string();
    }
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some("***"));
    }
    if parsed.query().is_some() {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(k, v)| {
                let v = if names_a_secret(&k) {
                    "***".to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_keep_their_shape_and_lose_their_secrets() {
        let url = "https://ada:hunter22@cal.example.edu/feed.ics?authtoken=abc%2Fdef123&course=7&key=k1k2k3";
        let masked = mask_url(url);
        for secret in ["hunter22", "abc", "k1k2k3"] {
            assert!(!masked.contains(secret), "{masked}");
        }
        assert!(
            masked.contains("cal.example.edu/feed.ics") && masked.contains("course=7"),
            "{masked}"
        );
        assert_eq!(url_secrets(url), ["hunter22", "abc/def123", "k1k2k3"]);
        assert!(url_secrets("https://example.edu/cal.ics?course=7").is_empty());
    }

    #[test]
    fn never_shows_the_value() {
        let s = Secret::new("123456:ABCdefGhIJKlmNoPQRstuVWXyz");
        assert!(!format!("{s}").contains("ABCdef"));
        assert!(!format!("{s:?}").contains("ABCdef"));
        assert_eq!(s.expose(), "123456:ABCdefGhIJKlmNoPQRstuVWXyz");
        assert_eq!(Secret::new("short").to_string(), "***(5 chars)");
    }
}
