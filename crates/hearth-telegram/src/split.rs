//! Long replies cut into messages Telegram accepts: at most 4,096 UTF-16
//! units each, cut at a paragraph break, else a line break, else a space,
//! and only as a last resort inside a word.

/// Telegram's limit on one message's text, in UTF-16 code units.
pub const MAX_MESSAGE_UTF16: usize = 4096;

pub fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// The parts of `text`, in order, none longer than `max` UTF-16 units and
/// none empty. Joined back with the boundaries they were cut at, they give
/// the text again (less the whitespace at the cuts).
pub fn split_message(text: &str, max: usize) -> Vec<String> {
    let max = max.max(2);
    let mut parts = Vec::new();
    let mut rest = text.trim_matches('\n');
    while utf16_len(rest) > max {
        let limit = byte_limit(rest, max);
        let window = &rest[..limit];
        let floor = limit / 4;
        let (end, next) = window
            .rfind("\n\n")
            .filter(|&i| i > floor)
            .map(|i| (i, i + 2))
            .or_else(|| {
                window
                    .rfind('\n')
                    .filter(|&i| i > floor)
                    .map(|i| (i, i + 1))
            })
            .or_else(|| {
                window
                    .char_indices()
                    .rev()
                    .find(|&(i, c)| i > 0 && c.is_whitespace())
                    .map(|(i, c)| (i, i + c.len_utf8()))
            })
            .unwrap_or((limit, limit));
        let head = rest[..end].trim_end();
        if !head.is_empty() {
            parts.push(head.to_string());
        }
        rest = rest[next..].trim_start_matches('\n');
    }
    if !rest.trim().is_empty() {
        parts.push(rest.to_string());
    }
    parts
}

/// The longest prefix of `s` (a byte index on a char boundary) within `max` units.
fn byte_limit(s: &str, max: usize) -> usize {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > max {
            return i;
        }
    }
    s.len()
}

/// `text` cut to at most `max` units, with `…` when something was cut (drafts).
pub fn truncate(text: &str, max: usize) -> String {
    if utf16_len(text) <= max {
        return text.to_string();
    }
    let mut out = text[..byte_limit(text, max.saturating_sub(1))].to_string();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_part() {
        assert_eq!(split_message("hello", 4096), ["hello"]);
        assert!(split_message("\n\n", 4096).is_empty());
    }

    #[test]
    fn paragraphs_come_before_lines_and_lines_before_words() {
        let text = "aaaa bbbb\ncccc\n\ndddd eeee";
        assert_eq!(split_message(text, 16), ["aaaa bbbb\ncccc", "dddd eeee"]);
        assert_eq!(
            split_message("aaaa bbbb\ncccc dddd", 12),
            ["aaaa bbbb", "cccc dddd"]
        );
        assert_eq!(split_message("aaaa bbbb cccc", 10), ["aaaa bbbb", "cccc"]);
        assert_eq!(split_message("abcdefghij", 4), ["abcd", "efgh", "ij"]);
    }

    #[test]
    fn limits_count_utf16_units_and_never_cut_a_character() {
        // Each emoji is two UTF-16 units.
        let text = "😀".repeat(5000);
        let parts = split_message(&text, MAX_MESSAGE_UTF16);
        assert!(parts.iter().all(|p| utf16_len(p) <= MAX_MESSAGE_UTF16));
        assert_eq!(parts.concat(), text);
        assert_eq!(parts.len(), 3);
    }

    #[test]
    fn truncation_marks_the_cut() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
