//! What a file is, told by its first bytes: a name says only what its
//! sender claims (`report.pdf` may be a program).

/// A kind of document hearth reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Pdf,
    /// A zip; a Word document if it holds `word/document.xml` (told inside).
    Docx,
    Html,
    /// Plain text and Markdown.
    Text,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Pdf => "PDF",
            Self::Docx => "Word document",
            Self::Html => "web page",
            Self::Text => "text",
        }
    }

    /// The word the inside reader is told (`hearth extract-document KIND`).
    pub fn arg(self) -> &'static str {
        match self {
            Self::Pdf => "pdf",
            Self::Docx => "docx",
            Self::Html => "html",
            Self::Text => "text",
        }
    }

    pub fn from_arg(arg: &str) -> Option<Self> {
        Some(match arg {
            "pdf" => Self::Pdf,
            "docx" => Self::Docx,
            "html" => Self::Html,
            "text" => Self::Text,
            _ => return None,
        })
    }

    /// The kind of `bytes`, or what they look like instead, in words.
    pub fn sniff(bytes: &[u8], name: &str) -> Result<Self, String> {
        let head = &bytes[..bytes.len().min(1024)];
        if find(head, b"%PDF-").is_some() {
            return Ok(Self::Pdf);
        }
        if head.starts_with(b"PK\x03\x04") {
            return Ok(Self::Docx);
        }
        if let Some(what) = not_a_document(head) {
            return Err(what.to_string());
        }
        let sample = &bytes[..bytes.len().min(8192)];
        if sample.contains(&0) || !mostly_text(sample) {
            return Err("binary data, not text".to_string());
        }
        let lower = String::from_utf8_lossy(&sample[..sample.len().min(512)]).to_ascii_lowercase();
        let start = lower.trim_start_matches('\u{feff}').trim_start();
        let by_name = name.to_ascii_lowercase();
        if start.starts_with("<!doctype html")
            || start.starts_with("<html")
            || ((by_name.ends_with(".html") || by_name.ends_with(".htm")) && start.starts_with('<'))
        {
            return Ok(Self::Html);
        }
        Ok(Self::Text)
    }
}

/// Formats hearth does not read as documents, known by their magic numbers.
fn not_a_document(head: &[u8]) -> Option<&'static str> {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x7fELF", "a program (ELF)"),
        (b"MZ", "a Windows program"),
        (b"\x89PNG", "a PNG picture"),
        (b"\xff\xd8\xff", "a JPEG picture"),
        (b"GIF8", "a GIF picture"),
        (b"\x1f\x8b", "a gzip archive"),
        (b"BZh", "a bzip2 archive"),
        (b"\xfd7zXZ", "an xz archive"),
        (b"7z\xbc\xaf", "a 7-Zip archive"),
        (b"Rar!", "a RAR archive"),
        (b"OggS", "a sound recording (Ogg)"),
        (b"ID3", "a sound recording (MP3)"),
        (
            b"\xd0\xcf\x11\xe0",
            "an old Office file (.doc, .xls), which hearth does not read; save it as .docx or PDF",
        ),
    ];
    MAGIC
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map(|(_, what)| *what)
}

/// Whether `sample` reads as UTF-8 text (a cut last character allowed) with
/// few control characters.
fn mostly_text(sample: &[u8]) -> bool {
    let text = match std::str::from_utf8(sample) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => {
            // Cut inside a character at the sample's end.
            std::str::from_utf8(&sample[..e.valid_up_to()]).unwrap_or("")
        }
        Err(_) => return false,
    };
    let control = text
        .chars()
        .filter(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\u{c}'))
        .count();
    control * 100 <= text.chars().count().max(1)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_decide_not_the_name() {
        assert_eq!(Kind::sniff(b"%PDF-1.7\n...", "notes.txt"), Ok(Kind::Pdf));
        assert_eq!(Kind::sniff(b"PK\x03\x04rest", "a.pdf"), Ok(Kind::Docx));
        assert_eq!(Kind::sniff(b"<!DOCTYPE html><p>hi", "page"), Ok(Kind::Html));
        assert_eq!(Kind::sniff(b"<p>hi</p>", "page.html"), Ok(Kind::Html));
        assert_eq!(
            Kind::sniff(b"# Syllabus\nLate work", "s.md"),
            Ok(Kind::Text)
        );
        let program = Kind::sniff(b"\x7fELF\x02\x01\x01\0\0\0", "report.pdf");
        assert_eq!(program, Err("a program (ELF)".to_string()));
        assert!(Kind::sniff(&[0xff, 0xfe, 0, 0, 1, 2, 3], "x.txt").is_err());
    }

    #[test]
    fn text_cut_inside_a_character_is_still_text() {
        let mut bytes = "é".repeat(5000).into_bytes();
        bytes.truncate(8191);
        assert_eq!(Kind::sniff(&bytes, "x"), Ok(Kind::Text));
    }
}
