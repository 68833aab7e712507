//! What in a person's message may be kept: their statements, not their
//! questions. "What is the capital of France?" tells nothing about the
//! person, and a small model asked for facts in it answers the question
//! ("The capital of France is Paris."): such a message is neither
//! auto-saved nor consolidated, and a fact naming something the person
//! never wrote (a name, a number, an identifier) is the model's, not
//! theirs.

/// Whether `text` asks rather than tells: its last sentence ends with a
/// question mark (any script's), or it is one short question without one
/// ("what time is it").
pub fn is_question(text: &str) -> bool {
    let t = text
        .trim()
        .trim_end_matches(['.', '!', ' ', '"', '\'', ')']);
    if t.ends_with(['?', '？', '¿', '؟']) {
        return true;
    }
    let first = t.split_whitespace().next().unwrap_or("").to_lowercase();
    const ASKING: [&str; 12] = [
        "what", "when", "where", "who", "whom", "whose", "why", "how", "which", "is", "are", "can",
    ];
    !t.contains(['.', '\n'])
        && ASKING.contains(&first.as_str())
        && t.split_whitespace().count() <= 12
}

/// Whether every specific word of `fact` (a capitalised word after its
/// first, a number, an identifier with `_` or digits) occurs in
/// `user_text`, case aside.
pub fn specifics_written(fact: &str, user_text: &str) -> bool {
    let said = user_text.to_lowercase();
    fact.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .enumerate()
        .filter(|(i, w)| {
            (*i > 0 && w.chars().next().is_some_and(char::is_uppercase))
                || w.contains('_')
                || w.chars().any(|c| c.is_ascii_digit())
        })
        .all(|(_, w)| said.contains(&w.to_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_told_from_statements() {
        for q in [
            "What is the capital of France?",
            "Can you list my files as JSON?",
            "how do I convert a list to json",
            "I wonder: is it raining?",
        ] {
            assert!(is_question(q), "{q}");
        }
        for s in [
            "My daughter Mina is allergic to peanuts.",
            "I moved to Lyon in 2021",
            "Remember that my dentist is Dr Okafor.",
            "What a day. I finally adopted a cat named Pixel.",
        ] {
            assert!(!is_question(s), "{s}");
        }
    }

    #[test]
    fn a_fact_naming_what_the_person_never_wrote_is_not_theirs() {
        let asked = "What is the capital of France?";
        assert!(!specifics_written("The capital of France is Paris.", asked));
        assert!(!specifics_written(
            "list_to_json",
            "how do I turn a list into json"
        ));
        let told = "My daughter Mina is allergic to peanuts, since 2019.";
        assert!(specifics_written(
            "The user's daughter Mina is allergic to peanuts.",
            told
        ));
        assert!(specifics_written("Mina's allergy started in 2019.", told));
    }
}
