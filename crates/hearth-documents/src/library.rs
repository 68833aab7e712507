//! The seam the pipeline uses: a message's documents read and kept, and
//! the turn's context from them.
//!
//! A channel hands a received file on as a marker in the message's text,
//! `[DOCUMENT:/path/in/the/chat's/folder]`. Markers are text anyone can
//! type, so a marker is read only when its file is inside the chat's own
//! workspace folder (where the channel saved it, and where that chat's
//! tools may read anyway); any other is left alone.

use std::path::{Path, PathBuf};

use hearth_core::chat::Attachment;
use hearth_sandbox::Sandbox;

use super::context::{self, TurnLimits};
use super::{Cage, DocumentError, DocumentStore, ExtractError};

/// A document of this message that could not be read, and why.
#[derive(Debug, thiserror::Error)]
#[error("I could not read {name}: {why}.")]
pub struct Unread {
    pub name: String,
    pub why: String,
}

impl Unread {
    fn new(name: &str, why: impl std::fmt::Display) -> Self {
        Self {
            name: name.to_string(),
            why: why.to_string(),
        }
    }
}

/// Whose documents a turn keeps and sees.
#[derive(Debug, Clone, Copy)]
pub struct Whose<'a> {
    /// Where documents sent now are kept (the group's scope in a group).
    pub keep_in: &'a str,
    /// What the turn may find: the sender's and their group's.
    pub sees: &'a [&'a str],
}

/// Documents on the box: read in the [`Cage`], kept in the [`DocumentStore`].
pub struct Library {
    pub store: std::sync::Arc<DocumentStore>,
    pub cage: Cage,
    pub limits: TurnLimits,
}

impl Library {
    /// Reads the documents `text` carries (inside `folder`, the chat's
    /// workspace) and those `attached` to the message, and returns the
    /// turn's document context, or the first document that could not be
    /// read.
    pub async fn for_turn(
        &self,
        sandbox: &Sandbox,
        folder: &Path,
        whose: Whose<'_>,
        (text, attached): (&str, &[Attachment]),
        now: i64,
    ) -> Result<Option<String>, Unread> {
        let (files, question) = markers(text);
        let mut paths = Vec::new();
        for file in files {
            match inside(folder, &file) {
                Some(path) => paths.push(path),
                None => {
                    tracing::warn!(path = %file, "a document marker outside the chat's folder was left alone")
                }
            }
        }
        let mut kept = self
            .take_in(sandbox, &paths, whose.keep_in, "sent", now)
            .await?;
        for doc in attached {
            let read = self.cage.read(sandbox, &doc.bytes, &doc.name).await;
            let read = read.map_err(|e| {
                tracing::info!(name = %doc.name, error = %e, "a document was not read");
                Unread::new(&doc.name, e)
            })?;
            let (id, _) = (self.store)
                .add(whose.keep_in, &doc.name, "sent", &read, now)
                .map_err(|e| Unread::new(&doc.name, e))?;
            if read.cut {
                kept.cut.push(doc.name.clone());
            }
            kept.ids.push(id);
        }
        self.context(whose.sees, kept, &question)
    }

    /// The context of a question about `paths`, read and kept under `scope`
    /// (`hearth ask --file`).
    pub async fn for_files(
        &self,
        sandbox: &Sandbox,
        paths: &[PathBuf],
        scope: &str,
        question: &str,
        now: i64,
    ) -> Result<Option<String>, Unread> {
        let kept = self.take_in(sandbox, paths, scope, "added", now).await?;
        self.context(&[scope], kept, question)
    }

    /// Reads `paths` and keeps them under `keep_in`: their ids, and the
    /// names of those read only in part; or the first that could not be read.
    async fn take_in(
        &self,
        sandbox: &Sandbox,
        paths: &[PathBuf],
        keep_in: &str,
        source: &str,
        now: i64,
    ) -> Result<Kept, Unread> {
        let mut kept = Kept::default();
        for path in paths {
            let name = shown_name(path);
            let read = self.cage.read_file(sandbox, path).await.map_err(|e| {
                tracing::info!(name, error = %e, "a document was not read");
                Unread::new(&name, e)
            })?;
            let (id, _) = self
                .store
                .add(keep_in, &name, source, &read, now)
                .map_err(|e| Unread::new(&name, e))?;
            if read.cut {
                kept.cut.push(name);
            }
            kept.ids.push(id);
        }
        Ok(kept)
    }

    /// The turn's document context from `sees`' documents, `kept` the ones
    /// this turn brought.
    fn context(&self, sees: &[&str], kept: Kept, question: &str) -> Result<Option<String>, Unread> {
        let pieces = context::for_turn(&self.store, sees, &kept.ids, question, self.limits)
            .map_err(|e| Unread::new("your documents", e))?;
        let block = context::block(&pieces, self.limits.total_chars);
        Ok(match (block, kept.cut.is_empty()) {
            (block, true) => block,
            (block, false) => Some(format!(
                "Only the first part of {} was read: it is over what hearth reads of a document. Say so.\n{}",
                hearth_core::fence::defuse(&kept.cut.join(", ")),
                block.unwrap_or_default()
            )),
        })
    }

    /// Reads one file and keeps it under `scope` (`hearth docs add`).
    pub async fn add_file(
        &self,
        sandbox: &Sandbox,
        path: &Path,
        scope: &str,
        now: i64,
    ) -> Result<(i64, bool, crate::Extracted), AddError> {
        let read = self.cage.read_file(sandbox, path).await?;
        let (id, new) = self
            .store
            .add(scope, &shown_name(path), "added", &read, now)?;
        Ok((id, new, read))
    }
}

impl Library {
    /// Reads a file hearth fetched itself (`fetch` says whose, from where,
    /// which version) and keeps it as `name`; a file that cannot be read
    /// is recorded too, so that version is not fetched again.
    pub async fn keep_fetched(
        &self,
        sandbox: &Sandbox,
        fetch: crate::Fetch<'_>,
        name: &str,
        bytes: &[u8],
        now: i64,
    ) -> Result<i64, AddError> {
        let size = bytes.len() as u64;
        let read = match self.cage.read(sandbox, bytes, name).await {
            Ok(read) => read,
            Err(e) => {
                self.store.record_fetched(fetch, size, None)?;
                return Err(e.into());
            }
        };
        let (id, _) = self
            .store
            .add(fetch.scope, name, fetch.origin, &read, now)?;
        self.store.record_fetched(fetch, size, Some(id))?;
        Ok(id)
    }
}

/// What one turn kept: the documents' ids, and who was read only in part.
#[derive(Debug, Default)]
struct Kept {
    ids: Vec<i64>,
    cut: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AddError {
    #[error(transparent)]
    Read(#[from] ExtractError),
    #[error(transparent)]
    Store(#[from] DocumentError),
}

/// The file's name as people see it: the channel's prefix (`<chat>_<id>_`)
/// left off.
fn shown_name(path: &Path) -> String {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("document");
    let mut parts = name.splitn(3, '_');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(chat), Some(id), Some(rest))
            if !rest.is_empty()
                && chat
                    .trim_start_matches('-')
                    .chars()
                    .all(|c| c.is_ascii_digit())
                && id.chars().all(|c| c.is_ascii_digit()) =>
        {
            rest.to_string()
        }
        _ => name.to_string(),
    }
}

/// The `[DOCUMENT:…]` paths in `text`, and the text without them.
fn markers(text: &str) -> (Vec<String>, String) {
    const OPEN: &str = "[DOCUMENT:";
    let mut files = Vec::new();
    let mut rest = text;
    let mut question = String::new();
    while let Some(i) = rest.find(OPEN) {
        question.push_str(&rest[..i]);
        let after = &rest[i + OPEN.len()..];
        match after.find(']') {
            Some(end) => {
                files.push(after[..end].trim().to_string());
                rest = &after[end + 1..];
            }
            None => {
                question.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    question.push_str(rest);
    (files, question.trim().to_string())
}

/// `file`, when it is a file inside `folder` (links resolved).
fn inside(folder: &Path, file: &str) -> Option<PathBuf> {
    let folder = folder.canonicalize().ok()?;
    let path = Path::new(file);
    let path = if path.is_absolute() {
        path.to_path_buf()
    } else {
        folder.join(path)
    };
    let path = path.canonicalize().ok()?;
    (path.starts_with(&folder) && path.is_file()).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_taken_out_of_the_question() {
        let (files, question) =
            markers("[DOCUMENT:/w/received/1_2_syllabus.pdf]\nWhat is the late policy?");
        assert_eq!(files, vec!["/w/received/1_2_syllabus.pdf"]);
        assert_eq!(question, "What is the late policy?");
        let (files, question) = markers("no marker [DOCUMENT: unclosed");
        assert!(files.is_empty());
        assert_eq!(question, "no marker [DOCUMENT: unclosed");
    }

    #[test]
    fn only_files_inside_the_chats_folder_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("chat");
        std::fs::create_dir_all(folder.join("received")).unwrap();
        std::fs::write(folder.join("received/a.txt"), "x").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), folder.join("link.txt")).unwrap();
        // The control: the chat's own file.
        assert!(inside(&folder, &folder.join("received/a.txt").to_string_lossy()).is_some());
        assert!(inside(&folder, "received/a.txt").is_some());
        for hostile in [
            dir.path().join("secret.txt").to_string_lossy().into_owned(),
            "../secret.txt".to_string(),
            "link.txt".to_string(),
            "/etc/passwd".to_string(),
            "received".to_string(),
        ] {
            assert!(inside(&folder, &hostile).is_none(), "{hostile}");
        }
    }

    #[test]
    fn the_channels_prefix_is_left_off_the_name() {
        assert_eq!(
            shown_name(Path::new("/w/-100123_45_syllabus_2026.pdf")),
            "syllabus_2026.pdf"
        );
        assert_eq!(shown_name(Path::new("/w/my_file.pdf")), "my_file.pdf");
    }
}
