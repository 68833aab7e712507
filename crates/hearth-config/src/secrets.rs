//! `~/.config/hearth/secrets.env`: the one place for every secret hearth
//! reads from its environment (`HEARTH_TELEGRAM_TOKEN`,
//! `HEARTH_GATEWAY_TOKEN`, an LMS source's token, a variable an MCP
//! server's `bearer_token_env` names).
//!
//! hearth reads the file itself at start, so the service, `hearth ask` and
//! a shell all see the same secrets without exporting anything; a variable
//! set in the process wins over the file. The format is systemd's
//! `EnvironmentFile`: `NAME=value` lines, `#` comments, a value optionally
//! in quotes. A file others may read is refused, as ssh refuses a key.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where the file is, as the messages name it.
pub const HINT: &str = "~/.config/hearth/secrets.env";

/// The file's name inside hearth's config folder.
pub const FILE_NAME: &str = "secrets.env";

#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error("cannot read {path}: {source}")]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} may be read by other users (mode {mode:o}); it holds secrets. Fix: chmod 600 {path}"
    )]
    Exposed { path: PathBuf, mode: u32 },
    #[error("{path} line {line}: {why}; each line is NAME=value (a `#` line is a comment)")]
    Line {
        path: PathBuf,
        line: usize,
        why: &'static str,
    },
}

/// The variables in the file at `path`; an absent file holds none.
pub fn read(path: &Path) -> Result<HashMap<String, String>, SecretsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(source) => {
            return Err(SecretsError::Unreadable {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    check_mode(path)?;
    parse(&text).map_err(|(line, why)| SecretsError::Line {
        path: path.to_path_buf(),
        line,
        why,
    })
}

#[cfg(unix)]
fn check_mode(path: &Path) -> Result<(), SecretsError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|source| SecretsError::Unreadable {
            path: path.to_path_buf(),
            source,
        })?
        .permissions()
        .mode()
        & 0o777;
    if mode & 0o077 != 0 {
        return Err(SecretsError::Exposed {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_mode(_: &Path) -> Result<(), SecretsError> {
    Ok(())
}

/// `NAME=value` lines; the error is a line number (from 1) and why. A
/// value is never quoted back in an error: it is a secret.
fn parse(text: &str) -> Result<HashMap<String, String>, (usize, &'static str)> {
    let mut vars = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let (name, value) = line.split_once('=').ok_or((i + 1, "no `=`"))?;
        let name = name.trim();
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err((i + 1, "the name is not a variable name"));
        }
        vars.insert(name.to_string(), unquote(value.trim()).to_string());
    }
    Ok(vars)
}

fn unquote(value: &str) -> &str {
    for q in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(q) && value.ends_with(q) {
            return &value[1..value.len() - 1];
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_values_comments_and_quotes() {
        let vars = parse(
            "# the bot\nHEARTH_TELEGRAM_TOKEN=123:abc\n\n ; old style\nHEARTH_GATEWAY_TOKEN = \"with = sign\"\nHA='x y'\n",
        )
        .unwrap();
        assert_eq!(vars["HEARTH_TELEGRAM_TOKEN"], "123:abc");
        assert_eq!(vars["HEARTH_GATEWAY_TOKEN"], "with = sign");
        assert_eq!(vars["HA"], "x y");
        assert_eq!(vars.len(), 3);
    }

    #[test]
    fn a_bad_line_is_named_by_number_without_its_value() {
        assert_eq!(parse("A=1\nsecret-value\n"), Err((2, "no `=`")));
        assert_eq!(parse("1A=x\n"), Err((1, "the name is not a variable name")));
        let e = SecretsError::Line {
            path: "/s".into(),
            line: 2,
            why: "no `=`",
        }
        .to_string();
        assert!(!e.contains("secret-value"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_file_others_may_read_is_refused_and_an_absent_one_is_empty() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        assert!(read(&path).unwrap().is_empty());
        std::fs::write(&path, "HEARTH_GATEWAY_TOKEN=0123456789abcdef\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(
            e.contains("chmod 600") && !e.contains("0123456789abcdef"),
            "{e}"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            read(&path).unwrap()["HEARTH_GATEWAY_TOKEN"],
            "0123456789abcdef"
        );
    }
}
