//! Media markers in replies: `[IMAGE:path]`, `[DOCUMENT:path]`, `[VOICE:path]`.
//!
//! A marker whose file lies inside the workspace is taken out of the text and
//! sent as a photo, document or voice message. Any other marker (outside the
//! workspace, through a symlink out of it, missing) is refused with a log and
//! left in the text, so the user still sees what the assistant meant.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    Image,
    Document,
    Voice,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingMedia {
    pub kind: MediaKind,
    /// Canonical, inside the workspace.
    pub path: PathBuf,
}

static MARKER: LazyLock<Regex> = LazyLock::new(|| {
    // A constant pattern, checked by the tests below.
    Regex::new(r"\[(IMAGE|DOCUMENT|VOICE):([^\]\n]+)\]").expect("valid marker pattern")
});

/// Splits `content` into the text to send and the media to attach.
pub fn extract_media(content: &str, workspace: &Path) -> (String, Vec<OutgoingMedia>) {
    let mut media = Vec::new();
    let text = MARKER.replace_all(content, |caps: &regex::Captures<'_>| {
        let kind = match &caps[1] {
            "IMAGE" => MediaKind::Image,
            "DOCUMENT" => MediaKind::Document,
            _ => MediaKind::Voice,
        };
        match resolve(caps[2].trim(), workspace) {
            Ok(path) => {
                media.push(OutgoingMedia { kind, path });
                String::new()
            }
            Err(why) => {
                tracing::warn!(marker = &caps[0], "telegram: media not sent: {why}");
                caps[0].to_string()
            }
        }
    });
    (text.trim().to_string(), media)
}

/// What a streaming draft shows of `partial`: markers that will go out as
/// files hidden (as the final message hides them), and a marker still being
/// written at the end held back.
pub fn draft_text(partial: &str, workspace: &Path) -> String {
    let (text, _) = extract_media(partial, workspace);
    let unfinished = ["[IMAGE:", "[DOCUMENT:", "[VOICE:"]
        .iter()
        .filter_map(|m| text.rfind(m))
        .filter(|&at| !text[at..].contains([']', '\n']))
        .min();
    match unfinished {
        Some(at) => text[..at].trim_end().to_string(),
        None => text,
    }
}

/// The canonical path of a marker's file, if it is a file inside `workspace`.
fn resolve(raw: &str, workspace: &Path) -> Result<PathBuf, String> {
    let root = workspace
        .canonicalize()
        .map_err(|e| format!("workspace {}: {e}", workspace.display()))?;
    let path = Path::new(raw);
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    };
    let real = joined
        .canonicalize()
        .map_err(|e| format!("{}: {e}", joined.display()))?;
    if !real.starts_with(&root) {
        return Err(format!("{} is outside the workspace", real.display()));
    }
    if !real.is_file() {
        return Err(format!("{} is not a file", real.display()));
    }
    Ok(real)
}

/// A received file's name made safe to save: letters, digits, `.-_` only,
/// never hidden, never empty.
pub fn safe_file_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let cleaned = cleaned.trim_start_matches('.');
    if cleaned.is_empty() {
        "file".to_string()
    } else {
        cleaned.chars().take(100).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_inside_the_workspace_become_media_and_others_stay() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(ws.join("cat.png"), b"png").unwrap();
        std::fs::write(dir.path().join("secret.txt"), b"s").unwrap();
        let outside = dir.path().join("secret.txt");
        let content = format!(
            "Here: [IMAGE:cat.png]\n[DOCUMENT:{}] and [VOICE:../secret.txt] [IMAGE:missing.png]",
            outside.display()
        );
        let (text, media) = extract_media(&content, &ws);
        assert_eq!(media.len(), 1);
        assert_eq!(media[0].kind, MediaKind::Image);
        assert!(media[0].path.ends_with("cat.png"));
        assert!(!text.contains("cat.png"));
        assert!(text.contains("secret.txt]"), "{text}");
        assert!(text.contains("[VOICE:../secret.txt]"));
        assert!(text.contains("[IMAGE:missing.png]"));
    }

    #[test]
    fn drafts_hide_markers_sent_as_files_and_unfinished_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cat.png"), b"png").unwrap();
        let ws = dir.path();
        assert_eq!(
            draft_text("A cat: [IMAGE:cat.png] there", ws),
            "A cat:  there"
        );
        assert_eq!(draft_text("A cat: [IMAGE:ca", ws), "A cat:");
        assert_eq!(draft_text("A cat: [DOC", ws), "A cat: [DOC");
        assert_eq!(
            draft_text("[IMAGE:missing.png] stays", ws),
            "[IMAGE:missing.png] stays"
        );
    }

    #[test]
    fn received_names_cannot_escape_or_hide() {
        assert_eq!(safe_file_name("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(safe_file_name(".bashrc"), "bashrc");
        assert_eq!(safe_file_name("report 1.pdf"), "report_1.pdf");
        assert_eq!(safe_file_name(""), "file");
    }
}
