//! The course items a message names: what a heartbeat's reminder is about,
//! so the same reminder in other words is known as the same one.
//!
//! An item is named by its whole title, or by the part before its first
//! `:` or ` - ` where that part is a name of its own ("Essay 1" of "Essay
//! 1: Algorithms in everyday life"), matched without case and only as whole
//! words ("Essay 1" is not in "Essay 10"). Each named item is told as a key
//! that holds its state too (due date, done), so a message about an item
//! that has since moved or been handed in is not the same message.

use chrono::{DateTime, Utc};

use super::LmsError;
use super::item::LmsItem;
use super::store::SeenStore;

/// How far the items looked at reach: due from a day ago to 90 days on, or
/// first seen in the last 14 days.
const BEHIND_DAYS: i64 = 1;
const AHEAD_DAYS: i64 = 90;
const RECENT_DAYS: i64 = 14;
const RECENT_MOST: u32 = 100;

/// The shortest lead of a title that names it alone.
const SHORTEST_LEAD: usize = 4;

/// The keys of the items of `store` that `message` names at `now`, sorted
/// and without repeats.
pub fn named_items(
    store: &SeenStore,
    message: &str,
    now: DateTime<Utc>,
) -> Result<Vec<String>, LmsError> {
    let mut items = store.upcoming(
        now - chrono::Duration::days(BEHIND_DAYS),
        now + chrono::Duration::days(AHEAD_DAYS),
    )?;
    items.extend(store.recent(now - chrono::Duration::days(RECENT_DAYS), RECENT_MOST)?);
    Ok(named_in(message, &items))
}

/// The keys of those of `items` that `message` names.
pub fn named_in(message: &str, items: &[LmsItem]) -> Vec<String> {
    let message = message.to_lowercase();
    let mut keys: Vec<String> = items
        .iter()
        .filter(|i| names(&i.title).iter().any(|n| has_words(&message, n)))
        .map(key)
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// An item and its state: source, id, due date and whether it is done.
fn key(item: &LmsItem) -> String {
    let due = item
        .due
        .map(|d| d.timestamp().to_string())
        .unwrap_or_default();
    format!(
        "{}/{}@{due}{}",
        item.source,
        item.id,
        if item.done { "+done" } else { "" }
    )
}

/// The lowercase names a title goes by: itself, and its lead.
fn names(title: &str) -> Vec<String> {
    let title = title.trim().to_lowercase();
    let mut names = Vec::new();
    let lead = [":", " - ", " – "]
        .iter()
        .filter_map(|sep| title.find(sep))
        .min()
        .map(|at| title[..at].trim().to_string());
    if let Some(lead) =
        lead.filter(|l| l.chars().count() >= SHORTEST_LEAD && l.chars().any(char::is_alphabetic))
    {
        names.push(lead);
    }
    if title.chars().any(char::is_alphanumeric) {
        names.push(title);
    }
    names
}

/// Whether `text` holds `words` with no letter or digit either side.
fn has_words(text: &str, words: &str) -> bool {
    text.match_indices(words).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + words.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ItemKind;

    fn item(id: &str, title: &str, done: bool) -> LmsItem {
        LmsItem {
            done,
            due: DateTime::from_timestamp(1_742_079_540, 0),
            ..LmsItem::new("uni", id, ItemKind::Assignment, title)
        }
    }

    #[test]
    fn a_title_is_named_whole_or_by_its_lead_as_whole_words() {
        let items = [
            item("1", "Essay 1: Algorithms in everyday life", false),
            item("10", "Essay 10: Graphs", false),
            item("2", "Quiz 2 - Sorting", true),
            item("3", "A: the letter", false),
        ];
        assert_eq!(
            named_in("Reminder: ESSAY 1 is due tonight.", &items),
            ["uni/1@1742079540"]
        );
        assert_eq!(named_in("essay 10 is due", &items), ["uni/10@1742079540"]);
        assert_eq!(
            named_in("Quiz 2 is done; essay 1 and Essay 10 are not", &items),
            [
                "uni/10@1742079540",
                "uni/1@1742079540",
                "uni/2@1742079540+done"
            ]
        );
        // A lead too short to name anything alone ("a") names nothing.
        assert!(named_in("a reminder", &items).is_empty());
        assert_eq!(named_in("a: the letter", &items), ["uni/3@1742079540"]);
        assert!(named_in("essays are due", &items).is_empty());
    }

    #[test]
    fn a_moved_or_handed_in_item_is_another_key() {
        let before = named_in("Essay 1", &[item("1", "Essay 1", false)]);
        let handed_in = named_in("Essay 1", &[item("1", "Essay 1", true)]);
        let mut moved = item("1", "Essay 1", false);
        moved.due = DateTime::from_timestamp(1_742_165_940, 0);
        assert_ne!(before, handed_in);
        assert_ne!(before, named_in("Essay 1", &[moved]));
    }
}
