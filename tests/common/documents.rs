//! Documents with known text on known pages, and hostile ones, made here:
//! a PDF written object by object (Helvetica, one text block a page, a
//! correct cross-reference table, so poppler reads it without repair), and
//! a DOCX zipped from its XML.

use std::io::Write;

/// A PDF whose page `i` shows the lines of `pages[i]`.
pub fn pdf(pages: &[Vec<String>]) -> Vec<u8> {
    let mut objects: Vec<Vec<u8>> = Vec::new();
    let n = pages.len();
    // 1: catalog, 2: pages, 3: font, then a page and its content per page.
    objects.push(b"<< /Type /Catalog /Pages 2 0 R >>".to_vec());
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    objects.push(format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")).into_bytes());
    objects.push(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec());
    for (i, lines) in pages.iter().enumerate() {
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
                5 + 2 * i
            )
            .into_bytes(),
        );
        let mut text = String::from("BT /F1 11 Tf 72 740 Td 14 TL\n");
        for line in lines {
            let escaped = line
                .replace('\\', "\\\\")
                .replace('(', "\\(")
                .replace(')', "\\)");
            text.push_str(&format!("({escaped}) Tj T*\n"));
        }
        text.push_str("ET");
        objects.push(stream(text.as_bytes(), ""));
    }
    assemble(&objects)
}

/// `data` as a stream object, with `extra` entries in its dictionary.
pub fn stream(data: &[u8], extra: &str) -> Vec<u8> {
    let mut out = format!("<< /Length {}{extra} >>\nstream\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\nendstream");
    out
}

/// A PDF file of `objects` (numbered from 1, the first the catalog).
pub fn assemble(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::with_capacity(objects.len());
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// A course reader of `n` pages of about 1,500 characters (a page of a
/// real one); page `at` carries `sentence` among them.
pub fn reader(n: usize, at: usize, sentence: &str) -> Vec<u8> {
    let pages: Vec<Vec<String>> = (1..=n)
        .map(|i| {
            let mut lines = vec![format!("Course reader, page {i}."), String::new()];
            for l in 0..20 {
                lines.push(format!(
                    "Section {i}.{l} reviews the weekly readings and the seminar notes once more."
                ));
                if i == at && l == 9 {
                    lines.push(String::new());
                    lines.push(sentence.to_string());
                    lines.push(String::new());
                }
            }
            lines
        })
        .collect();
    pdf(&pages)
}

/// A PDF of `n` empty pages, sharing one content stream.
pub fn empty_pages(n: usize) -> Vec<u8> {
    let mut objects: Vec<Vec<u8>> = Vec::new();
    objects.push(b"<< /Type /Catalog /Pages 2 0 R >>".to_vec());
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 4 + i)).collect();
    objects.push(format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")).into_bytes());
    objects.push(stream(b"", ""));
    for _ in 0..n {
        objects.push(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R >>".to_vec(),
        );
    }
    assemble(&objects)
}

/// A one-page PDF whose content stream inflates to `mib` MiB of spaces
/// (a decompression bomb: a few KB on the wire).
pub fn bomb(mib: usize) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..mib {
        z.write_all(&chunk).unwrap();
    }
    let packed = z.finish().unwrap();
    let objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>".to_vec(),
        stream(&packed, " /Filter /FlateDecode"),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R >>".to_vec(),
    ];
    assemble(&objects)
}

/// A PDF of `pages` pages that all show one page of 50 lines of 80
/// letters: a few KB on the wire, 4,000 characters of text a page.
pub fn text_bomb(pages: usize) -> Vec<u8> {
    let mut text = String::from("BT /F1 8 Tf 20 760 Td 12 TL\n");
    for _ in 0..50 {
        text.push_str(&format!("({}) Tj T*\n", "a".repeat(80)));
    }
    text.push_str("ET");
    let mut objects: Vec<Vec<u8>> = Vec::new();
    objects.push(b"<< /Type /Catalog /Pages 2 0 R >>".to_vec());
    let kids: Vec<String> = (0..pages).map(|i| format!("{} 0 R", 5 + i)).collect();
    objects.push(
        format!(
            "<< /Type /Pages /Kids [{}] /Count {pages} >>",
            kids.join(" ")
        )
        .into_bytes(),
    );
    objects.push(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec());
    objects.push(stream(text.as_bytes(), ""));
    for _ in 0..pages {
        objects.push(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
                .to_vec(),
        );
    }
    assemble(&objects)
}

/// A PDF that runs JavaScript when opened and carries an embedded file,
/// with one line of text.
pub fn scripted(text: &str) -> Vec<u8> {
    let content = format!("BT /F1 11 Tf 72 740 Td ({text}) Tj ET");
    let objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R /OpenAction 6 0 R /Names << /EmbeddedFiles << /Names [(x.exe) 7 0 R] >> >> >>".to_vec(),
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>".to_vec(),
        stream(content.as_bytes(), ""),
        b"<< /S /JavaScript /JS (app.alert('hello');) >>".to_vec(),
        b"<< /Type /Filespec /F (x.exe) /EF << /F 8 0 R >> >>".to_vec(),
        stream(b"MZ not really a program", " /Type /EmbeddedFile"),
    ];
    assemble(&objects)
}

/// A DOCX whose paragraphs are `paragraphs`.
pub fn docx(paragraphs: &[&str]) -> Vec<u8> {
    let body: String = paragraphs
        .iter()
        .map(|p| format!("<w:p><w:r><w:t>{p}</w:t></w:r></w:p>"))
        .collect();
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>"#
    );
    zipped(&[("word/document.xml", xml.as_bytes())])
}

/// A DOCX whose document inflates to `mib` MiB (a zip bomb).
pub fn docx_bomb(mib: usize) -> Vec<u8> {
    let mut xml = String::from("<w:document><w:body><w:p><w:r><w:t>");
    xml.push_str(&"a".repeat(mib << 20));
    xml.push_str("</w:t></w:r></w:p></w:body></w:document>");
    zipped(&[("word/document.xml", xml.as_bytes())])
}

fn zipped(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in files {
        zip.start_file(*name, options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap();
    out.into_inner()
}
