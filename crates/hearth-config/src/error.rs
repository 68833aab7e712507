//! Why a config could not be used, always naming the file and the key.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}; fix the path or its permissions")]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config {path}: {message}")]
    Syntax { path: PathBuf, message: String },
    #[error("config {path}: key `{key}`: {message}")]
    Key {
        path: PathBuf,
        key: String,
        message: String,
    },
    #[error("invalid value for `{key}`: {message}")]
    Invalid { key: String, message: String },
    #[error("config {path}: {} problems: {}", .problems.len(), .problems.join("; "))]
    Several {
        path: PathBuf,
        problems: Vec<String>,
    },
}

impl ConfigError {
    pub(super) fn invalid(key: &str, message: impl Into<String>) -> Self {
        Self::Invalid {
            key: key.to_string(),
            message: message.into(),
        }
    }
}
