//! Course files: what a site lists of its courses' files, fetched once per
//! version into the person's documents.
//!
//! A source lists a file as an [`LmsItem`] of kind `File` carrying a
//! [`CourseFile`], so a new file is announced once like a new assignment.
//! After a poll the notifier asks its [`FileKeeper`] (the daemon's, over
//! the documents library) whether that version is kept already; only a new
//! or changed one is downloaded, within the source's `files_mb` and
//! [`MAX_FILE`], and handed over. The download goes only to the site's own
//! origin with the token (see each source's `download`).

use std::collections::BTreeSet;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::{LmsError, LmsItem, LmsSource, Notifier};

/// The largest course file downloaded (what the document reader takes).
pub const MAX_FILE: u64 = 32 * 1024 * 1024;

/// A file a course offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CourseFile {
    /// Where the site serves it, without any token.
    pub download: String,
    /// Its file name, as cited.
    pub name: String,
    /// Its size as the site lists it.
    pub size: Option<u64>,
    /// The site's version of it (modified time and size): a new version is
    /// fetched again, the same one never.
    pub version: String,
}

impl CourseFile {
    /// A file at `download` last modified at `modified`: its version is
    /// that time and its size, so either changing fetches it again.
    pub fn new(
        download: &str,
        name: &str,
        size: Option<u64>,
        modified: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Self {
        let at = modified.map(|t| t.timestamp()).unwrap_or_default();
        Self {
            download: download.to_string(),
            name: name.to_string(),
            size,
            version: format!("{at}:{}", size.unwrap_or_default()),
        }
    }
}

/// A site's course files as last listed, with what the listing noted: a
/// site is asked for them every `files_poll_mins` (6 hours), not every
/// poll, and the poll between gives the same items again (so none of them
/// looks gone).
#[derive(Default)]
pub struct LastListed {
    last: std::sync::Mutex<Option<Listing>>,
}

struct Listing {
    at: chrono::DateTime<chrono::Utc>,
    items: Vec<LmsItem>,
    notes: Vec<String>,
}

impl LastListed {
    /// The files and notes listed less than `every` before `now`.
    pub fn fresh(
        &self,
        now: chrono::DateTime<chrono::Utc>,
        every: std::time::Duration,
    ) -> Option<(Vec<LmsItem>, Vec<String>)> {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let l = last.as_ref()?;
        let age = (now - l.at).to_std().unwrap_or_default();
        (now >= l.at && age < every).then(|| (l.items.clone(), l.notes.clone()))
    }

    pub fn keep(&self, now: chrono::DateTime<chrono::Utc>, items: &[LmsItem], notes: &[String]) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(Listing {
            at: now,
            items: items.to_vec(),
            notes: notes.to_vec(),
        });
    }
}

/// A course file downloaded, for the keeper.
#[derive(Debug)]
pub struct Fetched {
    pub source: String,
    /// The item's id within the source.
    pub key: String,
    pub version: String,
    pub name: String,
    pub course: Option<String>,
    pub bytes: Vec<u8>,
}

/// Why a downloaded file was not kept (it is not downloaded again until
/// the site changes it).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct KeepError(pub Box<dyn std::error::Error + Send + Sync>);

/// Where course files go: the person's documents.
pub trait FileKeeper: Send + Sync {
    /// Whether `version` of `source`'s file `key` was kept (or refused) before.
    fn has(&self, source: &str, key: &str, version: &str) -> bool;
    /// How many bytes of `source`'s files are kept now.
    fn kept_bytes(&self, source: &str) -> u64;
    /// Remembers a version that will not be kept (too large), so it is not
    /// downloaded again.
    fn refuse(&self, source: &str, key: &str, version: &str);
    /// Reads and keeps a downloaded file.
    fn keep(&self, file: Fetched) -> BoxFuture<'_, Result<(), KeepError>>;
}

/// A link to a document (by its name's extension) as a course file of a
/// feed item, for an iCal or RSS source with `files` set.
pub fn linked(item: &mut LmsItem) {
    const DOCUMENTS: &[&str] = &[".pdf", ".docx", ".txt", ".md", ".html", ".htm"];
    let Some(url) = item
        .url
        .as_deref()
        .and_then(|u| reqwest::Url::parse(u).ok())
    else {
        return;
    };
    let name = unescaped(
        url.path_segments()
            .and_then(|mut s| s.next_back())
            .unwrap_or(""),
    );
    let lower = name.to_ascii_lowercase();
    if matches!(url.scheme(), "http" | "https") && DOCUMENTS.iter().any(|e| lower.ends_with(e)) {
        let version = item.updated.map(|t| t.timestamp().to_string());
        item.file = Some(CourseFile {
            download: url.to_string(),
            name,
            size: None,
            version: version.unwrap_or_else(|| "listed".into()),
        });
    }
}

/// An iCal or RSS source whose items' document links are course files,
/// downloaded without any credential (the feed's own secrets stay with it).
pub struct Linking {
    pub inner: std::sync::Arc<dyn LmsSource>,
    pub http: reqwest::Client,
}

impl LmsSource for Linking {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn poll(
        &self,
        now: chrono::DateTime<chrono::Utc>,
    ) -> BoxFuture<'_, Result<Vec<LmsItem>, LmsError>> {
        Box::pin(async move {
            let mut items = self.inner.poll(now).await?;
            items.iter_mut().for_each(linked);
            Ok(items)
        })
    }

    fn notes(&self) -> Vec<String> {
        self.inner.notes()
    }

    fn download<'a>(
        &'a self,
        file: &'a CourseFile,
        max: u64,
    ) -> BoxFuture<'a, Result<Vec<u8>, LmsError>> {
        Box::pin(async move {
            let response = super::http::send(self.http.get(&file.download)).await?;
            super::http::bytes(response, max).await
        })
    }
}

impl Notifier {
    /// Downloads the new and changed files among `items` and hands them to
    /// the keeper; how many were kept. What was skipped and why goes into
    /// `notes`.
    pub(super) async fn fetch_files(
        &self,
        source: &dyn LmsSource,
        items: &[LmsItem],
        notes: &mut BTreeSet<String>,
    ) -> usize {
        let Some(keeper) = self.keeper() else {
            return 0;
        };
        let name = source.name();
        let Some(config) = self.config.sources.iter().find(|s| s.name == name) else {
            return 0;
        };
        let cap = config.files_mb * 1_000_000;
        let mut kept_bytes = keeper.kept_bytes(name);
        let mut kept = 0;
        for item in items {
            let Some(file) = &item.file else { continue };
            if keeper.has(name, &item.id, &file.version) {
                continue;
            }
            let room = cap.saturating_sub(kept_bytes).min(MAX_FILE);
            let over = |why: &str| format!("did not fetch the course file {}: {why}", file.name);
            if file.size.is_some_and(|s| s > room) {
                notes.insert(over(&too_big(cap, kept_bytes)));
                continue;
            }
            let bytes = match source.download(file, room).await {
                Ok(bytes) => bytes,
                Err(LmsError::TooLarge { .. }) => {
                    keeper.refuse(name, &item.id, &file.version);
                    notes.insert(over(&too_big(cap, kept_bytes)));
                    continue;
                }
                Err(e) => {
                    tracing::warn!(source = name, file = %file.name, "course file not fetched: {e}");
                    notes.insert(over(&e.to_string()));
                    continue;
                }
            };
            let size = bytes.len() as u64;
            let fetched = Fetched {
                source: name.to_string(),
                key: item.id.clone(),
                version: file.version.clone(),
                name: file.name.clone(),
                course: item.course.clone(),
                bytes,
            };
            match keeper.keep(fetched).await {
                Ok(()) => {
                    kept += 1;
                    kept_bytes += size;
                }
                Err(e) => {
                    tracing::info!(source = name, file = %file.name, "course file not read: {e}");
                    notes.insert(over(&e.to_string()));
                }
            }
        }
        kept
    }
}

/// A URL path segment (or user, or password) with its `%XX` escapes
/// decoded (lossily).
pub(crate) fn unescaped(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn too_big(cap: u64, kept: u64) -> String {
    format!(
        "it is larger than the {} MB a file may be or the {} MB left of the source's files_mb ({} MB); fix: raise files_mb",
        MAX_FILE / 1_048_576,
        cap.saturating_sub(kept) / 1_000_000,
        cap / 1_000_000
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ItemKind;

    #[test]
    fn a_feed_items_link_is_a_course_file_only_when_it_names_a_document() {
        let mut item = LmsItem::new("news", "1", ItemKind::News, "Syllabus posted");
        item.url = Some("https://uni.example/files/Syllabus%20STAT.pdf".into());
        linked(&mut item);
        let file = item.file.clone().unwrap();
        assert_eq!(file.name, "Syllabus STAT.pdf");
        for not in [
            "https://uni.example/news/42",
            "file:///etc/passwd.pdf",
            "javascript:alert(1).pdf",
        ] {
            let mut item = LmsItem::new("news", "2", ItemKind::News, "x");
            item.url = Some(not.into());
            linked(&mut item);
            assert!(item.file.is_none(), "{not}");
        }
    }
}
