//! `[heartbeat]`: the standing checks of `HEARTBEAT.md` in the workspace
//! of the person the LMS tells, run on the local model at their interval,
//! bounded in rounds, tokens and time.

use std::fmt::Write;
use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHeartbeat {
    pub enabled: Option<bool>,
    pub every_mins: Option<u64>,
    pub max_rounds: Option<u32>,
    pub max_tokens: Option<u32>,
    pub timeout_secs: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatConfig {
    /// Off: `HEARTBEAT.md` is never read. On by default: a workspace
    /// without the file costs nothing.
    pub enabled: bool,
    pub every: Duration,
    /// Model rounds (tool calls and the answer) one run may take.
    pub max_rounds: u32,
    /// Tokens each round may write.
    pub max_tokens: u32,
    /// The longest one run may take.
    pub timeout: Duration,
}

impl Default for HeartbeatConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            every: Duration::from_secs(3600),
            max_rounds: 4,
            max_tokens: 300,
            timeout: Duration::from_secs(180),
        }
    }
}

impl HeartbeatConfig {
    pub(super) fn from_raw(raw: Option<RawHeartbeat>) -> Result<Self, ConfigError> {
        let r = raw.unwrap_or_default();
        let d = Self::default();
        let every = r.every_mins.unwrap_or(d.every.as_secs() / 60);
        let rounds = r.max_rounds.unwrap_or(d.max_rounds);
        let tokens = r.max_tokens.unwrap_or(d.max_tokens);
        let timeout = r.timeout_secs.unwrap_or(d.timeout.as_secs());
        for (key, value, low, high) in [
            ("heartbeat.every_mins", every, 5, 10_080),
            ("heartbeat.max_rounds", u64::from(rounds), 1, 10),
            ("heartbeat.max_tokens", u64::from(tokens), 16, 4_096),
            ("heartbeat.timeout_secs", timeout, 10, 3_600),
        ] {
            if !(low..=high).contains(&value) {
                return Err(ConfigError::invalid(
                    key,
                    format!("must be between {low} and {high}"),
                ));
            }
        }
        Ok(Self {
            enabled: r.enabled.unwrap_or(d.enabled),
            every: Duration::from_secs(every * 60),
            max_rounds: rounds,
            max_tokens: tokens,
            timeout: Duration::from_secs(timeout),
        })
    }

    pub(super) fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "[heartbeat]\nenabled = {}\nevery_mins = {}\nmax_rounds = {}\nmax_tokens = {}\ntimeout_secs = {}\n",
            self.enabled,
            self.every.as_secs() / 60,
            self.max_rounds,
            self.max_tokens,
            self.timeout.as_secs()
        );
    }
}
