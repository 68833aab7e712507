//! Normalising restored history before it goes to the model: stale tool
//! results out, image markers out for providers without vision, and
//! consecutive turns of one role merged (an interrupted message and the one
//! that interrupted it become one user turn).

use std::sync::LazyLock;

use regex::Regex;

use crate::chat::{ChatMessage, Role};

static TOOL_RESULT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)<tool_result\b[^>]*>.*?(</tool_result>|\z)").unwrap_or_else(|_| never())
});
static IMAGE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[IMAGE:[^\]]*\]").unwrap_or_else(|_| never()));

/// A pattern that matches nothing (the literal patterns above compile; this
/// keeps a typo from ever panicking at runtime).
fn never() -> Regex {
    Regex::new(r"[^\s\S]").unwrap_or_else(|_| unreachable!("a valid pattern"))
}

/// Cleans `history` for a provider; `vision` keeps `[IMAGE:]` markers,
/// `sees` the turns' pictures (a model that cannot see gets none).
pub fn history(history: Vec<ChatMessage>, vision: bool, sees: bool) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(history.len());
    for mut message in history {
        if !sees {
            message.images.clear();
        }
        if message.content.contains("<tool_result") {
            message.content = TOOL_RESULT.replace_all(&message.content, "").into_owned();
        }
        if !vision {
            message.content = strip_images(&message.content);
        }
        let content = message.content.trim();
        if (content.is_empty() && message.images.is_empty()) || message.role == Role::System {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == message.role => {
                last.content.push_str("\n\n");
                last.content.push_str(content);
                last.images.extend(message.images);
            }
            _ => out.push(ChatMessage {
                images: message.images,
                ..ChatMessage::new(message.role, content)
            }),
        }
    }
    out
}

/// Removes `[IMAGE:…]` markers.
pub fn strip_images(text: &str) -> String {
    if text.contains("[IMAGE:") {
        IMAGE.replace_all(text, "").trim().to_string()
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_strips_and_keeps_order() {
        let h = vec![
            ChatMessage::user("first"),
            ChatMessage::user("second [IMAGE:/tmp/a.png]"),
            ChatMessage::assistant("ok <tool_result name=\"x\">secret output</tool_result> done"),
            ChatMessage::assistant(""),
            ChatMessage::user("third"),
        ];
        let out = history(h.clone(), false, false);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].content, "first\n\nsecond");
        assert_eq!(out[1].content, "ok  done");
        assert_eq!(out[2].role, Role::User);
        let with_vision = history(h, true, true);
        assert!(with_vision[0].content.contains("[IMAGE:/tmp/a.png]"));
    }
}
