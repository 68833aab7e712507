//! What runs inside the cage (`hearth extract-document KIND FILE`): a Word
//! document, a web page or a text file made into plain text, its pages
//! separated by form feeds (`\f`, as `pdftotext` writes them), on stdout.
//!
//! It is only ever started by [`crate::cage`], in hearth's OS sandbox with
//! its limits, so a hostile file can at worst crash or stall this process.
//! It still reads defensively: at most [`MAX_XML_BYTES`] of a document's XML
//! are inflated (a zip bomb stops there), and the text stops at the
//! character cap it is given.

use std::io::Read;

use quick_xml::Reader;
use quick_xml::events::Event;

use super::Kind;

/// The most of `word/document.xml` that is inflated.
pub const MAX_XML_BYTES: u64 = 64 << 20;

/// Why a file could not be read (said to the person who sent it).
#[derive(Debug, thiserror::Error)]
pub enum InsideError {
    #[error("it is not a Word document: {0}")]
    NotDocx(String),
    #[error("its text is damaged: {0}")]
    Damaged(String),
    #[error("the text inside is over {} MB unpacked (a zip bomb?)", MAX_XML_BYTES >> 20)]
    TooBig,
}

/// The text of `bytes` read as `kind`, pages separated by `\f`, cut at
/// `max_chars` characters. PDF is not read here (poppler's `pdftotext` is).
pub fn read(kind: Kind, bytes: &[u8], max_chars: usize) -> Result<String, InsideError> {
    let text = match kind {
        Kind::Docx => docx(bytes)?,
        Kind::Html => html(&String::from_utf8_lossy(bytes)),
        Kind::Text | Kind::Pdf => String::from_utf8_lossy(bytes).into_owned(),
    };
    Ok(text.chars().take(max_chars).collect())
}

/// The paragraphs of a Word document, a `\f` where it breaks a page
/// (`<w:br w:type="page"/>`, a paragraph set to start a page, or where Word
/// last laid a page break: `<w:lastRenderedPageBreak/>`).
fn docx(bytes: &[u8]) -> Result<String, InsideError> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| InsideError::NotDocx(e.to_string()))?;
    let entry = archive
        .by_name("word/document.xml")
        .map_err(|_| InsideError::NotDocx("a zip without word/document.xml".into()))?;
    let mut xml = Vec::new();
    entry
        .take(MAX_XML_BYTES + 1)
        .read_to_end(&mut xml)
        .map_err(|e| InsideError::Damaged(e.to_string()))?;
    if xml.len() as u64 > MAX_XML_BYTES {
        return Err(InsideError::TooBig);
    }
    word_text(&xml)
}

/// The text of `word/document.xml`.
fn word_text(xml: &[u8]) -> Result<String, InsideError> {
    let mut reader = Reader::from_reader(xml);
    let mut out = String::new();
    let mut in_text = false;
    let mut buf = Vec::new();
    loop {
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| InsideError::Damaged(e.to_string()))?;
        match event {
            Event::Start(e) if e.local_name().into_inner() == "t" => in_text = true,
            Event::End(e) if e.local_name().into_inner() == "t" => in_text = false,
            Event::End(e) if e.local_name().into_inner() == "p" => out.push('\n'),
            Event::Empty(e) | Event::Start(e) => match e.local_name().into_inner() {
                "tab" => out.push('\t'),
                "br" | "cr" => {
                    let page = e
                        .attributes()
                        .flatten()
                        .any(|a| a.key.local_name().into_inner() == "type" && &*a.value == "page");
                    out.push(if page { '\u{c}' } else { '\n' });
                }
                "lastRenderedPageBreak" | "pageBreakBefore" => out.push('\u{c}'),
                _ => {}
            },
            Event::Text(t) if in_text => out.push_str(&t),
            Event::GeneralRef(r) if in_text => out.push_str(&entity(&r).unwrap_or_default()),
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    Ok(out)
}

/// The visible text of a web page: tags dropped, scripts and styles left
/// out, block elements on lines of their own, entities decoded.
fn html(page: &str) -> String {
    let mut out = String::with_capacity(page.len() / 2);
    let mut rest = page;
    while let Some(open) = rest.find('<') {
        push_text(&mut out, &rest[..open]);
        let tag = &rest[open + 1..];
        let Some(close) = tag.find('>') else {
            rest = "";
            break;
        };
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        rest = &tag[close + 1..];
        if tag.starts_with("!--") {
            rest = tag.find("-->").map_or("", |end| &tag[end + 3..]);
            continue;
        }
        if matches!(name.as_str(), "script" | "style") && !tag.starts_with('/') {
            let end = format!("</{name}");
            rest = find_ci(rest, &end).map_or("", |i| &rest[i..]);
            continue;
        }
        if matches!(
            name.as_str(),
            "p" | "br"
                | "div"
                | "li"
                | "tr"
                | "h1"
                | "h2"
                | "h3"
                | "h4"
                | "h5"
                | "h6"
                | "table"
                | "section"
                | "article"
                | "header"
                | "footer"
                | "pre"
                | "blockquote"
        ) {
            out.push('\n');
        }
    }
    push_text(&mut out, rest);
    out
}

/// `text` (between tags) with its entities decoded.
fn push_text(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        match after.find(';').filter(|&i| i <= 10) {
            Some(semi) => match entity(&after[..semi]) {
                Some(decoded) => {
                    out.push_str(&decoded);
                    rest = &after[semi + 1..];
                }
                None => {
                    out.push('&');
                    rest = after;
                }
            },
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
}

/// An entity's text: the five of XML, `nbsp`, and numeric ones.
fn entity(name: &str) -> Option<String> {
    let c = match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        _ => {
            let code = match name.strip_prefix('#')? {
                hex if hex.starts_with(['x', 'X']) => u32::from_str_radix(&hex[1..], 16).ok()?,
                dec => dec.parse().ok()?,
            };
            char::from_u32(code)?
        }
    };
    Some(c.to_string())
}

fn find_ci(haystack: &str, needle: &str) -> Option<usize> {
    haystack
        .to_ascii_lowercase()
        .find(&needle.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn docx_of(document_xml: &str) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        let mut zip = zip::ZipWriter::new(&mut out);
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("word/document.xml", options).unwrap();
        zip.write_all(document_xml.as_bytes()).unwrap();
        zip.finish().unwrap();
        out.into_inner()
    }

    #[test]
    fn a_word_document_reads_by_paragraph_and_page() {
        let xml = r#"<?xml version="1.0"?><w:document xmlns:w="w"><w:body>
            <w:p><w:r><w:t>Late work loses 10 %</w:t></w:r><w:r><w:t xml:space="preserve"> a day &amp; more.</w:t></w:r></w:p>
            <w:p><w:r><w:br w:type="page"/><w:t>Page two</w:t></w:r></w:p>
            </w:body></w:document>"#;
        let text = read(Kind::Docx, &docx_of(xml), 10_000).unwrap();
        let pages: Vec<&str> = text.split('\u{c}').collect();
        assert_eq!(pages.len(), 2, "{text:?}");
        assert_eq!(pages[0].trim(), "Late work loses 10 % a day & more.");
        assert_eq!(pages[1].trim(), "Page two");
    }

    #[test]
    fn a_zip_that_is_no_word_document_says_so() {
        let mut out = std::io::Cursor::new(Vec::new());
        let mut zip = zip::ZipWriter::new(&mut out);
        zip.start_file("notes.txt", zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(b"hi").unwrap();
        zip.finish().unwrap();
        let e = read(Kind::Docx, &out.into_inner(), 100).unwrap_err();
        assert!(e.to_string().contains("word/document.xml"), "{e}");
        let e = read(Kind::Docx, b"PK\x03\x04 truncated", 100).unwrap_err();
        assert!(
            e.to_string().starts_with("it is not a Word document"),
            "{e}"
        );
    }

    #[test]
    fn a_zip_bomb_stops_at_the_cap() {
        // 80 MiB of one letter inside a paragraph, deflated to a few KB.
        let mut xml = String::from("<w:document><w:body><w:p><w:r><w:t>");
        xml.push_str(&"a".repeat(80 << 20));
        xml.push_str("</w:t></w:r></w:p></w:body></w:document>");
        let bomb = docx_of(&xml);
        assert!(bomb.len() < 1 << 20, "{} bytes", bomb.len());
        let e = read(Kind::Docx, &bomb, 100).unwrap_err();
        assert!(matches!(e, InsideError::TooBig), "{e}");
    }

    #[test]
    fn a_web_page_is_its_visible_text() {
        let page = "<!doctype html><html><head><style>p{x}</style><script>alert('no')</script></head>\
                    <body><h1>Syllabus</h1><p>Late &amp; missing work: &#8722;10&#x25;</p><!-- hidden --></body></html>";
        let text = read(Kind::Html, page.as_bytes(), 1000).unwrap();
        assert!(text.contains("Syllabus"), "{text}");
        assert!(text.contains("Late & missing work: −10%"), "{text}");
        assert!(
            !text.contains("alert") && !text.contains("p{x}") && !text.contains("hidden"),
            "{text}"
        );
    }

    #[test]
    fn the_text_stops_at_its_cap() {
        assert_eq!(read(Kind::Text, "ééééé".as_bytes(), 3).unwrap(), "ééé");
    }
}
