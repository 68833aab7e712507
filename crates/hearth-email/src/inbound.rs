//! One fetched mail read: who wrote it, what the checks need of its
//! headers, its new words and its attachments.

use mail_parser::{HeaderValue, MessageParser, MimeHeaders};

use hearth_core::chat::{Attachment, Audio, Image};

/// A mail as the channel uses it.
#[derive(Debug, Default)]
pub struct Mail {
    /// `From:`, lowercased.
    pub from: String,
    pub message_id: Option<String>,
    /// `References:` then `In-Reply-To:`, in order, without duplicates.
    pub references: Vec<String>,
    pub subject: String,
    /// The new words of the text body (the quoted thread taken out).
    pub text: String,
    /// Raw `Authentication-Results` values, topmost first.
    pub results: Vec<String>,
    /// Everyone it was sent to, lowercased.
    pub recipients: Vec<String>,
    /// Sent by a program (an auto-reply, a bounce, a list): never answered,
    /// or two programs would answer each other forever.
    pub automatic: bool,
    pub images: Vec<Image>,
    pub audio: Option<Audio>,
    pub documents: Vec<Attachment>,
}

/// Reads `raw`; `None` when it is no mail at all.
pub fn read(raw: &[u8]) -> Option<Mail> {
    let message = MessageParser::default().parse(raw)?;
    let from = message
        .from()
        .and_then(|a| a.first())
        .and_then(|a| a.address())
        .map(|a| a.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let mut references: Vec<String> = Vec::new();
    for value in [message.references(), message.in_reply_to()] {
        for id in ids(value) {
            if !references.contains(&id) {
                references.push(id);
            }
        }
    }
    let mut recipients: Vec<String> = Vec::new();
    for list in [message.to(), message.cc()].into_iter().flatten() {
        recipients.extend(
            list.iter()
                .filter_map(|a| a.address())
                .map(str::to_ascii_lowercase),
        );
    }
    let mut results = Vec::new();
    for (name, value) in message.headers_raw() {
        let name = name.to_ascii_lowercase();
        match name.as_str() {
            "authentication-results" => results.push(value.trim().to_string()),
            "delivered-to" | "x-original-to" => {
                recipients.push(value.trim().trim_matches(['<', '>']).to_ascii_lowercase())
            }
            _ => {}
        }
    }
    let automatic = automatic(&message, &from);
    let text = message
        .body_text(0)
        .map(|t| super::quote::new_words(&t))
        .unwrap_or_default();
    let mut mail = Mail {
        from,
        message_id: message.message_id().map(str::to_string),
        references,
        subject: message.subject().unwrap_or_default().trim().to_string(),
        text,
        results,
        recipients,
        automatic,
        ..Mail::default()
    };
    attach(&message, &mut mail);
    Some(mail)
}

/// Whether a program sent `message` (an auto-reply, a bounce, a list).
fn automatic(message: &mail_parser::Message<'_>, from: &str) -> bool {
    message
        .header_raw("Auto-Submitted")
        .is_some_and(|v| !v.trim().eq_ignore_ascii_case("no"))
        || message.header_raw("Precedence").is_some_and(|v| {
            ["bulk", "list", "junk"].contains(&v.trim().to_ascii_lowercase().as_str())
        })
        || message.header_raw("List-Id").is_some()
        || from.starts_with("mailer-daemon@")
        || from.starts_with("postmaster@")
}

/// The attachments of `message`, each to the path its kind goes.
fn attach(message: &mail_parser::Message<'_>, mail: &mut Mail) {
    for part in message.attachments() {
        let (kind, subtype) = part
            .content_type()
            .map(|c| {
                (
                    c.ctype().to_ascii_lowercase(),
                    c.subtype().unwrap_or("").to_ascii_lowercase(),
                )
            })
            .unwrap_or_default();
        let bytes = part.contents().to_vec();
        if bytes.is_empty() {
            continue;
        }
        match kind.as_str() {
            "image" => mail.images.push(Image::new(bytes)),
            "audio" if mail.audio.is_none() => mail.audio = Some(Audio::file(bytes)),
            "message" if subtype == "rfc822" => {}
            _ => mail.documents.push(Attachment::new(
                part.attachment_name().unwrap_or("document"),
                bytes,
            )),
        }
    }
}

/// The message ids in a `References:` or `In-Reply-To:` value.
fn ids(value: &HeaderValue<'_>) -> Vec<String> {
    match value {
        HeaderValue::Text(t) => vec![t.to_string()],
        HeaderValue::TextList(list) => list.iter().map(|t| t.to_string()).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_reply_with_a_pdf_is_read_down_to_its_new_words() {
        let raw = concat!(
            "Authentication-Results: mx.home.test; dkim=pass header.d=home.test\r\n",
            "From: Ann <Ann@Home.test>\r\n",
            "To: hearth <bot@home.test>\r\n",
            "Subject: Re: the notes\r\n",
            "Message-ID: <two@home.test>\r\n",
            "In-Reply-To: <one@home.test>\r\n",
            "References: <zero@home.test> <one@home.test>\r\n",
            "MIME-Version: 1.0\r\n",
            "Content-Type: multipart/mixed; boundary=\"b\"\r\n\r\n",
            "--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n",
            "Here they are.\r\n\r\nOn Mon, hearth wrote:\r\n> send them\r\n",
            "--b\r\nContent-Type: application/pdf; name=\"notes.pdf\"\r\n",
            "Content-Disposition: attachment; filename=\"notes.pdf\"\r\n",
            "Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--b--\r\n",
        );
        let mail = read(raw.as_bytes()).unwrap();
        assert_eq!(mail.from, "ann@home.test");
        assert_eq!(mail.message_id.as_deref(), Some("two@home.test"));
        assert_eq!(mail.references, ["zero@home.test", "one@home.test"]);
        assert_eq!(mail.subject, "Re: the notes");
        assert_eq!(mail.text, "Here they are.");
        assert_eq!(mail.results.len(), 1);
        assert_eq!(mail.recipients, ["bot@home.test"]);
        assert!(!mail.automatic);
        assert_eq!(mail.documents.len(), 1);
        assert_eq!(mail.documents[0].name, "notes.pdf");
        assert_eq!(&mail.documents[0].bytes[..5], b"%PDF-");
    }

    #[test]
    fn an_auto_reply_is_marked() {
        let raw =
            "From: a@b.test\r\nAuto-Submitted: auto-replied\r\nSubject: away\r\n\r\nI am away.\r\n";
        assert!(read(raw.as_bytes()).unwrap().automatic);
    }
}
