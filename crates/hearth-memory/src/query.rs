//! User text → a safe FTS5 query, and the words relevance is measured on.
//!
//! FTS5 has its own query language (`"phrases"`, `AND`/`OR`/`NOT`, `NEAR`,
//! `col:`, `*`, `^`, parentheses): raw user text in a `MATCH` fails on a
//! stray quote or a trailing `-`. So text is never passed through: it is cut
//! into words of letters and digits, each word is quoted, and the words are
//! joined with `OR`. No input can make the query fail.

use std::collections::BTreeSet;

/// Words too common to say anything about relevance (English).
const STOP_WORDS: &[&str] = &[
    "a", "about", "am", "an", "and", "are", "as", "at", "be", "but", "by", "can", "could", "did",
    "do", "does", "for", "from", "had", "has", "have", "how", "i", "if", "in", "is", "it", "its",
    "me", "my", "of", "on", "or", "our", "please", "s", "so", "t", "that", "the", "their", "them",
    "then", "there", "these", "they", "this", "to", "was", "we", "were", "what", "when", "where",
    "which", "who", "why", "will", "with", "would", "you", "your", "user", "users",
];

/// The lower-cased words of `text` (runs of letters and digits).
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The distinct words of `text` that carry meaning: stop words are dropped
/// unless nothing else is left.
pub fn terms(text: &str) -> BTreeSet<String> {
    let all: BTreeSet<String> = words(text).into_iter().collect();
    let meaningful: BTreeSet<String> = all
        .iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .cloned()
        .collect();
    if meaningful.is_empty() {
        all
    } else {
        meaningful
    }
}

/// The FTS5 `MATCH` expression for `terms`, or `None` when there is
/// nothing to search for.
pub fn fts_expression(terms: &BTreeSet<String>) -> Option<String> {
    if terms.is_empty() {
        return None;
    }
    // A term holds only letters and digits, so quoting it is always valid.
    Some(
        terms
            .iter()
            .map(|t| format!("\"{t}\""))
            .collect::<Vec<_>>()
            .join(" OR "),
    )
}

/// The share of `terms` found among the words of `content`, 0..=1.
pub fn coverage(terms: &BTreeSet<String>, content: &str) -> f64 {
    if terms.is_empty() {
        return 0.0;
    }
    let present: BTreeSet<String> = words(content).into_iter().collect();
    let found = terms.iter().filter(|t| present.contains(*t)).count();
    found as f64 / terms.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_and_quotes_become_plain_words() {
        let t = terms(r#"he said "NOT" (x OR y*) -z col:^w NEAR"#);
        let e = fts_expression(&t).unwrap();
        assert!(!e.contains('('), "{e}");
        assert!(!e.contains('*'), "{e}");
        assert!(e.contains("\"not\""), "{e}");
        assert!(e.contains("\"near\""), "{e}");
    }

    #[test]
    fn stop_words_drop_unless_nothing_else_is_left() {
        assert_eq!(
            terms("What is my favourite colour?"),
            BTreeSet::from(["colour".to_string(), "favourite".to_string()])
        );
        assert_eq!(terms("who are you").len(), 3);
        assert!(fts_expression(&terms("?!  ---")).is_none());
    }

    #[test]
    fn coverage_counts_distinct_terms() {
        let t = terms("favourite colour");
        assert_eq!(coverage(&t, "My favourite colour is green"), 1.0);
        assert_eq!(coverage(&t, "My favourite food is rice"), 0.5);
        assert_eq!(coverage(&t, "nothing"), 0.0);
    }
}
