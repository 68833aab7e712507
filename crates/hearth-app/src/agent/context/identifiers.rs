//! Identifiers a summary must keep verbatim: UUIDs, URLs, paths, hashes and
//! numbers. A model's summary loses them easily; [`identifiers`] finds them
//! so the summary can be checked and completed.

use regex::Regex;

/// Compiled per use: compression is rare, and this keeps no global state.
fn pattern() -> Regex {
    Regex::new(concat!(
        r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", // UUID
        r"|\bhttps?://[^\s<>()\[\]{}'`]+",                                       // URL
        r"|(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]+",                                // path
        r"|\b[\w-]+\.(?:rs|py|js|ts|md|txt|toml|json|yaml|yml|csv|log|sh|html|pdf|docx?)\b", // file name
        r"|\b[0-9a-f]{7,64}\b",                                                              // hash
        r"|\b\d[\d.,:/-]*\d\b", // number, date, time
    ))
    .expect("the identifier pattern is valid")
}

/// The identifiers in `text`, in order of first appearance, without
/// duplicates; trailing punctuation is not part of them.
pub fn identifiers(text: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let pattern = pattern();
    for m in pattern.find_iter(text) {
        let id = m.as_str().trim_end_matches(['.', ',', ':', ';', '!', '?']);
        // A lone short number carries no identity ("2", "10").
        if id.len() < 2 || seen.iter().any(|s| s == id) {
            continue;
        }
        seen.push(id.to_string());
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_kind_once() {
        let text = "Deploy 3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b from https://git.example.org/app.git \
                    (commit 9fceb02d0ae598e95dc970b74767f19372d61af8) into /srv/app/releases, \
                    then edit notes.md; port 8080 on 2026-11-22. Again: port 8080.";
        let ids = identifiers(text);
        assert_eq!(
            ids,
            [
                "3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b",
                "https://git.example.org/app.git",
                "9fceb02d0ae598e95dc970b74767f19372d61af8",
                "/srv/app/releases",
                "notes.md",
                "8080",
                "2026-11-22",
            ]
        );
    }

    #[test]
    fn plain_prose_has_none() {
        assert!(identifiers("Hello there, how are you today?").is_empty());
    }
}
