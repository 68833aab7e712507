//! `[retention]`: how much of each store hearth keeps, so that years on a
//! home server stay within a known size. The KV caches' own caps are in
//! `[engine]` (`ram_cache_mb`, `disk_cache_mb`).

use std::fmt::Write;

use serde::Deserialize;

use super::ConfigError;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRetention {
    pub history_messages: Option<u32>,
    pub history_days: Option<u32>,
    pub memory_entries: Option<u32>,
    pub inbox_days: Option<u32>,
    pub lms_days: Option<u32>,
    pub documents_mb: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionConfig {
    /// Messages kept per conversation: the newest, and all that is read
    /// back into a turn.
    pub history_messages: u32,
    /// A conversation nobody wrote to for this many days is forgotten;
    /// 0: never.
    pub history_days: u32,
    /// Entries the memory keeps; past it, those saved from conversations
    /// go first, the least recently updated first, and core facts last.
    pub memory_entries: u32,
    /// Days a finished inbox record (answered, failed, cancelled) is kept
    /// to recognise a message delivered twice.
    pub inbox_days: u32,
    /// Days the LMS store keeps an item gone from its site, and a
    /// reminder for a date past.
    pub lms_days: u32,
    /// Megabytes of text the documents people sent may hold, all together;
    /// past it the oldest documents are forgotten first.
    pub documents_mb: u32,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self {
            history_messages: 50,
            history_days: 365,
            memory_entries: 10_000,
            inbox_days: 30,
            lms_days: 180,
            documents_mb: 200,
        }
    }
}

impl RetentionConfig {
    pub(super) fn from_raw(raw: Option<RawRetention>) -> Result<Self, ConfigError> {
        let r = raw.unwrap_or_default();
        let d = Self::default();
        let c = Self {
            history_messages: r.history_messages.unwrap_or(d.history_messages),
            history_days: r.history_days.unwrap_or(d.history_days),
            memory_entries: r.memory_entries.unwrap_or(d.memory_entries),
            inbox_days: r.inbox_days.unwrap_or(d.inbox_days),
            lms_days: r.lms_days.unwrap_or(d.lms_days),
            documents_mb: r.documents_mb.unwrap_or(d.documents_mb),
        };
        for (key, value, low, high) in [
            ("retention.history_messages", c.history_messages, 2, 10_000),
            ("retention.history_days", c.history_days, 0, 36_500),
            ("retention.memory_entries", c.memory_entries, 10, 1_000_000),
            ("retention.inbox_days", c.inbox_days, 1, 3_650),
            ("retention.lms_days", c.lms_days, 1, 3_650),
            ("retention.documents_mb", c.documents_mb, 1, 100_000),
        ] {
            if !(low..=high).contains(&value) {
                return Err(ConfigError::invalid(
                    key,
                    format!("must be between {low} and {high}"),
                ));
            }
        }
        Ok(c)
    }

    pub(super) fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "[retention]\nhistory_messages = {}\nhistory_days = {}\nmemory_entries = {}\ninbox_days = {}\nlms_days = {}\ndocuments_mb = {}\n",
            self.history_messages,
            self.history_days,
            self.memory_entries,
            self.inbox_days,
            self.lms_days,
            self.documents_mb
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_checked_and_unset_keys_keep_defaults() {
        let c = RetentionConfig::from_raw(Some(RawRetention {
            history_days: Some(0),
            ..RawRetention::default()
        }))
        .unwrap();
        assert_eq!(c.history_days, 0);
        assert_eq!(c.memory_entries, RetentionConfig::default().memory_entries);
        for bad in [
            RawRetention {
                history_messages: Some(1),
                ..RawRetention::default()
            },
            RawRetention {
                memory_entries: Some(0),
                ..RawRetention::default()
            },
            RawRetention {
                inbox_days: Some(0),
                ..RawRetention::default()
            },
        ] {
            let e = RetentionConfig::from_raw(Some(bad))
                .unwrap_err()
                .to_string();
            assert!(e.contains("retention."), "{e}");
        }
    }
}
