//! What makes a tool offerable: a name a model can write and a template
//! can show unescaped, and parameters a grammar can hold. The gateway
//! checks a client's tools with it (a 400 naming `tools`), the engine
//! before llama.cpp sees them.

use serde_json::Value;

use super::ToolSpec;

/// The most repetitions one grammar rule may take (`minItems`,
/// `minLength`): llama.cpp's grammar refuses more.
pub const MOST_REPEATS: u64 = 2000;

/// Why a tool cannot be offered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolSpecError {
    #[error("tool name {0:?} must be 1-64 characters of letters, digits, `_`, `-` or `.`")]
    Name(String),
    #[error("the parameters of tool `{0}` must be a JSON schema of type object")]
    NotObject(String),
    #[error(
        "tool `{tool}`: `{key}: {value}` asks for more than the {MOST_REPEATS} repetitions a grammar can hold"
    )]
    TooManyRepeats {
        tool: String,
        key: &'static str,
        value: u64,
    },
}

impl ToolSpec {
    /// Whether this tool can be offered to a model, and why not.
    pub fn check(&self) -> Result<(), ToolSpecError> {
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 64
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
        if !name_ok {
            return Err(ToolSpecError::Name(self.name.clone()));
        }
        match &self.parameters {
            Value::Object(map) if map.get("type").is_none_or(|t| t == "object") => {
                repeats(&self.parameters).map_err(|(key, value)| ToolSpecError::TooManyRepeats {
                    tool: self.name.clone(),
                    key,
                    value,
                })
            }
            _ => Err(ToolSpecError::NotObject(self.name.clone())),
        }
    }
}

/// The first lower bound on a repetition above [`MOST_REPEATS`], anywhere
/// in `schema`. (Upper bounds above it are no bound to llama.cpp.)
fn repeats(schema: &Value) -> Result<(), (&'static str, u64)> {
    match schema {
        Value::Object(map) => {
            for key in ["minItems", "minLength", "minProperties"] {
                if let Some(n) = map.get(key).and_then(Value::as_u64)
                    && n > MOST_REPEATS
                {
                    return Err((key, n));
                }
            }
            map.values().try_for_each(repeats)
        }
        Value::Array(items) => items.iter().try_for_each(repeats),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn spec(name: &str, parameters: Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters,
        }
    }

    #[test]
    fn names_a_model_could_not_write_or_a_template_would_break_are_refused() {
        let fine = json!({"type": "object", "properties": {"x": {"type": "string"}}});
        for good in ["get_weather", "math.factorial", "a-b", &"x".repeat(64)] {
            assert_eq!(spec(good, fine.clone()).check(), Ok(()), "{good}");
        }
        for bad in [
            "",
            "f\u{1}\n",
            "<tool_call>",
            "a</tool_call><tool_call>",
            "f\"x",
            "f x",
            "naïve",
            &"x".repeat(65),
        ] {
            let e = spec(bad, fine.clone()).check().unwrap_err();
            assert_eq!(e, ToolSpecError::Name(bad.into()));
            assert!(!e.to_string().contains('\u{1}'), "escaped: {e}");
        }
    }

    #[test]
    fn parameters_must_be_an_object_schema_a_grammar_can_hold() {
        assert!(matches!(
            spec("f", json!({"type": "string"})).check(),
            Err(ToolSpecError::NotObject(_))
        ));
        assert!(matches!(
            spec("f", json!([1])).check(),
            Err(ToolSpecError::NotObject(_))
        ));
        let deep = json!({"type": "object", "properties": {"x": {"type": "array",
            "items": {"type": "string", "minLength": 1_000_000}}}});
        assert_eq!(
            spec("f", deep).check(),
            Err(ToolSpecError::TooManyRepeats {
                tool: "f".into(),
                key: "minLength",
                value: 1_000_000
            })
        );
        let bounded = json!({"type": "object", "properties": {"x": {"type": "array",
            "minItems": 2000, "maxItems": 1_000_000}}});
        assert_eq!(spec("f", bounded).check(), Ok(()));
    }
}
