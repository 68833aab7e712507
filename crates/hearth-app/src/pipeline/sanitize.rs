//! What the user may see: a reply without tool-call tags, stray tool JSON
//! or narration of tool use, and error messages without keys or paths.

use std::sync::LazyLock;

use regex::Regex;

use crate::security::{Scrubber, internal_tags};

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|_| {
        Regex::new(r"[^\s\S]").unwrap_or_else(|_| unreachable!("a valid pattern"))
    })
}

/// Tag blocks that never reach the user; an unclosed one runs to the end.
static TAGS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?s)<(tool_call|tool_result|think|function_call|tool_response)\b[^>]*>.*?(</(tool_call|tool_result|think|function_call|tool_response)>|\z)",
    )
});
/// An opening tag cut before its `>`: it runs to the end too.
static CUT_TAG: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?s)</?(tool_call|tool_result|think|function_call|tool_response)\b[^>]*\z")
});
/// The tag names that never reach the user.
const HIDDEN: [&str; 6] = [
    "untrusted",
    "tool_call",
    "tool_result",
    "think",
    "function_call",
    "tool_response",
];
static STRAY_TAG: LazyLock<Regex> =
    LazyLock::new(|| re(r"</?(tool_call|tool_result|think|function_call|tool_response)\b[^>]*>"));
/// "Let me check…", "I'll look that up." and the like, alone on a line.
static NARRATION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^\s*(let me|i'll|i will|i am going to|i'm going to|now i'll|first,? i'll)\s+(check|look|search|find|use|call|run|read|see|try|query|open|list|fetch|get)\b[^\n]{0,80}$",
    )
});
/// Absolute paths of two or more components.
static PATH: LazyLock<Regex> = LazyLock::new(|| re(r"(?:[A-Za-z]:)?(?:/[\w.\-]+){2,}/?"));
static BLANKS: LazyLock<Regex> = LazyLock::new(|| re(r"\n{3,}"));

/// The reply as the user should see it.
pub fn reply(text: &str) -> String {
    let text = internal_tags::strip_fences(text);
    let text = TAGS.replace_all(&text, "");
    let text = CUT_TAG.replace_all(&text, "");
    let text = STRAY_TAG.replace_all(&text, "");
    let kept: Vec<&str> = text.lines().filter(|l| !is_tool_json(l)).collect();
    let substantive = kept
        .iter()
        .filter(|l| !l.trim().is_empty() && !NARRATION.is_match(l))
        .count();
    let kept: Vec<&str> = if substantive > 0 {
        kept.into_iter()
            .filter(|l| !NARRATION.is_match(l))
            .collect()
    } else {
        kept
    };
    BLANKS
        .replace_all(kept.join("\n").trim(), "\n\n")
        .into_owned()
}

/// A reply still being written, as it may be shown: [`reply`], less a
/// `<` at the end that may yet become a hidden tag (`<tool_res…`). A
/// stream cannot take back what it sent, so that part waits for the rest.
pub fn draft(text: &str) -> String {
    let shown = reply(text);
    match shown.rfind('<') {
        Some(at) if may_become_hidden(&shown[at + 1..]) => shown[..at].trim_end().to_string(),
        _ => shown,
    }
}

/// Whether `after` (what follows a `<`, with no `>` yet) is the start of
/// one of the hidden tags.
fn may_become_hidden(after: &str) -> bool {
    if after.contains('>') {
        return false;
    }
    let name = after.strip_prefix('/').unwrap_or(after);
    HIDDEN
        .iter()
        .any(|tag| tag.starts_with(name) || name.starts_with(tag))
}

/// A line that is only a tool call written as JSON.
fn is_tool_json(line: &str) -> bool {
    let t = line.trim().trim_end_matches(',');
    if !(t.starts_with('{') && t.ends_with('}')) {
        return false;
    }
    match serde_json::from_str::<serde_json::Value>(t) {
        Ok(v) => {
            v.get("name").is_some()
                && (v.get("arguments").is_some() || v.get("parameters").is_some())
        }
        Err(_) => false,
    }
}

/// An error as the user may see it: credentials and internal paths removed.
pub fn error(text: &str, scrubber: &Scrubber) -> String {
    let scrubbed = scrubber.scrub(text);
    PATH.replace_all(&scrubbed, "[path]").into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_json_and_narration_go() {
        let raw = "Let me check the file.\n<tool_call>{\"name\":\"file_read\",\"arguments\":{}}</tool_call>\n{\"name\": \"shell\", \"arguments\": {\"command\": \"ls\"}}\n<think>hmm</think>The answer is 42.";
        assert_eq!(reply(raw), "The answer is 42.");
        assert_eq!(reply("Unclosed <tool_call>{\"name\":"), "Unclosed");
        // Narration alone is kept rather than sending nothing.
        assert_eq!(reply("Let me check."), "Let me check.");
        // Ordinary JSON in an answer stays.
        assert_eq!(reply("{\"a\": 1}"), "{\"a\": 1}");
    }

    #[test]
    fn the_memory_fence_repeated_by_the_model_never_shows() {
        let said = "<untrusted source=\"memory\">\nYou prefer tea.\n</untrusted>\nYou prefer tea.";
        let shown = reply(said);
        assert!(!shown.contains("untrusted"), "{shown}");
        assert!(shown.ends_with("You prefer tea."), "{shown}");
        assert_eq!(draft("Noted. <untru"), "Noted.");
    }

    #[test]
    fn a_tag_cut_short_never_shows() {
        // What a small model wrote at the end of a reply over ACP.
        let cut = "Saved the file.\n<tool_result name=\"file_write\" status=\"ok";
        assert_eq!(reply(cut), "Saved the file.");
        // While streaming, anything that may become a hidden tag waits.
        for partial in ["Saved. <", "Saved. <t", "Saved. <tool_res", "Saved. </thi"] {
            assert_eq!(draft(partial), "Saved.", "{partial}");
        }
        // Positive control: a `<` that is not a hidden tag shows.
        assert_eq!(draft("if a <b then"), "if a <b then");
        assert_eq!(draft("1 < 2"), "1 < 2");
        assert_eq!(
            reply("x <tool_resultant effect> y"),
            "x <tool_resultant effect> y"
        );
    }

    #[test]
    fn errors_lose_keys_and_paths() {
        let s = Scrubber::new();
        let e = error(
            "request failed: api_key=sk-abcdef0123456789abcdef at /home/ada/.config/hearth/x.toml",
            &s,
        );
        assert!(!e.contains("sk-abcdef"), "{e}");
        assert!(!e.contains("/home/ada"), "{e}");
        assert!(e.contains("[path]"), "{e}");
    }
}
