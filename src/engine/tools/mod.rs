//! Grammar-constrained tool calls.
//!
//! When tools are offered, the sampler carries a GBNF grammar that admits
//! exactly `<tool_call>{"name": <an offered tool>, "arguments": <an object
//! matching that tool's schema>}</tool_call>`. With `tool_choice = auto` the
//! grammar is lazy: it wakes when the model writes `<tool_call>`; with
//! `required` it applies from the first token. The grammar comes from
//! llama.cpp's own JSON-schema converter, after hearth has checked every
//! schema and tool name itself, and with string lengths bounded so a call
//! cannot run away.

mod grammar;

pub use grammar::{call_grammar, lazy_trigger};

use crate::chat::schema::validate;

use crate::chat::{ToolCall, ToolSpec};

/// Parses the text between the call tags and checks it against the offered
/// tools. The error is a sentence for the log (and, later, for the model).
pub fn parse_call(text: &str, tools: &[ToolSpec]) -> Result<ToolCall, String> {
    let value: serde_json::Value =
        serde_json::from_str(text.trim()).map_err(|e| format!("tool call is not JSON: {e}"))?;
    let name = value
        .get("name")
        .and_then(|n| n.as_str())
        .ok_or("tool call has no \"name\"")?;
    let tool = tools
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("unknown tool `{name}`"))?;
    let arguments = match value.get("arguments") {
        None => serde_json::Value::Object(Default::default()),
        // Some models send the arguments as a JSON string.
        Some(serde_json::Value::String(s)) => serde_json::from_str(s)
            .map_err(|e| format!("arguments of `{name}` are not JSON: {e}"))?,
        Some(v) => v.clone(),
    };
    validate(&arguments, &tool.parameters).map_err(|e| format!("arguments of `{name}`: {e}"))?;
    Ok(ToolCall {
        name: name.to_string(),
        arguments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "get_weather".into(),
            description: "Weather for a city".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        }]
    }

    #[test]
    fn parses_and_validates() {
        let call = parse_call(
            r#"{"name": "get_weather", "arguments": {"city": "Oslo"}}"#,
            &tools(),
        )
        .unwrap();
        assert_eq!(call.arguments, json!({"city": "Oslo"}));
        let call = parse_call(
            r#"{"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}"#,
            &tools(),
        )
        .unwrap();
        assert_eq!(call.arguments["city"], "Rome");
    }

    #[test]
    fn refuses_what_does_not_fit() {
        assert!(
            parse_call("{\"name\": \"nope\", \"arguments\": {}}", &tools())
                .unwrap_err()
                .contains("unknown tool")
        );
        assert!(
            parse_call("{\"name\": \"get_weather\", \"arguments\": {}}", &tools())
                .unwrap_err()
                .contains("city")
        );
        assert!(
            parse_call("{\"name\": \"get_wea", &tools())
                .unwrap_err()
                .contains("not JSON")
        );
    }
}
