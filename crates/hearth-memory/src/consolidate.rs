//! Consolidation: durable facts the user stated in a turn, kept as `core`.
//!
//! After a reply, the model is asked (at background priority, so any
//! interactive request goes first) to list lasting facts about the user in
//! the user's message. Only the user's words go into that request: the
//! assistant's reply is never shown, so nothing it said can become a "fact".
//! The answer is parsed leniently (a JSON array, or one fact per line) and
//! each fact must be grounded in the user's words: one whose words mostly
//! do not occur in the message (the model recalling its own reply, or
//! inventing) is dropped.

use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::query;
use crate::chat::{ChatMessage, ChatRequest, Priority, ProviderError, SamplingParams};
use crate::providers::Provider;

/// The conversation key consolidation requests run under.
pub const CONVERSATION: &str = "memory-consolidation";

const INSTRUCTIONS: &str = "You extract durable facts about the user from one message they wrote. \
Durable facts are lasting: their name, family, pets, home, work, preferences, plans with dates, \
allergies. Ignore questions, requests, greetings and anything temporary. Write each fact as a short \
standalone sentence in the user's language, using the user's own words. \
Answer only with a JSON array of strings, or [] when there is none.";

/// Facts shorter or longer than this are not facts.
const FACT_CHARS: std::ops::RangeInclusive<usize> = 6..=300;
/// The share of a fact's words that must occur in the user's message.
const GROUNDING: f64 = 0.5;
/// Facts kept from one answer at most.
const MAX_FACTS: usize = 8;

/// The request that asks for facts in `user_text`.
pub fn request(user_text: &str, max_tokens: u32) -> ChatRequest {
    let mut r = ChatRequest::new(
        CONVERSATION,
        vec![
            ChatMessage::system(INSTRUCTIONS),
            ChatMessage::user(format!("The user's message:\n\"\"\"\n{user_text}\n\"\"\"")),
        ],
        SamplingParams::greedy(max_tokens),
    );
    r.priority = Priority::Background;
    r
}

/// Asks `provider` for the facts in `user_text`, grounded and deduplicated.
pub async fn extract(
    provider: &dyn Provider,
    user_text: &str,
    max_tokens: u32,
) -> Result<Vec<String>, ProviderError> {
    let reply = provider
        .chat(request(user_text, max_tokens), CancellationToken::new())
        .collect_with(|_| {})
        .await?;
    Ok(parse_facts(&reply.text)
        .into_iter()
        .filter(|f| grounded(f, user_text) && super::statement::specifics_written(f, user_text))
        .collect())
}

/// Facts in a model's answer: a JSON array of strings (or of objects with a
/// `fact` or `content` field) anywhere in the text, else bulleted or plain
/// lines. Junk (empty, too short or long, "none", headings, the members of a
/// JSON object) is dropped; the lines of an array the answer broke off are
/// kept without their quotes and commas.
pub fn parse_facts(answer: &str) -> Vec<String> {
    let candidates = json_facts(answer).unwrap_or_else(|| {
        answer
            .lines()
            .map(|l| {
                l.trim()
                    .trim_start_matches(|c: char| {
                        matches!(c, '-' | '*' | '•' | '.' | ')') || c.is_ascii_digit()
                    })
                    .trim()
                    .trim_end_matches(',')
                    .trim_end()
                    .trim_matches('"')
                    .to_string()
            })
            .filter(|l| {
                !l.ends_with(':')
                    && !l.starts_with('[')
                    && !l.starts_with('{')
                    && !is_json_member(l)
            })
            .collect()
    });
    let mut facts: Vec<String> = Vec::new();
    for c in candidates {
        let c = c.trim().to_string();
        let lower = c.to_lowercase();
        if !FACT_CHARS.contains(&c.chars().count())
            || lower.starts_with("none")
            || lower.starts_with("no facts")
            || lower.starts_with("no durable")
            || facts.iter().any(|f| f.to_lowercase() == lower)
        {
            continue;
        }
        facts.push(c);
        if facts.len() == MAX_FACTS {
            break;
        }
    }
    facts
}

/// Whether a line, its outer quotes gone, is a member of a JSON object
/// (`name": "Marmalade`): small models answer an object where an array was
/// asked for, and its keys and values are no sentences about the user.
fn is_json_member(line: &str) -> bool {
    line.split_once("\":")
        .is_some_and(|(key, _)| !key.is_empty() && !key.contains('"'))
}

fn json_facts(answer: &str) -> Option<Vec<String>> {
    let start = answer.find('[')?;
    let end = answer.rfind(']')?;
    if end <= start {
        return None;
    }
    let items: Vec<serde_json::Value> = serde_json::from_str(&answer[start..=end]).ok()?;
    Some(
        items
            .iter()
            .filter_map(|v| match v {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Object(o) => ["fact", "content", "text"]
                    .iter()
                    .find_map(|k| o.get(*k).and_then(|v| v.as_str()))
                    .map(str::to_string),
                _ => None,
            })
            .collect(),
    )
}

/// Whether most of `fact`'s meaningful words occur in `user_text`.
pub fn grounded(fact: &str, user_text: &str) -> bool {
    query::coverage(&query::terms(fact), user_text) >= GROUNDING
}

/// A stable key for a fact, so the same fact stored twice is one entry.
pub fn fact_key(fact: &str) -> String {
    let normal = query::words(fact).join(" ");
    let digest = Sha256::digest(normal.as_bytes());
    format!("core_{}", crate::hex::hex(&digest[..6]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_parsing() {
        assert_eq!(
            parse_facts(
                "Sure! Here you go:\n```json\n[\"User has a cat named Miso\", 42, \"ok\"]\n```"
            ),
            ["User has a cat named Miso"]
        );
        assert_eq!(
            parse_facts("[{\"fact\": \"Lives in Busan\"}, {\"other\": 1}]"),
            ["Lives in Busan"]
        );
        assert_eq!(
            parse_facts(
                "Facts:\n- Works as a nurse\n* Allergic to peanuts\n1. Works as a nurse\nNone"
            ),
            ["Works as a nurse", "Allergic to peanuts"]
        );
        assert!(parse_facts("[]").is_empty());
        assert!(parse_facts("None.").is_empty());
        assert!(parse_facts("").is_empty());
        assert!(parse_facts("[unclosed \"json").is_empty());
    }

    #[test]
    fn an_object_answered_for_an_array_gives_no_facts() {
        // Lines like those a CI run stored as memories from SmolLM2's
        // answer to "My favourite jam is marmalade, please remember that."
        // (`name": "Marmalade",` and at least five more).
        let object = "{\n  \"name\": \"Marmalade\",\n  \"home\": \"My favourite jam\",\n  \
                      \"preferences\": \"My favourite jam is marmalade\",\n  \"work\": \"My favourite";
        assert!(parse_facts(object).is_empty(), "{:?}", parse_facts(object));
        // The control: an array broken off at the token limit keeps its
        // whole elements, without their quotes and commas.
        assert_eq!(
            parse_facts("[\n  \"My favourite jam is marmalade\",\n  \"Works as a nurse\",\n"),
            ["My favourite jam is marmalade", "Works as a nurse"]
        );
        // A sentence that quotes something is still a sentence.
        assert_eq!(
            parse_facts("- Calls her bike \"Rosie\": a red one"),
            ["Calls her bike \"Rosie\": a red one"]
        );
    }

    #[test]
    fn grounding_rejects_what_the_user_did_not_say() {
        let said = "By the way, my daughter Mina starts school in Seoul next March.";
        assert!(grounded(
            "The user's daughter Mina starts school in March",
            said
        ));
        assert!(!grounded("Seoul is the capital of South Korea", said));
        assert!(!grounded(
            "The assistant recommends buying a backpack",
            said
        ));
    }

    #[test]
    fn keys_are_stable_across_spelling_noise() {
        assert_eq!(fact_key("Lives in Busan."), fact_key("lives in  busan"));
        assert_ne!(fact_key("Lives in Busan"), fact_key("Lives in Seoul"));
    }

    #[test]
    fn the_request_is_background_and_holds_only_the_users_words() {
        let r = request("I moved to Lyon", 64);
        assert_eq!(r.priority, Priority::Background);
        assert!(r.messages[1].content.contains("I moved to Lyon"));
    }
}
