//! A document's pages cut into pieces a prompt can hold. A piece never
//! spans two pages, so each is cited by one page; a long page becomes
//! several pieces, cut between paragraphs where it can be, else between
//! words.

/// One piece of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Its place in the document, from 0.
    pub seq: usize,
    /// The page it is on, from 1.
    pub page: usize,
    pub text: String,
}

/// The pieces of `pages`, each at most about `size` characters.
pub fn pages(pages: &[String], size: usize) -> Vec<Chunk> {
    let size = size.max(64);
    let mut out = Vec::new();
    for (i, page) in pages.iter().enumerate() {
        let mut piece = String::new();
        for paragraph in paragraphs(page) {
            for part in split_long(&paragraph, size) {
                if !piece.is_empty() && piece.chars().count() + part.chars().count() + 1 > size {
                    push(&mut out, i + 1, std::mem::take(&mut piece));
                }
                if !piece.is_empty() {
                    piece.push('\n');
                }
                piece.push_str(&part);
            }
        }
        push(&mut out, i + 1, piece);
    }
    out
}

fn push(out: &mut Vec<Chunk>, page: usize, text: String) {
    if text.trim().is_empty() {
        return;
    }
    out.push(Chunk {
        seq: out.len(),
        page,
        text,
    });
}

/// The page's paragraphs (split at blank lines), each on one line with its
/// runs of white space made one space.
fn paragraphs(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in page.lines().chain(std::iter::once("")) {
        if line.trim().is_empty() {
            if !current.is_empty() {
                out.push(
                    current
                        .join(" ")
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" "),
                );
                current.clear();
            }
        } else {
            current.push(line);
        }
    }
    out
}

/// `paragraph` in parts of at most `size` characters, cut between words
/// (a word longer than that is cut where it must be).
fn split_long(paragraph: &str, size: usize) -> Vec<String> {
    let mut parts = Vec::new();
    let mut part = String::new();
    let mut len = 0;
    for word in paragraph.split(' ') {
        let mut word = word;
        loop {
            let wlen = word.chars().count();
            if len > 0 && len + 1 + wlen > size {
                parts.push(std::mem::take(&mut part));
                len = 0;
            }
            if wlen <= size {
                if len > 0 {
                    part.push(' ');
                    len += 1;
                }
                part.push_str(word);
                len += wlen;
                break;
            }
            let cut = word.char_indices().nth(size).map_or(word.len(), |(i, _)| i);
            parts.push(word[..cut].to_string());
            word = &word[cut..];
        }
    }
    if !part.is_empty() {
        parts.push(part);
    }
    parts
}

#[cfg(test)]
mod tests {
    #[test]
    fn pieces_keep_their_page_and_never_span_two() {
        let pages = vec![
            "Intro line one\nline two\n\nSecond paragraph".to_string(),
            String::new(),
            "The exam covers chapters 3 to 7.".to_string(),
        ];
        let chunks = super::pages(&pages, 1000);
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].page, 1);
        assert_eq!(chunks[0].text, "Intro line one line two\nSecond paragraph");
        assert_eq!(chunks[1].page, 3);
        assert_eq!(chunks[1].seq, 1);
    }

    #[test]
    fn a_long_page_is_cut_between_words_within_the_size() {
        let word = "word ".repeat(500);
        let long = format!("{word}\n\n{}", "x".repeat(300));
        let chunks = super::pages(&[long], 100);
        assert!(chunks.len() > 25, "{}", chunks.len());
        for c in &chunks {
            assert!(c.text.chars().count() <= 100, "{:?}", c.text);
            assert_eq!(c.page, 1);
        }
        let joined: String = chunks
            .iter()
            .map(|c| c.text.replace('\n', " "))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(joined.matches("word").count(), 500);
    }
}
