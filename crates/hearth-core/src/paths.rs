//! Judging where a path really leads, for paths that may not exist yet.

use std::path::{Component, Path, PathBuf};

/// `path` made absolute, its deepest existing ancestor canonicalised (so
/// `..` and symlinks that point elsewhere are seen for what they are) and
/// the rest appended with `.` and `..` resolved.
pub fn resolve_lenient(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.clone();
    let mut tail: Vec<std::ffi::OsString> = Vec::new();
    let base = loop {
        if let Ok(real) = existing.canonicalize() {
            break real;
        }
        let last = existing.components().next_back();
        match (last, existing.parent()) {
            (Some(c), Some(parent)) => {
                tail.push(c.as_os_str().to_os_string());
                existing = parent.to_path_buf();
            }
            _ => return absolute,
        }
    };
    let mut out = base;
    for part in tail.iter().rev() {
        match Path::new(part).components().next() {
            Some(Component::ParentDir) => {
                out.pop();
            }
            Some(Component::CurDir) | None => {}
            _ => out.push(part),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_and_links_are_resolved_for_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("a")).unwrap();
        std::os::unix::fs::symlink("/usr", real.join("a/out")).unwrap();
        assert_eq!(resolve_lenient(&real.join("a/new/../x")), real.join("a/x"));
        assert_eq!(
            resolve_lenient(&real.join("a/out/nothing/y")),
            Path::new("/usr/nothing/y")
        );
        assert_eq!(resolve_lenient(&real.join("a/..")), real);
    }
}
