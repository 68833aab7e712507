//! Config hot reload: before a message is handled the config file's mtime
//! and size are compared with what was loaded; a change is parsed and, if
//! valid, replaces the config (providers, models and routes apply to the
//! next message). An invalid edit is logged and the old config kept.

use std::path::PathBuf;
use std::time::SystemTime;

use crate::config::{Config, ConfigError, Environment};

/// Watches one config file.
pub struct ConfigWatcher {
    path: PathBuf,
    env: Environment,
    stamp: Option<(SystemTime, u64)>,
}

/// What a check found.
#[derive(Debug)]
pub enum Reload {
    Unchanged,
    Changed(Box<Config>),
    Invalid(ConfigError),
}

impl ConfigWatcher {
    /// Starts watching `path`, taking its current state as loaded.
    pub fn new(path: PathBuf, env: Environment) -> Self {
        let stamp = stamp(&path);
        Self { path, env, stamp }
    }

    pub fn check(&mut self) -> Reload {
        let now = stamp(&self.path);
        if now == self.stamp {
            return Reload::Unchanged;
        }
        self.stamp = now;
        match Config::load_file(&self.path, &self.env) {
            Ok(config) => Reload::Changed(Box::new(config)),
            Err(e) => Reload::Invalid(e),
        }
    }
}

fn stamp(path: &std::path::Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}
