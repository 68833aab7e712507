//! The workspace: one folder per conversation under the configured root.
//!
//! A private chat's folder is its person's (`<root>/telegram/<user id>`), a
//! group chat's is the group's, which its members share
//! (`<root>/telegram/<group id>`), and a gateway chat or a CLI session has
//! one of its own. Tools, commands, received media and the files a reply
//! sends all live in the conversation's folder, so nobody reaches another
//! person's files. `[agent] shared_workspace = true` gives every
//! conversation the root instead.
//!
//! The folder is named by the chat alone: an outgoing message knows only its
//! recipient, and on every channel a private chat's id is its person's.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("cannot make the workspace folder {}: {source}", .path.display())]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the workspace folder {} leads outside the workspace", .0.display())]
    Escapes(PathBuf),
}

/// Where conversations' folders are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspaces {
    root: PathBuf,
    shared: bool,
}

impl Workspaces {
    pub fn new(root: &Path, shared: bool) -> Self {
        Self {
            root: root.to_path_buf(),
            shared,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn shared(&self) -> bool {
        self.shared
    }

    /// The folder of `chat` on `channel` (the root when shared); it may not
    /// exist yet.
    pub fn of_chat(&self, channel: &str, chat: &str) -> PathBuf {
        if self.shared {
            return self.root.clone();
        }
        self.root.join(segment(channel)).join(segment(chat))
    }

    /// The folder of `chat`, created private when missing, as a real path
    /// beneath the root. A link where a folder should be is refused, never
    /// followed (nor made private: that would change its target's mode).
    pub fn prepare(&self, channel: &str, chat: &str) -> Result<PathBuf, WorkspaceError> {
        let failed = |path: &Path, source| WorkspaceError::Create {
            path: path.to_path_buf(),
            source,
        };
        crate::file_modes::make_private_dir(&self.root).map_err(|e| failed(&self.root, e))?;
        let root = self
            .root
            .canonicalize()
            .map_err(|e| failed(&self.root, e))?;
        if self.shared {
            return Ok(root);
        }
        let mut dir = root.clone();
        for part in [segment(channel), segment(chat)] {
            dir.push(part);
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.file_type().is_symlink() || !meta.is_dir() => {
                    return Err(WorkspaceError::Escapes(dir));
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    use std::os::unix::fs::DirBuilderExt;
                    std::fs::DirBuilder::new()
                        .mode(0o700)
                        .create(&dir)
                        .map_err(|e| failed(&dir, e))?;
                }
                Err(e) => return Err(failed(&dir, e)),
            }
        }
        Ok(dir)
    }
}

/// One path component naming `id`: letters, digits, `-`, `_`, `@` and `.`
/// kept, anything else as `%XX`; never empty, `.` or `..`.
fn segment(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'@' | b'.') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    if out.is_empty() || out.bytes().all(|b| b == b'.') {
        out = out.replace('.', "%2E");
        if out.is_empty() {
            out.push_str("%00");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_chat_has_a_folder_that_stays_beneath_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspaces::new(dir.path(), false);
        assert_eq!(ws.of_chat("telegram", "42"), dir.path().join("telegram/42"));
        assert_eq!(
            ws.of_chat("telegram", "-100123"),
            dir.path().join("telegram/-100123")
        );
        for hostile in ["..", ".", "", "../../etc", "a/b", "x\0y"] {
            let folder = ws.of_chat("gateway", hostile);
            assert_eq!(
                folder.parent().unwrap(),
                dir.path().join("gateway"),
                "{hostile:?}"
            );
            let name = folder.file_name().unwrap().to_str().unwrap();
            assert!(!name.contains('/') && name != ".." && name != ".", "{name}");
        }
        let made = ws.prepare("telegram", "42").unwrap();
        assert!(made.is_dir());
        // A link planted where a folder should be is refused.
        std::fs::create_dir_all(dir.path().join("cli")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("cli/user")).unwrap();
        assert!(matches!(
            ws.prepare("cli", "user"),
            Err(WorkspaceError::Escapes(_))
        ));
        let shared = Workspaces::new(dir.path(), true);
        assert_eq!(shared.of_chat("telegram", "42"), dir.path());
    }
}
