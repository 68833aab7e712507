//! The answer as a mail: in the thread of the mail it answers
//! (`In-Reply-To`, `References`, `Re:`), marked as sent by a program
//! (`Auto-Submitted`, RFC 3834) so other programs do not answer it, UTF-8
//! text in base64. Nothing from the model or the sender reaches a header
//! unchecked: addresses are checked, the subject loses its line breaks.

use base64::Engine as _;

use super::state::Thread;

/// One mail to send: who it goes to and its bytes, CRLF throughout.
pub struct Outgoing {
    pub to: String,
    pub bytes: Vec<u8>,
}

/// The mail from `from` to `to` with `text`, answering `thread` when set.
pub fn compose(from: &str, to: &str, text: &str, thread: Option<&Thread>) -> Outgoing {
    let domain = from.rsplit_once('@').map(|(_, d)| d).unwrap_or("localhost");
    let subject = match thread {
        Some(t) if t.subject.is_empty() => "Re: your mail".to_string(),
        Some(t) if t.subject.to_ascii_lowercase().starts_with("re:") => t.subject.clone(),
        Some(t) => format!("Re: {}", t.subject),
        None => "A message from hearth".to_string(),
    };
    let mut head = vec![
        format!("From: <{from}>"),
        format!("To: <{to}>"),
        format!("Subject: {}", encode_word(&one_line(&subject))),
        format!("Date: {}", chrono::Utc::now().to_rfc2822()),
        format!("Message-ID: <{}@{domain}>", uuid::Uuid::new_v4()),
    ];
    if let Some(id) = thread
        .and_then(|t| t.message_id.as_deref())
        .filter(|id| is_id(id))
    {
        head.push(format!("In-Reply-To: <{id}>"));
        let mut refs: Vec<&str> = thread
            .map(|t| {
                t.references
                    .iter()
                    .map(String::as_str)
                    .filter(|r| is_id(r))
                    .collect()
            })
            .unwrap_or_default();
        refs.retain(|r| *r != id);
        refs.push(id);
        let refs: Vec<String> = refs.iter().map(|r| format!("<{r}>")).collect();
        head.push(format!("References: {}", refs.join(" ")));
    }
    head.extend([
        "Auto-Submitted: auto-replied".to_string(),
        "MIME-Version: 1.0".to_string(),
        "Content-Type: text/plain; charset=utf-8".to_string(),
        "Content-Transfer-Encoding: base64".to_string(),
    ]);
    let body = base64::engine::general_purpose::STANDARD
        .encode(text.replace("\r\n", "\n").replace('\n', "\r\n"));
    let mut bytes = head.join("\r\n").into_bytes();
    bytes.extend_from_slice(b"\r\n\r\n");
    for chunk in body.as_bytes().chunks(76) {
        bytes.extend_from_slice(chunk);
        bytes.extend_from_slice(b"\r\n");
    }
    Outgoing {
        to: to.to_string(),
        bytes,
    }
}

/// Whether `a` can go into an address header and an SMTP command as it is.
pub fn is_address(a: &str) -> bool {
    a.split_once('@')
        .is_some_and(|(n, d)| !n.is_empty() && !d.is_empty())
        && a.chars()
            .all(|c| c.is_ascii_graphic() && !"<>()[],;:\\\"".contains(c))
}

/// Whether `id` can stand between `<` and `>` in a header.
fn is_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() < 500
        && id
            .chars()
            .all(|c| c.is_ascii_graphic() && c != '<' && c != '>')
}

fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect()
}

/// `s` as an RFC 2047 encoded word when it is not plain ASCII.
fn encode_word(s: &str) -> String {
    if s.is_ascii() {
        s.to_string()
    } else {
        format!(
            "=?utf-8?B?{}?=",
            base64::engine::general_purpose::STANDARD.encode(s)
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_answer_lands_in_its_thread_and_nothing_breaks_out_of_a_header() {
        let thread = Thread {
            message_id: Some("two@home.test".into()),
            references: vec!["zero@home.test".into(), "two@home.test".into()],
            subject: "notes\r\nBcc: everyone@evil.test".into(),
        };
        let out = compose(
            "bot@home.test",
            "ann@home.test",
            "Hi Ann.\nHere.",
            Some(&thread),
        );
        let text = String::from_utf8(out.bytes).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.contains("\r\nIn-Reply-To: <two@home.test>\r\n"),
            "{head}"
        );
        assert!(
            head.contains("\r\nReferences: <zero@home.test> <two@home.test>\r\n"),
            "{head}"
        );
        assert!(
            head.contains("Subject: Re: notes  Bcc: everyone@evil.test\r\n"),
            "{head}"
        );
        assert!(!head.lines().any(|l| l.starts_with("Bcc:")), "{head}");
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(body.replace("\r\n", ""))
            .unwrap();
        assert_eq!(decoded, b"Hi Ann.\r\nHere.");
        assert!(is_address("ann@home.test"));
        assert!(!is_address("ann@home.test>\r\nRCPT TO:<x@y"));
        assert!(!is_address("nobody"));
    }
}
