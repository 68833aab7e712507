//! `hearth doctor`'s memory line: how memories are found (by words, or by
//! words and meaning with which embedding model), and how to get an
//! embedding model when there is none.

use crate::config::Config;
use crate::memory::meaning::{self, Located};
use crate::models::Kind;

/// How a doctor line is marked.
pub enum Mark {
    Ok,
    Info,
    Fail,
}

/// How memory works here, and the line that says so.
pub fn line(config: &Config) -> (Mark, String) {
    if !config.memory.enabled {
        return (Mark::Info, "off (`[memory] enabled = false`)".to_string());
    }
    match meaning::locate(config) {
        Ok(Located::Found(path)) => (
            Mark::Ok,
            format!("found by words and by meaning, with {}", path.display()),
        ),
        Ok(Located::Off) => (
            Mark::Info,
            "found by words only (`[memory] embedding_model = \"off\"`)".to_string(),
        ),
        Ok(Located::NotFound) => (
            Mark::Info,
            format!(
                "found by words only: no embedding model; to find memories by meaning: {}",
                super::doctor::pull_hint(config, Kind::Embedding)
            ),
        ),
        Err(e) => (Mark::Fail, format!("`[memory] embedding_model`: {e}")),
    }
}
