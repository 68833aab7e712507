//! The LMS notifier's course files, kept in the documents library of the
//! person whose token fetched them: [`CourseFiles`], the notifier's
//! [`FileKeeper`].
//!
//! Whose they are: the `[lms] deliver` target's own scope (the person in
//! their private chat, `telegram:<id>`), or the command line's `local`
//! scope when notices go nowhere. A group chat never sees them, nor does
//! anyone else.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::config::LmsConfig;
use crate::documents::{Fetch, Library};
use crate::lms::{Fetched, FileKeeper, KeepError};
use crate::sandbox::Sandbox;
use crate::tools::scope::{LOCAL_SCOPE, Scopes};

pub struct CourseFiles {
    library: Arc<Library>,
    sandbox: Arc<Sandbox>,
    scope: String,
}

impl CourseFiles {
    pub fn new(library: Arc<Library>, sandbox: Arc<Sandbox>, scope: String) -> Self {
        Self {
            library,
            sandbox,
            scope,
        }
    }

    /// The scope the course files of `lms`' sources are kept in.
    pub fn scope_of(lms: &LmsConfig) -> String {
        match &lms.deliver {
            Some(t) => Scopes::of_chat(&t.channel, &t.to, &t.to).sender,
            None => LOCAL_SCOPE.to_string(),
        }
    }

    fn fetch<'a>(&'a self, origin: &'a str, key: &'a str, version: &'a str) -> Fetch<'a> {
        Fetch {
            scope: &self.scope,
            origin,
            key,
            version,
        }
    }
}

/// The documents' `source` of an LMS source's files.
fn origin(source: &str) -> String {
    format!("lms:{source}")
}

impl FileKeeper for CourseFiles {
    fn has(&self, source: &str, key: &str, version: &str) -> bool {
        let known = self
            .library
            .store
            .fetched_version(&self.scope, &origin(source), key);
        match known {
            Ok(v) => v.as_deref() == Some(version),
            Err(e) => {
                // Unknown is not fetched: the store is failing anyway.
                tracing::warn!(source, "documents store: {e}");
                true
            }
        }
    }

    fn kept_bytes(&self, source: &str) -> u64 {
        let bytes = self
            .library
            .store
            .fetched_bytes(&self.scope, &origin(source));
        bytes.unwrap_or_else(|e| {
            tracing::warn!(source, "documents store: {e}");
            u64::MAX
        })
    }

    fn refuse(&self, source: &str, key: &str, version: &str) {
        let origin = origin(source);
        let fetch = self.fetch(&origin, key, version);
        if let Err(e) = self.library.store.record_fetched(fetch, 0, None) {
            tracing::warn!(source, "documents store: {e}");
        }
    }

    fn keep(&self, file: Fetched) -> BoxFuture<'_, Result<(), KeepError>> {
        Box::pin(async move {
            let origin = origin(&file.source);
            let fetch = self.fetch(&origin, &file.key, &file.version);
            let name = match &file.course {
                Some(course) => format!("{} ({course})", file.name),
                None => file.name.clone(),
            };
            let now = chrono::Utc::now().timestamp();
            self.library
                .keep_fetched(&self.sandbox, fetch, &name, &file.bytes, now)
                .await
                .map(|_| ())
                .map_err(|e| KeepError(Box::new(e)))
        })
    }
}
