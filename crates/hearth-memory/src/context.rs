//! The memory context of one turn: recalled entries, filtered and capped.
//!
//! The rules are the reference system's (DESIGN.md): entries below the
//! minimum relevance are skipped, and so are media markers (`[IMAGE:`),
//! tool output (`<tool_result>`) and history copies (keys ending in
//! `_history`), which would only repeat what the conversation already has.
//! At most `max_entries` entries, each cut to `entry_chars`, and the whole
//! block within `total_chars`.

use super::entry::Recalled;

pub const HEADER: &str = "[Memory context]";

/// How much memory context a turn may carry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextLimits {
    pub min_relevance: f64,
    pub max_entries: usize,
    pub entry_chars: usize,
    pub total_chars: usize,
}

/// Whether an entry may go into a context at all.
fn admissible(r: &Recalled, min_relevance: f64) -> bool {
    r.score >= min_relevance
        && !r.entry.content.contains("[IMAGE:")
        && !r.entry.content.contains("<tool_result")
        && !r.entry.key.ends_with("_history")
}

/// The context block for `recalled` (best first after sorting here), or
/// `None` when nothing qualifies. Entries with the same text are shown once.
pub fn build(mut recalled: Vec<Recalled>, limits: &ContextLimits) -> Option<String> {
    recalled.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut out = String::from(HEADER);
    let mut used = out.chars().count();
    let mut shown: Vec<&str> = Vec::new();
    for r in &recalled {
        if shown.len() >= limits.max_entries {
            break;
        }
        if !admissible(r, limits.min_relevance) || shown.contains(&r.entry.content.as_str()) {
            continue;
        }
        // Memories hold what people and pages said: data, never markup.
        let content = crate::security::fence::defuse(r.entry.content.trim());
        let line = format!("\n- {}", cut(&content, limits.entry_chars));
        let len = line.chars().count();
        if used + len > limits.total_chars {
            continue;
        }
        used += len;
        out.push_str(&line);
        shown.push(&r.entry.content);
    }
    (!shown.is_empty()).then_some(out)
}

/// `text` cut to at most `max` characters, on a character boundary, with
/// `…` marking a cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Category, MemoryEntry};

    fn hit(key: &str, content: &str, score: f64) -> Recalled {
        Recalled {
            entry: MemoryEntry {
                key: key.into(),
                content: content.into(),
                category: Category::Core,
                scope: "s".into(),
                created: 0,
                updated: 0,
            },
            score,
        }
    }

    const LIMITS: ContextLimits = ContextLimits {
        min_relevance: 0.4,
        max_entries: 4,
        entry_chars: 800,
        total_chars: 4_000,
    };

    #[test]
    fn at_most_four_entries_of_800_chars_within_4000() {
        let long = "é".repeat(3_000);
        let hits: Vec<Recalled> = (0..10)
            .map(|i| hit(&format!("k{i}"), &format!("{i}{long}"), 0.9))
            .collect();
        let ctx = build(hits, &LIMITS).unwrap();
        let lines: Vec<&str> = ctx.lines().skip(1).collect();
        assert_eq!(lines.len(), 4, "{}", ctx.len());
        for l in &lines {
            // "- " plus at most 800 characters of the entry.
            assert_eq!(l.chars().count(), 2 + 800);
            assert!(l.ends_with('…'));
        }
        assert!(ctx.chars().count() <= 4_000);

        let tight = ContextLimits {
            total_chars: 2_000,
            ..LIMITS
        };
        let ctx = build(
            (0..4)
                .map(|i| hit(&format!("k{i}"), &format!("{i}{long}"), 0.9))
                .collect(),
            &tight,
        )
        .unwrap();
        assert!(ctx.chars().count() <= 2_000, "{}", ctx.chars().count());
        assert_eq!(ctx.lines().count(), 1 + 2);
    }

    #[test]
    fn skip_rules_hold() {
        let hits = vec![
            hit("weak", "relevant but weak", 0.39),
            hit("img", "photo [IMAGE:/tmp/a.png] of the cat", 0.9),
            hit("tool", "<tool_result>ls</tool_result>", 0.9),
            hit("chat_history", "an old transcript", 0.9),
            hit("good", "the cat is called Miso", 0.5),
            hit("dup", "the cat is called Miso", 0.8),
        ];
        let ctx = build(hits, &LIMITS).unwrap();
        assert_eq!(ctx, "[Memory context]\n- the cat is called Miso");
        assert!(build(vec![hit("weak", "x", 0.1)], &LIMITS).is_none());
        assert!(build(Vec::new(), &LIMITS).is_none());
    }

    #[test]
    fn best_scores_come_first() {
        let ctx = build(
            vec![
                hit("a", "low", 0.5),
                hit("b", "high", 0.95),
                hit("c", "mid", 0.7),
            ],
            &LIMITS,
        )
        .unwrap();
        assert_eq!(ctx, "[Memory context]\n- high\n- mid\n- low");
    }
}
