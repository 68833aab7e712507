//! Tools offered by relevance. A small model with a short context reads
//! every tool's schema before each word, and the more tools it sees the
//! likelier it calls one that does not fit. Here a turn offers the tools
//! its message is about (words of the message found in a tool's name,
//! description or argument names, rare words counting more), at most a
//! handful, plus every tool the conversation has already called, in the
//! registry's order so the same set renders the same bytes. The kin of a
//! tool in use (`cron_remove` beside a called `cron_add`, an MCP server's
//! other tools) fill the handful's free places: "make it 7pm instead"
//! names no tool, yet needs the one that removes the first reminder. A
//! message that names no tool's words in a conversation that called none
//! gets no tool: a question that needs no tool is offered none.

use std::collections::BTreeSet;

use crate::chat::{ChatMessage, Role, ToolSpec};

/// How many tools a turn is offered at most, besides those in use.
pub const MOST_PICKED: usize = 4;

/// How many tools a turn is offered by relevance (0: every tool), from
/// `[agent] tools_per_turn` and the provider's context window: unset, a
/// window of 8,192 tokens or fewer gets [`MOST_PICKED`]; a provider that
/// names no window (a cloud model's is large) gets every tool.
pub fn per_turn(setting: Option<u32>, context: Option<u32>) -> usize {
    match (setting, context) {
        (Some(n), _) => n as usize,
        (None, Some(window)) if window <= 8_192 => MOST_PICKED,
        (None, _) => 0,
    }
}

/// Words that say nothing about which tool is meant.
const STOP: &[&str] = &[
    "the", "and", "for", "that", "this", "with", "what", "have", "from", "you", "your", "are",
    "was", "can", "please", "about", "into", "there", "their", "them", "then", "than", "will",
    "would", "could", "should", "its", "it's", "not", "but", "how", "who", "why", "when", "does",
    "did", "done", "any", "all", "one", "use", "give", "tell", "get", "let", "say",
];

/// The tools of `offered` a turn on `asked` gets: those `history` already
/// called, then up to `most` more by relevance, in `offered`'s order.
pub fn pick(
    offered: &[ToolSpec],
    asked: &str,
    history: &[ChatMessage],
    most: usize,
) -> Vec<ToolSpec> {
    let in_use = called(history);
    let kin: BTreeSet<&str> = in_use.iter().filter_map(|n| family(n)).collect();
    let query = words(asked);
    let docs: Vec<BTreeSet<String>> = offered.iter().map(document).collect();
    let rarity = |term: &str| {
        let holding = docs.iter().filter(|d| holds(d, term)).count();
        (1.0 + offered.len() as f64 / holding.max(1) as f64).ln()
    };
    let mut scored: Vec<(f64, usize)> = docs
        .iter()
        .enumerate()
        .filter(|(i, _)| !in_use.contains(&offered[*i].name))
        .map(|(i, doc)| {
            let words: f64 = query
                .iter()
                .filter(|t| holds(doc, t))
                .map(|t| rarity(t))
                .sum();
            let related = family(&offered[i].name).is_some_and(|f| kin.contains(f));
            (words + if related { KIN } else { 0.0 }, i)
        })
        .filter(|(score, _)| *score > 0.0)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let chosen: BTreeSet<usize> = scored.iter().take(most).map(|(_, i)| *i).collect();
    offered
        .iter()
        .enumerate()
        .filter(|(i, tool)| chosen.contains(i) || in_use.contains(&tool.name))
        .map(|(_, tool)| tool.clone())
        .collect()
}

/// The `most` tools of `offered` that take the most text, in its order:
/// the largest set a turn can be offered, for measuring the fixed prompt.
pub fn largest(offered: &[ToolSpec], most: usize) -> Vec<ToolSpec> {
    let size = |t: &ToolSpec| t.description.len() + t.parameters.to_string().len();
    let mut by_size: Vec<usize> = (0..offered.len()).collect();
    by_size.sort_by_key(|&i| std::cmp::Reverse(size(&offered[i])));
    let kept: BTreeSet<usize> = by_size.into_iter().take(most).collect();
    kept.into_iter().map(|i| offered[i].clone()).collect()
}

/// What a tool of an in-use tool's family scores besides its words: less
/// than any word of the message (at least ln 2), so kin take the places
/// the words leave free.
const KIN: f64 = 0.5;

/// The family a tool's name gives it: an MCP server's prefix (`house__`),
/// else what comes before the first `_` (`cron` of `cron_add`); a name of
/// one part has none.
fn family(name: &str) -> Option<&str> {
    name.split_once(crate::config::MCP_SEPARATOR)
        .or_else(|| name.split_once('_'))
        .map(|(f, _)| f)
        .filter(|f| !f.is_empty())
}

/// The names of the tools `history` called.
fn called(history: &[ChatMessage]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for message in history {
        names.extend(message.tool_calls.iter().map(|c| c.name.clone()));
        if message.role == Role::Tool {
            names.extend(message.name.clone());
        }
    }
    names
}

/// What a tool is about: its name's parts, its description's words and
/// its arguments' names.
fn document(tool: &ToolSpec) -> BTreeSet<String> {
    let mut text = tool.name.replace(['_', '.', '-'], " ");
    text.push(' ');
    text.push_str(&tool.description);
    if let Some(props) = tool
        .parameters
        .get("properties")
        .and_then(|p| p.as_object())
    {
        for key in props.keys() {
            text.push(' ');
            text.push_str(&key.replace(['_', '.', '-'], " "));
        }
    }
    words(&text).into_iter().collect()
}

/// Lower-case words of three letters or more, without the stop words.
fn words(text: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 3 && !STOP.contains(&w.as_str()))
        .filter(|w| seen.insert(w.clone()))
        .collect()
}

/// Whether `doc` holds `term`, or a word sharing its first five letters
/// (`remind` and `reminder`, `schedule` and `scheduled`).
fn holds(doc: &BTreeSet<String>, term: &str) -> bool {
    if doc.contains(term) {
        return true;
    }
    let stem: String = term.chars().take(5).collect();
    stem.chars().count() == 5 && doc.iter().any(|d| d.starts_with(&stem))
}

#[cfg(test)]
mod tests;
