//! A source whose errors never carry its secrets: the token, the secrets
//! inside its URL (`authtoken=`, a password) and the URL itself, which for
//! a calendar feed is the credential. Sites echo what they were asked in
//! their error pages, so every error a source makes is scrubbed here, where
//! it is made, before the notifier logs it, stores it for `hearth lms
//! status` or the web page shows it.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;

use super::{LmsError, LmsItem, LmsSource};
use crate::config::{LmsSourceConfig, url_secrets};
use crate::security::Scrubber;

pub struct Scrubbed {
    inner: Arc<dyn LmsSource>,
    scrubber: Scrubber,
}

impl Scrubbed {
    pub fn new(inner: Arc<dyn LmsSource>, config: &LmsSourceConfig) -> Self {
        let mut secrets: Vec<String> = config
            .token
            .iter()
            .map(|t| t.expose().to_string())
            .collect();
        secrets.extend(url_secrets(&config.url));
        if let Ok(url) = reqwest::Url::parse(&config.url) {
            // The path and query: all of a private feed's address but its host.
            let query = url.query().map(|q| format!("?{q}")).unwrap_or_default();
            let rest = format!("{}{query}", url.path());
            if rest.len() > 1 {
                secrets.push(rest);
            }
        }
        Self {
            inner,
            scrubber: Scrubber::new().with_secrets(secrets),
        }
    }
}

impl LmsSource for Scrubbed {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn poll(&self, now: DateTime<Utc>) -> BoxFuture<'_, Result<Vec<LmsItem>, LmsError>> {
        self.inner
            .poll(now)
            .map(|r| r.map_err(|e| e.map_text(|t| self.scrubber.scrub(t))))
            .boxed()
    }

    fn download<'a>(
        &'a self,
        file: &'a crate::CourseFile,
        max: u64,
    ) -> BoxFuture<'a, Result<Vec<u8>, LmsError>> {
        self.inner
            .download(file, max)
            .map(|r| r.map_err(|e| e.map_text(|t| self.scrubber.scrub(t))))
            .boxed()
    }

    fn notes(&self) -> Vec<String> {
        self.inner
            .notes()
            .iter()
            .map(|n| self.scrubber.scrub(n))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LmsKind, Secret};

    struct Failing(LmsError);

    impl LmsSource for Failing {
        fn name(&self) -> &str {
            "uni"
        }
        fn poll(&self, _: DateTime<Utc>) -> BoxFuture<'_, Result<Vec<LmsItem>, LmsError>> {
            let e = self.0.clone();
            async move { Err(e) }.boxed()
        }
    }

    fn config() -> LmsSourceConfig {
        LmsSourceConfig {
            kind: LmsKind::Ical,
            name: "uni".into(),
            url: "https://cal.example.edu/feeds/private-7f3a9c2e1b/basic.ics?authtoken=Zq81kLw0pX"
                .into(),
            token: Some(Secret::new("moodle-wstoken-5521")),
            courses: Vec::new(),
            files: true,
            files_mb: 100,
            files_poll: std::time::Duration::from_secs(6 * 3600),
            scores: false,
        }
    }

    #[tokio::test]
    async fn every_error_a_source_makes_is_said_without_its_secrets() {
        let echoed = "GET /feeds/private-7f3a9c2e1b/basic.ics?authtoken=Zq81kLw0pX not found";
        for error in [
            LmsError::Http {
                status: 404,
                message: echoed.into(),
            },
            LmsError::Auth(format!("HTTP 401: bad authtoken Zq81kLw0pX for {echoed}")),
            LmsError::Remote("invalid token moodle-wstoken-5521".into()),
            LmsError::Network(format!("cannot connect: https://cal.example.edu{echoed}")),
            LmsError::Malformed(
                "not a feed: /feeds/private-7f3a9c2e1b/basic.ics?authtoken=Zq81kLw0pX".into(),
            ),
        ] {
            let source = Scrubbed::new(Arc::new(Failing(error.clone())), &config());
            let said = source.poll(Utc::now()).await.unwrap_err().with_fix();
            for secret in ["Zq81kLw0pX", "private-7f3a9c2e1b", "moodle-wstoken-5521"] {
                assert!(!said.contains(secret), "{secret} in {said}");
            }
            // Control: the same error unscrubbed did carry a secret.
            let raw = error.with_fix();
            assert!(
                raw.contains("Zq81kLw0pX") || raw.contains("moodle-wstoken-5521"),
                "{raw}"
            );
        }
        // Control: what is no secret is kept.
        let plain = LmsError::Http {
            status: 503,
            message: "maintenance until noon".into(),
        };
        let source = Scrubbed::new(Arc::new(Failing(plain)), &config());
        let said = source.poll(Utc::now()).await.unwrap_err().to_string();
        assert_eq!(said, "HTTP 503: maintenance until noon");
    }
}
