//! Tool output cut to a size the model can take, keeping both ends.

/// `content` cut to at most about `cap` characters, keeping the head and
/// the tail (where errors and summaries tend to be) and saying how much
/// was cut.
pub fn cap(content: &str, cap: usize) -> String {
    let total = content.chars().count();
    if total <= cap {
        return content.to_string();
    }
    let cut = total - cap;
    let head = cap * 3 / 5;
    let tail = cap - head;
    let head_text: String = content.chars().take(head).collect();
    let tail_text: String = content.chars().skip(total - tail).collect();
    format!("{head_text}\n[… {cut} characters cut …]\n{tail_text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_results_keep_head_and_tail() {
        let text: String = (0..10_000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let capped = cap(&text, 4_000);
        assert!(capped.starts_with(&text[..2_400]));
        assert!(capped.ends_with(&text[10_000 - 1_600..]));
        assert!(capped.contains("[… 6000 characters cut …]"));
        assert_eq!(cap("short", 4_000), "short");
        // Multi-byte text is cut at character boundaries.
        let emoji = "🦀".repeat(5_000);
        assert!(cap(&emoji, 100).contains("4900 characters cut"));
    }
}
