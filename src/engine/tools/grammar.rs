//! The GBNF grammar for a tool call, built from the offered tools' schemas.

use serde_json::{Value, json};

use crate::chat::{ProviderError, ToolSpec};

/// Strings without a declared bound get this one in the grammar, so a call
/// cannot run away inside a string until the token limit.
const DEFAULT_MAX_STRING: u64 = 256;

/// The regex that wakes the lazy grammar: llama.cpp matches it against the
/// whole output so far and starts the grammar at the first group.
pub fn lazy_trigger() -> String {
    format!(
        r"[\s\S]*?({})[\s\S]*",
        regex_escape(super::super::output::CALL_OPEN)
    )
}

/// A grammar whose root is one complete `<tool_call>…</tool_call>`.
pub fn call_grammar(tools: &[ToolSpec]) -> Result<String, ProviderError> {
    if tools.is_empty() {
        return Err(ProviderError::InvalidRequest(
            "tool_choice requires at least one tool".into(),
        ));
    }
    let mut variants = Vec::new();
    for tool in tools {
        check_tool(tool)?;
        let mut arguments = tool.parameters.clone();
        bound_strings(&mut arguments);
        variants.push(json!({
            "type": "object",
            "properties": {"name": {"const": tool.name}, "arguments": arguments},
            "required": ["name", "arguments"],
            "additionalProperties": false
        }));
    }
    let schema = if variants.len() == 1 {
        variants.remove(0)
    } else {
        json!({ "oneOf": variants })
    };
    let body = llama_cpp_2::json_schema_to_grammar(&schema.to_string()).map_err(|e| {
        ProviderError::InvalidRequest(format!("tool schemas cannot be turned into a grammar: {e}"))
    })?;
    let mut renamed = false;
    let mut grammar: String = body
        .lines()
        .map(|line| match line.strip_prefix("root ::=") {
            Some(rest) => {
                renamed = true;
                format!("tool-call-body ::={rest}\n")
            }
            None => format!("{line}\n"),
        })
        .collect();
    if !renamed {
        return Err(ProviderError::InvalidRequest(
            "the schema grammar has no root rule".into(),
        ));
    }
    grammar
        .push_str("root ::= \"<tool_call>\" \"\\n\"? tool-call-body \"\\n\"? \"</tool_call>\"\n");
    Ok(grammar)
}

/// Tool names and schemas are checked here, before llama.cpp sees them.
fn check_tool(tool: &ToolSpec) -> Result<(), ProviderError> {
    let name_ok = !tool.name.is_empty()
        && tool.name.len() <= 64
        && tool
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
    if !name_ok {
        return Err(ProviderError::InvalidRequest(format!(
            "tool name `{}` must be 1-64 characters of letters, digits, `_`, `-` or `.`",
            tool.name
        )));
    }
    match &tool.parameters {
        Value::Object(map) if map.get("type").is_none_or(|t| t == "object") => Ok(()),
        _ => Err(ProviderError::InvalidRequest(format!(
            "the parameters of tool `{}` must be a JSON schema of type object",
            tool.name
        ))),
    }
}

/// Adds `maxLength` to string schemas that have no bound of their own.
fn bound_strings(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let is_plain_string = map.get("type") == Some(&Value::String("string".into()))
                && !["maxLength", "enum", "const", "pattern", "format"]
                    .iter()
                    .any(|k| map.contains_key(*k));
            if is_plain_string {
                map.insert("maxLength".into(), json!(DEFAULT_MAX_STRING));
            }
            for value in map.values_mut() {
                bound_strings(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(bound_strings),
        _ => {}
    }
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, parameters: Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters,
        }
    }

    #[test]
    fn builds_a_grammar_rooted_at_the_call_tag() {
        let g = call_grammar(&[
            tool("a", json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})),
            tool("b", json!({"type": "object", "properties": {}})),
        ])
        .unwrap();
        assert!(g.contains("root ::= \"<tool_call>\""), "{g}");
        assert!(g.contains("tool-call-body ::="), "{g}");
        assert_eq!(g.matches("root ::=").count(), 1, "{g}");
    }

    #[test]
    fn refuses_bad_names_and_schemas() {
        assert!(call_grammar(&[]).is_err());
        assert!(call_grammar(&[tool("rm -rf", json!({"type": "object"}))]).is_err());
        assert!(call_grammar(&[tool("a", json!("string"))]).is_err());
        assert!(call_grammar(&[tool("a", json!({"type": "array"}))]).is_err());
    }

    #[test]
    fn bounds_plain_strings_only() {
        let mut s = json!({"type": "object", "properties": {
            "free": {"type": "string"},
            "kind": {"type": "string", "enum": ["x"]},
            "short": {"type": "string", "maxLength": 5}
        }});
        bound_strings(&mut s);
        assert_eq!(s["properties"]["free"]["maxLength"], 256);
        assert!(s["properties"]["kind"].get("maxLength").is_none());
        assert_eq!(s["properties"]["short"]["maxLength"], 5);
    }

    #[test]
    fn trigger_matches_text_before_the_tag() {
        let re = regex::Regex::new(&format!("^{}$", lazy_trigger())).unwrap();
        let caps = re.captures("Sure.\n<tool_call>{").unwrap();
        assert_eq!(caps.get(1).unwrap().start(), 6);
    }
}
