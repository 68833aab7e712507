//! What one memory is: a keyed text in a scope, with a category.

use std::fmt;
use std::str::FromStr;

/// Why an entry was kept. `core` holds durable facts about the user,
/// `daily` notes for the day, `conversation` auto-saved messages, and
/// `custom` anything a user or tool filed by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    Core,
    Daily,
    Conversation,
    Custom,
}

impl Category {
    pub const ALL: [Category; 4] = [
        Category::Core,
        Category::Daily,
        Category::Conversation,
        Category::Custom,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Core => "core",
            Category::Daily => "daily",
            Category::Conversation => "conversation",
            Category::Custom => "custom",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Category {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Category::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| format!("`{s}` is not one of core, daily, conversation, custom"))
    }
}

/// One stored memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryEntry {
    /// Unique within its scope; storing the same key again replaces it.
    pub key: String,
    pub content: String,
    pub category: Category,
    /// Whose memory this is: a sender, a group chat, or `local`.
    pub scope: String,
    /// Seconds since the Unix epoch.
    pub created: i64,
    pub updated: i64,
}

/// An entry found by [`super::MemoryStore::recall`], with its relevance.
#[derive(Debug, Clone, PartialEq)]
pub struct Recalled {
    pub entry: MemoryEntry,
    /// 0 (unrelated) to 1 (every query word present, strongly weighted).
    pub score: f64,
}
