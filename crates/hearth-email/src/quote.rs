//! A reply's new words: what a mail client quotes of the thread below
//! (`> ` lines, "On … wrote:" and what follows, a forwarded original) and
//! the signature are taken out, so a long thread costs the model only the
//! message it is asked about.

/// `text` without the quoted thread and the signature.
pub fn new_words(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut kept: Vec<&str> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim();
        if line.trim_end() == "--" {
            break;
        }
        if is_original_marker(trimmed) || is_attribution(trimmed, lines.get(i + 1).copied()) {
            break;
        }
        if trimmed.starts_with('>') {
            continue;
        }
        kept.push(line.trim_end());
    }
    while kept.last().is_some_and(|l| l.is_empty()) {
        kept.pop();
    }
    let start = kept.iter().take_while(|l| l.is_empty()).count();
    kept[start..].join("\n")
}

fn is_original_marker(line: &str) -> bool {
    let l = line.to_ascii_lowercase();
    l.starts_with("-----original message-----")
        || l.starts_with("---------- forwarded message")
        || l.starts_with("-------- original message")
}

/// "On Mon, 1 Dec 2026, Ann <ann@x> wrote:", on one line or wrapped onto
/// the next, followed by quoted lines.
fn is_attribution(line: &str, next: Option<&str>) -> bool {
    if !line.starts_with("On ") {
        return false;
    }
    let ends = |l: &str| l.trim_end().ends_with("wrote:");
    ends(line) || next.is_some_and(|n| ends(n) && !n.trim_start().starts_with('>'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thread_below_and_the_signature_are_taken_out() {
        let mail = "Yes, Thursday works.\n\nAnd bring the notes.\n\n-- \nAnn\n\nOn Tue, 1 Dec 2026 at 10:00, hearth <bot@home.test> wrote:\n> When shall we meet?\n> On Mon, Bob wrote:\n>> old\n";
        assert_eq!(
            new_words(mail),
            "Yes, Thursday works.\n\nAnd bring the notes."
        );
        let wrapped =
            "ok\nOn Tue, 1 Dec 2026 at 10:00, a very long name\n<bot@home.test> wrote:\n> q\n";
        assert_eq!(new_words(wrapped), "ok");
        let outlook = "Sure.\r\n-----Original Message-----\r\nFrom: bot\r\nWhen?\r\n";
        assert_eq!(new_words(outlook), "Sure.");
        let interleaved = "> first question\nfirst answer\n> second\nsecond answer\n";
        assert_eq!(new_words(interleaved), "first answer\nsecond answer");
    }

    #[test]
    fn words_that_only_look_like_a_thread_stay() {
        let text = "On Monday I wrote a poem.\nIt begins: roses\n";
        assert_eq!(
            new_words(text),
            "On Monday I wrote a poem.\nIt begins: roses"
        );
        assert_eq!(
            new_words("a -- b\n--not a signature"),
            "a -- b\n--not a signature"
        );
    }
}
