//! The slice of the process environment that configuration reads.
//!
//! Config loading takes this snapshot instead of calling `std::env` itself, so
//! tests can describe any environment without touching (racy, global) process
//! state.

use std::collections::HashMap;
use std::path::PathBuf;

#[derive(Debug, Clone, Default)]
pub struct Environment {
    vars: HashMap<String, String>,
    home: Option<PathBuf>,
    /// Whether a variable the config itself names (`bearer_token_env`) is
    /// read from this process when asked.
    process: bool,
    /// The secrets file read into `vars`, if one was there.
    secrets: Option<PathBuf>,
}

impl Environment {
    /// The variables hearth reads, taken from this process.
    pub fn from_process() -> Self {
        let vars = std::env::vars()
            .filter(|(k, _)| {
                k.starts_with("HEARTH_") || k.starts_with("XDG_") || k == "OPENAI_API_KEY"
            })
            .collect();
        Self {
            vars,
            home: std::env::var_os("HOME").map(PathBuf::from),
            process: true,
            secrets: None,
        }
    }

    /// Adds the variables of the secrets file (`secrets.env` in hearth's
    /// config folder) that this environment does not set itself.
    pub fn with_secrets_file(mut self) -> Result<Self, super::secrets::SecretsError> {
        let Some(path) = self.secrets_path() else {
            return Ok(self);
        };
        let vars = super::secrets::read(&path)?;
        if !vars.is_empty() || path.exists() {
            self.secrets = Some(path);
        }
        for (name, value) in vars {
            self.vars.entry(name).or_insert(value);
        }
        Ok(self)
    }

    /// `$XDG_CONFIG_HOME/hearth/secrets.env`, else `~/.config/hearth/secrets.env`.
    pub fn secrets_path(&self) -> Option<PathBuf> {
        self.xdg_dir("XDG_CONFIG_HOME", ".config")
            .map(|d| d.join("hearth").join(super::secrets::FILE_NAME))
    }

    /// The secrets file that was read, if there was one.
    pub fn secrets_read(&self) -> Option<&PathBuf> {
        self.secrets.as_ref()
    }

    /// An environment with only a home directory, for tests.
    pub fn with_home(home: impl Into<PathBuf>) -> Self {
        Self {
            vars: HashMap::new(),
            home: Some(home.into()),
            process: false,
            secrets: None,
        }
    }

    pub fn set(mut self, key: &str, value: &str) -> Self {
        self.vars.insert(key.to_string(), value.to_string());
        self
    }

    /// A variable's value; an empty value counts as unset.
    pub fn var(&self, key: &str) -> Option<&str> {
        self.vars
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// A variable the config names, whatever its name: from the snapshot,
    /// else (for the real process) read now.
    pub fn named(&self, key: &str) -> Option<String> {
        if let Some(v) = self.var(key) {
            return Some(v.to_string());
        }
        if !self.process {
            return None;
        }
        std::env::var(key).ok().filter(|v| !v.is_empty())
    }

    pub fn home(&self) -> Option<&PathBuf> {
        self.home.as_ref()
    }

    /// Expands a leading `~/` to the home directory.
    pub fn expand(&self, path: &str) -> PathBuf {
        match (path.strip_prefix("~/"), &self.home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => PathBuf::from(path),
        }
    }

    /// `$XDG_CONFIG_HOME/hearth/config.toml`, else `~/.config/hearth/config.toml`.
    pub fn default_config_path(&self) -> Option<PathBuf> {
        self.xdg_dir("XDG_CONFIG_HOME", ".config")
            .map(|d| d.join("hearth").join("config.toml"))
    }

    /// `$XDG_DATA_HOME/hearth`, else `~/.local/share/hearth`.
    pub fn default_data_dir(&self) -> PathBuf {
        self.xdg_dir("XDG_DATA_HOME", ".local/share")
            .map(|d| d.join("hearth"))
            .unwrap_or_else(|| PathBuf::from(".hearth"))
    }

    fn xdg_dir(&self, var: &str, fallback: &str) -> Option<PathBuf> {
        match self.var(var) {
            Some(dir) => Some(PathBuf::from(dir)),
            None => self.home.as_ref().map(|h| h.join(fallback)),
        }
    }
}
