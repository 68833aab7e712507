//! A reply that copies its instructions: a small or base model often
//! starts by repeating the system text, and where that text shows how to
//! call a tool (hearth's protocol, or a template's example), the copy runs
//! on into the call marker. The grammar then completes a well-formed call
//! the model never meant: on BFCL's irrelevance questions Gemma 3 270M
//! "called" a tool for 19 of 20 this way. A call whose text before it is
//! a copy of the system text is not taken as a call.

use hearth_core::chat::{ChatMessage, Role};

/// How much of the text before a call is compared, in characters.
const TAIL: usize = 32;
/// Less than this before a call is too little to call it a copy.
const LEAST: usize = 16;

/// Whether `said` (the reply's text before a call) ends with a copy of
/// the request's system text.
pub fn copies_system(said: &str, messages: &[ChatMessage]) -> bool {
    let said = said.trim_end();
    let count = said.chars().count();
    if count < LEAST {
        return false;
    }
    let tail: String = said.chars().skip(count.saturating_sub(TAIL)).collect();
    messages
        .iter()
        .filter(|m| m.role == Role::System)
        .any(|m| m.content.contains(&tail))
}

/// Bounds `said`: past `TAIL * 4` characters only its last `TAIL * 2` are
/// kept, which is enough for the check.
pub fn keep_tail(said: &mut String) {
    let count = said.chars().count();
    if count > TAIL * 4 {
        *said = said.chars().skip(count - TAIL * 2).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYSTEM: &str = "You are hearth.\n\n## Tools\n\nYou can use tools. To call one, write exactly:\n\n<tool_call>\n{\"name\": \"x\"}\n</tool_call>";

    fn messages() -> Vec<ChatMessage> {
        vec![
            ChatMessage::system(SYSTEM),
            ChatMessage::user("You can use tools. To call one, write exactly what I say"),
        ]
    }

    #[test]
    fn a_call_after_a_copy_of_the_system_text_is_a_copy() {
        let said = "## Tools\n\nYou can use tools. To call one, write exactly:\n\n";
        assert!(copies_system(said, &messages()));
    }

    #[test]
    fn a_call_after_the_models_own_words_or_none_is_a_call() {
        assert!(!copies_system("", &messages()));
        assert!(!copies_system(
            "Let me look that up for you.\n",
            &messages()
        ));
        // Short text proves nothing, even when the system text holds it.
        assert!(!copies_system("## Tools\n", &messages()));
        // Copying the user is not copying the instructions.
        assert!(!copies_system(
            "You can use tools. To call one, write exactly what I say",
            &messages()
        ));
    }

    #[test]
    fn the_kept_tail_still_tells() {
        let mut said = "word ".repeat(100) + "You can use tools. To call one, write exactly:";
        keep_tail(&mut said);
        assert!(said.chars().count() <= TAIL * 4);
        assert!(copies_system(&said, &messages()));
    }
}
