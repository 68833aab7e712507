//! Reading calls written as JSON: the shapes families use for one call,
//! JSON values one after another, and the check against the offered tools.

use serde_json::Value;

use hearth_core::chat::schema::{SchemaError, validate};
use hearth_core::chat::{ToolCall, ToolSpec};

/// Why text the model wrote is not a call to an offered tool; the text is
/// shown to the model so that it can write the call again.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("a tool call must be a JSON object")]
    NotAnObject,
    #[error("the tool call has no \"name\"")]
    NoName,
    #[error("unknown tool `{0}`")]
    UnknownTool(String),
    #[error("the arguments of `{name}` are not JSON: {source}")]
    NotJson {
        name: String,
        source: serde_json::Error,
    },
    /// Arguments that could not be read at all: the start of them.
    #[error("the arguments of `{name}` are not JSON: {excerpt}")]
    Unreadable { name: String, excerpt: String },
    #[error("the arguments of `{name}`: {source}")]
    Arguments {
        name: String,
        source: Box<SchemaError>,
    },
}

impl CallError {
    /// Arguments to `name` that are no JSON value: their start, for the model.
    pub fn unreadable(name: &str, text: &str) -> Self {
        Self::Unreadable {
            name: name.to_string(),
            excerpt: excerpt(text.trim()),
        }
    }
}

/// The JSON value at the head of `text` (after whitespace) and the rest.
pub fn leading_value(text: &str) -> Option<(Value, &str)> {
    let trimmed = text.trim_start();
    let mut stream = serde_json::Deserializer::from_str(trimmed).into_iter::<Value>();
    match stream.next() {
        Some(Ok(value)) => Some((value, &trimmed[stream.byte_offset()..])),
        _ => None,
    }
}

/// A call object in any of the shapes families write: `{"name",
/// "arguments"}`, `{"name", "parameters"}` (Llama 3), `{"tool_name",
/// "parameters"}` (Command R), `{"type": "function", "function": {…}}`;
/// the arguments may be a JSON string. Returns the name, the arguments and
/// the id when the object carries one.
pub fn call_parts(value: &Value) -> Result<(String, Value, Option<String>), CallError> {
    let object = value.as_object().ok_or(CallError::NotAnObject)?;
    if let Some(inner) = object.get("function").filter(|f| f.is_object()) {
        let (name, arguments, _) = call_parts(inner)?;
        let id = object.get("id").and_then(Value::as_str).map(String::from);
        return Ok((name, arguments, id));
    }
    let name = ["name", "tool_name"]
        .iter()
        .find_map(|k| object.get(*k).and_then(Value::as_str))
        .ok_or(CallError::NoName)?;
    let arguments = ["arguments", "parameters"]
        .iter()
        .find_map(|k| object.get(*k))
        .cloned()
        .unwrap_or_else(|| Value::Object(Default::default()));
    let id = ["id", "tool_call_id"]
        .iter()
        .find_map(|k| object.get(*k).and_then(Value::as_str))
        .map(String::from);
    Ok((name.to_string(), arguments, id))
}

/// A call to `name` with `arguments` (an object, or JSON text of one),
/// checked against the offered tools.
pub fn checked(
    name: &str,
    arguments: Value,
    tools: &[ToolSpec],
    id: String,
) -> Result<ToolCall, CallError> {
    let tool = tools
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| CallError::UnknownTool(name.to_string()))?;
    let arguments = match arguments {
        Value::String(s) if s.trim().is_empty() => Value::Object(Default::default()),
        Value::String(s) => serde_json::from_str(&s).map_err(|source| CallError::NotJson {
            name: name.to_string(),
            source,
        })?,
        v => v,
    };
    validate(&arguments, &tool.parameters).map_err(|source| CallError::Arguments {
        name: name.to_string(),
        source: Box::new(source),
    })?;
    Ok(ToolCall {
        id,
        name: name.to_string(),
        arguments,
    })
}

/// Reads a JSON array of call objects (or one object) at the head of
/// `text` into `out`; returns the text after it.
pub fn call_list<'t>(
    text: &'t str,
    tools: &[ToolSpec],
    new_id: &mut dyn FnMut() -> String,
    out: &mut super::Calls,
) -> &'t str {
    let Some((value, rest)) = leading_value(text) else {
        out.malformed.push(format!(
            "the tool call is not JSON: {}",
            excerpt(text.trim())
        ));
        return "";
    };
    let items = match value {
        Value::Array(items) => items,
        other => vec![other],
    };
    for item in &items {
        match call_parts(item).and_then(|(name, args, id)| {
            checked(&name, args, tools, id.unwrap_or_else(&mut *new_id))
        }) {
            Ok(call) => out.calls.push(call),
            Err(e) => out.malformed.push(e.to_string()),
        }
    }
    rest
}

/// The head of `text`, for a message about it.
pub fn excerpt(text: &str) -> String {
    const LIMIT: usize = 120;
    match text.char_indices().nth(LIMIT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_every_call_shape() {
        for v in [
            json!({"name": "f", "arguments": {"a": 1}}),
            json!({"name": "f", "parameters": {"a": 1}}),
            json!({"tool_name": "f", "parameters": {"a": 1}}),
            json!({"type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}),
        ] {
            let (name, args, _) = call_parts(&v).unwrap();
            assert_eq!(name, "f");
            let tools = [ToolSpec {
                name: "f".into(),
                description: String::new(),
                parameters: json!({"type": "object"}),
            }];
            let call = checked(&name, args, &tools, "x".into()).unwrap();
            assert_eq!(call.arguments, json!({"a": 1}), "{v}");
        }
        assert!(call_parts(&json!([1])).is_err());
        assert!(call_parts(&json!({"arguments": {}})).is_err());
    }

    #[test]
    fn leading_value_leaves_the_rest() {
        let (v, rest) = leading_value("  {\"a\": 1} and more").unwrap();
        assert_eq!(v, json!({"a": 1}));
        assert_eq!(rest, " and more");
        assert!(leading_value("{\"a\": ").is_none());
    }
}
