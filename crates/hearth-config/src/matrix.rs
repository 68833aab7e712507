//! `[channels.matrix]`: the Matrix channel's keys, raw and validated.
//!
//! The bot is an ordinary Matrix account on a homeserver. It logs in once
//! with its password (or an access token made elsewhere) and keeps the
//! session and its encryption keys in the data folder; only the Matrix IDs
//! in `allowed_users` are answered, and only their invites are taken.

use std::fmt::Write;

use serde::Deserialize;

use super::{ConfigError, Environment, Secret};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMatrix {
    pub homeserver: Option<String>,
    pub user: Option<String>,
    pub password: Option<String>,
    pub access_token: Option<String>,
    pub device_name: Option<String>,
    pub allowed_users: Option<Vec<String>>,
}

/// How the bot logs in the first time.
#[derive(Debug, Clone)]
pub enum MatrixLogin {
    Password(Secret),
    AccessToken(Secret),
}

/// The checked section; `None` in [`super::Config`] when it is absent.
#[derive(Debug, Clone)]
pub struct MatrixConfig {
    /// The client-server API root, without a trailing slash.
    pub homeserver: String,
    /// The bot's Matrix ID.
    pub user: String,
    /// `HEARTH_MATRIX_PASSWORD` or `HEARTH_MATRIX_TOKEN` win over the file.
    pub login: MatrixLogin,
    pub device_name: String,
    pub allowed_users: Vec<String>,
}

impl MatrixConfig {
    /// Stage two for this section: defaults, the secret variables, checks.
    pub(super) fn from_raw(
        raw: Option<RawMatrix>,
        env: &Environment,
    ) -> Result<Option<Self>, ConfigError> {
        let Some(m) = raw else {
            return Ok(None);
        };
        let key = |k: &str| format!("channels.matrix.{k}");
        let homeserver = m
            .homeserver
            .map(|h| h.trim().trim_end_matches('/').to_string())
            .filter(|h| h.starts_with("https://") || h.starts_with("http://"))
            .ok_or_else(|| {
                ConfigError::invalid(
                    &key("homeserver"),
                    "the homeserver's address is needed, as https://matrix.example.org",
                )
            })?;
        let user = m
            .user
            .map(|u| u.trim().to_string())
            .filter(|u| plausible_id(u))
            .ok_or_else(|| {
                ConfigError::invalid(
                    &key("user"),
                    "the bot's Matrix ID is needed, as @name:server",
                )
            })?;
        let password = env
            .var("HEARTH_MATRIX_PASSWORD")
            .map(str::to_string)
            .or(m.password.filter(|p| !p.is_empty()));
        let token = env
            .var("HEARTH_MATRIX_TOKEN")
            .map(str::to_string)
            .or(m.access_token.filter(|t| !t.is_empty()));
        let login = match (password, token) {
            (Some(p), None) => MatrixLogin::Password(Secret::new(p)),
            (None, Some(t)) => MatrixLogin::AccessToken(Secret::new(t)),
            (Some(_), Some(_)) => {
                return Err(ConfigError::invalid(
                    &key("password"),
                    "set a password or an access_token, not both",
                ));
            }
            (None, None) => {
                return Err(ConfigError::invalid(
                    &key("password"),
                    "set password (or HEARTH_MATRIX_PASSWORD), or access_token (or HEARTH_MATRIX_TOKEN)",
                ));
            }
        };
        let mut allowed_users = Vec::new();
        for u in m.allowed_users.unwrap_or_default() {
            let u = u.trim().to_string();
            if !plausible_id(&u) {
                return Err(ConfigError::invalid(
                    &key("allowed_users"),
                    format!("`{u}` is not a Matrix ID (@name:server)"),
                ));
            }
            allowed_users.push(u);
        }
        Ok(Some(Self {
            homeserver,
            user,
            login,
            device_name: m
                .device_name
                .map(|d| d.trim().to_string())
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| "hearth".into()),
            allowed_users,
        }))
    }

    pub fn secret(&self) -> &Secret {
        match &self.login {
            MatrixLogin::Password(s) | MatrixLogin::AccessToken(s) => s,
        }
    }

    /// The section as TOML, the password or token masked.
    pub fn render(&self) -> String {
        let mut out = String::from("[channels.matrix]\n");
        let users: Vec<String> = self.allowed_users.iter().map(|s| quote(s)).collect();
        let login = match &self.login {
            MatrixLogin::Password(p) => format!("password = \"{p}\""),
            MatrixLogin::AccessToken(t) => format!("access_token = \"{t}\""),
        };
        let _ = writeln!(
            out,
            "homeserver = {}\nuser = {}\n{login}\ndevice_name = {}\nallowed_users = [{}]",
            quote(&self.homeserver),
            quote(&self.user),
            quote(&self.device_name),
            users.join(", "),
        );
        out
    }
}

/// Whether `id` looks like `@name:server`.
fn plausible_id(id: &str) -> bool {
    match id.strip_prefix('@').and_then(|rest| rest.split_once(':')) {
        Some((name, server)) => {
            !name.is_empty()
                && !server.is_empty()
                && !id.contains(|c: char| c.is_whitespace() || c.is_control())
        }
        None => false,
    }
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn raw(text: &str) -> Option<RawMatrix> {
        Some(toml::from_str(text).unwrap())
    }

    #[test]
    fn a_section_needs_a_homeserver_an_id_and_one_login() {
        let env = Environment::with_home("/home/u");
        let ok = MatrixConfig::from_raw(
            raw("homeserver = \"https://m.example.org/\"\nuser = \"@bot:example.org\"\npassword = \"pw\"\nallowed_users = [\"@ann:example.org\"]"),
            &env,
        )
        .unwrap()
        .unwrap();
        assert_eq!(ok.homeserver, "https://m.example.org");
        assert_eq!(ok.device_name, "hearth");
        assert!(!ok.render().contains("\"pw\""), "{}", ok.render());
        for (text, key) in [
            ("user = \"@bot:e.org\"\npassword = \"pw\"", "homeserver"),
            (
                "homeserver = \"m.example.org\"\nuser = \"@bot:e.org\"\npassword = \"pw\"",
                "homeserver",
            ),
            (
                "homeserver = \"https://m\"\nuser = \"bot\"\npassword = \"pw\"",
                "user",
            ),
            (
                "homeserver = \"https://m\"\nuser = \"@bot:e.org\"",
                "password",
            ),
            (
                "homeserver = \"https://m\"\nuser = \"@bot:e.org\"\npassword = \"pw\"\naccess_token = \"t\"",
                "password",
            ),
            (
                "homeserver = \"https://m\"\nuser = \"@bot:e.org\"\npassword = \"pw\"\nallowed_users = [\"ann\"]",
                "allowed_users",
            ),
        ] {
            let err = MatrixConfig::from_raw(raw(text), &env)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!("channels.matrix.{key}")),
                "{text}: {err}"
            );
        }
    }
}
