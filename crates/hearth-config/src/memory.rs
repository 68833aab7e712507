//! `[memory]`: what hearth remembers, and how much of it a turn sees.

use std::fmt::Write;

use serde::Deserialize;

use super::ConfigError;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMemory {
    pub enabled: Option<bool>,
    pub auto_save: Option<bool>,
    pub auto_save_min_chars: Option<usize>,
    pub consolidate: Option<bool>,
    pub consolidate_max_tokens: Option<u32>,
    pub min_relevance: Option<f64>,
    pub recall_limit: Option<usize>,
    pub context_entries: Option<usize>,
    pub context_entry_chars: Option<usize>,
    pub context_chars: Option<usize>,
    pub embedding_model: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MemoryConfig {
    /// Off: no recall, no saving, no memory tools.
    pub enabled: bool,
    /// Keep user messages of at least `auto_save_min_chars` characters.
    pub auto_save: bool,
    pub auto_save_min_chars: usize,
    /// After each turn, extract durable facts the user stated (background).
    pub consolidate: bool,
    /// The longest consolidation answer, in tokens.
    pub consolidate_max_tokens: u32,
    /// Recalled entries scoring below this (0..1) are left out of a turn.
    pub min_relevance: f64,
    /// Entries recalled per scope before filtering.
    pub recall_limit: usize,
    pub context_entries: usize,
    pub context_entry_chars: usize,
    pub context_chars: usize,
    /// The sentence-embedding model that finds memories by meaning: a GGUF
    /// path or a file name in the models folders; `None` looks for the
    /// catalogue's default beside the chat model; `"off"` keeps keywords
    /// only.
    pub embedding_model: Option<String>,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            auto_save: true,
            auto_save_min_chars: 20,
            consolidate: true,
            consolidate_max_tokens: 256,
            min_relevance: 0.4,
            recall_limit: 5,
            context_entries: 4,
            context_entry_chars: 800,
            context_chars: 4_000,
            embedding_model: None,
        }
    }
}

impl MemoryConfig {
    pub(super) fn from_raw(raw: Option<RawMemory>) -> Result<Self, ConfigError> {
        let r = raw.unwrap_or_default();
        let d = Self::default();
        let c = Self {
            enabled: r.enabled.unwrap_or(d.enabled),
            auto_save: r.auto_save.unwrap_or(d.auto_save),
            auto_save_min_chars: r.auto_save_min_chars.unwrap_or(d.auto_save_min_chars),
            consolidate: r.consolidate.unwrap_or(d.consolidate),
            consolidate_max_tokens: r.consolidate_max_tokens.unwrap_or(d.consolidate_max_tokens),
            min_relevance: r.min_relevance.unwrap_or(d.min_relevance),
            recall_limit: r.recall_limit.unwrap_or(d.recall_limit),
            context_entries: r.context_entries.unwrap_or(d.context_entries),
            context_entry_chars: r.context_entry_chars.unwrap_or(d.context_entry_chars),
            context_chars: r.context_chars.unwrap_or(d.context_chars),
            embedding_model: r
                .embedding_model
                .map(|m| m.trim().to_string())
                .or(d.embedding_model),
        };
        if c.embedding_model.as_deref() == Some("") {
            return Err(ConfigError::invalid(
                "memory.embedding_model",
                "is empty; name a GGUF file, or \"off\" for keywords only",
            ));
        }
        if !(c.min_relevance.is_finite() && (0.0..=1.0).contains(&c.min_relevance)) {
            return Err(ConfigError::invalid(
                "memory.min_relevance",
                format!("{} is outside 0..=1", c.min_relevance),
            ));
        }
        if !(16..=4096).contains(&c.consolidate_max_tokens) {
            return Err(ConfigError::invalid(
                "memory.consolidate_max_tokens",
                "must be between 16 and 4096",
            ));
        }
        if !(1..=50).contains(&c.recall_limit) {
            return Err(ConfigError::invalid(
                "memory.recall_limit",
                "must be between 1 and 50",
            ));
        }
        if c.context_entries > 50 {
            return Err(ConfigError::invalid(
                "memory.context_entries",
                "must be at most 50 (0 turns the memory context off)",
            ));
        }
        if c.context_entry_chars < 20 {
            return Err(ConfigError::invalid(
                "memory.context_entry_chars",
                "must be at least 20",
            ));
        }
        if c.context_chars < c.context_entry_chars {
            return Err(ConfigError::invalid(
                "memory.context_chars",
                "must be at least `context_entry_chars`",
            ));
        }
        Ok(c)
    }

    pub(super) fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "[memory]\nenabled = {}\nauto_save = {}\nauto_save_min_chars = {}\nconsolidate = {}\nconsolidate_max_tokens = {}\nmin_relevance = {}\nrecall_limit = {}\ncontext_entries = {}\ncontext_entry_chars = {}\ncontext_chars = {}",
            self.enabled,
            self.auto_save,
            self.auto_save_min_chars,
            self.consolidate,
            self.consolidate_max_tokens,
            self.min_relevance,
            self.recall_limit,
            self.context_entries,
            self.context_entry_chars,
            self.context_chars
        );
        match &self.embedding_model {
            Some(m) => {
                let _ = writeln!(out, "embedding_model = {}\n", super::render::quote(m));
            }
            None => out.push_str("# embedding_model: the catalogue's, where downloaded\n\n"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_values_are_named() {
        let bad = |raw: RawMemory| MemoryConfig::from_raw(Some(raw)).unwrap_err().to_string();
        assert!(
            bad(RawMemory {
                min_relevance: Some(1.5),
                ..RawMemory::default()
            })
            .contains("memory.min_relevance")
        );
        assert!(
            bad(RawMemory {
                context_chars: Some(100),
                ..RawMemory::default()
            })
            .contains("memory.context_chars")
        );
        assert_eq!(
            MemoryConfig::from_raw(None).unwrap(),
            MemoryConfig::default()
        );
    }
}
