//! Messages as chat templates read them: Hugging Face's shape, with an
//! assistant turn's calls under `tool_calls` and a tool turn's id under
//! `tool_call_id`. Families that need another shape adjust this one.

use serde_json::{Map, Value, json};

use hearth_core::chat::{ChatMessage, Role};

/// Each message as `{"role", "content"}`, plus `tool_calls: [{"id",
/// "type": "function", "function": {"name", "arguments"}}]` on an
/// assistant turn that calls, and `tool_call_id` and `name` on a tool turn.
/// `id` maps an id to the form the family requires.
pub fn standard(messages: &[ChatMessage], id: &dyn Fn(&str) -> String) -> Vec<Value> {
    messages.iter().map(|m| one(m, id)).collect()
}

fn one(message: &ChatMessage, id: &dyn Fn(&str) -> String) -> Value {
    let mut out = Map::new();
    out.insert("role".into(), json!(message.role.as_str()));
    out.insert("content".into(), json!(message.content));
    if message.role == Role::Assistant && !message.tool_calls.is_empty() {
        let calls: Vec<Value> = message
            .tool_calls
            .iter()
            .map(|c| {
                json!({
                    "id": id(&c.id),
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                })
            })
            .collect();
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    if message.role == Role::Tool {
        if let Some(call) = &message.tool_call_id {
            out.insert("tool_call_id".into(), json!(id(call)));
        }
        if let Some(name) = &message.name {
            out.insert("name".into(), json!(name));
        }
    }
    Value::Object(out)
}

/// `messages` with an assistant turn of several calls written as several
/// turns of one call each, for templates that take one call per turn.
pub fn one_call_per_turn(messages: &[ChatMessage]) -> Vec<ChatMessage> {
    messages
        .iter()
        .flat_map(|m| match m.role {
            Role::Assistant if m.tool_calls.len() > 1 => m
                .tool_calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let text = if i == 0 { m.content.as_str() } else { "" };
                    ChatMessage::assistant_calls(text, vec![c.clone()])
                })
                .collect(),
            _ => vec![m.clone()],
        })
        .collect()
}

/// An id of exactly `n` letters and digits, as Mistral's templates require:
/// kept when it already is one, else derived from it (the same id always
/// gives the same result, so a call and its result still match).
pub fn fixed_id(id: &str, n: usize) -> String {
    if id.len() == n && id.chars().all(|c| c.is_ascii_alphanumeric()) {
        return id.to_string();
    }
    // FNV-1a, then as many base-62 digits as needed.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    super::Ids::new(hash).letters(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_core::chat::ToolCall;

    #[test]
    fn calls_and_results_take_the_hugging_face_shape() {
        let messages = [
            ChatMessage::assistant_calls(
                "",
                vec![ToolCall {
                    id: "call_1".into(),
                    name: "f".into(),
                    arguments: json!({"a": 1}),
                }],
            ),
            ChatMessage::tool_result("call_1", "f", "ok"),
            ChatMessage::user("hi"),
        ];
        let out = standard(&messages, &|id| id.to_string());
        assert_eq!(
            out[0],
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
            ]})
        );
        assert_eq!(
            out[1],
            json!({"role": "tool", "content": "ok", "tool_call_id": "call_1", "name": "f"})
        );
        assert_eq!(out[2], json!({"role": "user", "content": "hi"}));
    }

    #[test]
    fn fixed_ids_are_stable_and_of_the_length_asked() {
        assert_eq!(fixed_id("abcDEF123", 9), "abcDEF123");
        let a = fixed_id("call_1", 9);
        assert_eq!(a.len(), 9);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(a, fixed_id("call_1", 9));
        assert_ne!(a, fixed_id("call_2", 9));
    }
}
