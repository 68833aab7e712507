//! A small JSON-schema checker for tool arguments, shared by the engine
//! (which checks a call made under its grammar) and the tool registry.
//!
//! It covers what tool schemas use: `type`, `properties`, `required`,
//! `additionalProperties: false`, `enum`, `const`, `items`, string lengths
//! and number bounds. Keywords it does not know are ignored (the grammar has
//! already shaped the output; this is the check that it did).

use serde_json::{Map, Value};

/// Where in the arguments the first problem is (`$.tags[0]`), and what it is.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchemaError {
    #[error("{path} must be {expected}")]
    NotConst { path: String, expected: Value },
    #[error("{path} must be one of {options}")]
    NotOneOf { path: String, options: Value },
    #[error("{path} must be of type {kinds}")]
    WrongType { path: String, kinds: String },
    #[error("{path} is required")]
    Missing { path: String },
    #[error("{path} is not an allowed property")]
    NotAllowed { path: String },
    #[error("{path} is shorter than {min} characters")]
    TooShort { path: String, min: u64 },
    #[error("{path} is longer than {max} characters")]
    TooLong { path: String, max: u64 },
    #[error("{path} is below {min}")]
    Below { path: String, min: f64 },
    #[error("{path} is above {max}")]
    Above { path: String, max: f64 },
}

/// Checks `value` against `schema`; the error names the path.
pub fn validate(value: &Value, schema: &Value) -> Result<(), SchemaError> {
    check(value, schema, "$")
}

fn check(value: &Value, schema: &Value, path: &str) -> Result<(), SchemaError> {
    let Some(schema) = schema.as_object() else {
        return Ok(());
    };
    accepted(value, schema, path)?;
    match value {
        Value::Object(map) => check_object(map, schema, path),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(item, item_schema, &format!("{path}[{i}]"))?;
                }
            }
            Ok(())
        }
        _ => bounds(value, schema, path),
    }
}

/// `const`, `enum` and `type`: whether a value of this kind is accepted.
fn accepted(value: &Value, schema: &Map<String, Value>, path: &str) -> Result<(), SchemaError> {
    let path_ = || path.to_string();
    if let Some(expected) = schema.get("const")
        && value != expected
    {
        return Err(SchemaError::NotConst {
            path: path_(),
            expected: expected.clone(),
        });
    }
    if let Some(Value::Array(options)) = schema.get("enum")
        && !options.contains(value)
    {
        return Err(SchemaError::NotOneOf {
            path: path_(),
            options: Value::Array(options.clone()),
        });
    }
    if let Some(kind) = schema.get("type") {
        let kinds: Vec<&str> = match kind {
            Value::String(k) => vec![k.as_str()],
            Value::Array(ks) => ks.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !kinds.is_empty() && !kinds.iter().any(|k| is_type(value, k)) {
            return Err(SchemaError::WrongType {
                path: path_(),
                kinds: kinds.join(" or "),
            });
        }
    }
    Ok(())
}

/// `required`, `properties` and `additionalProperties`.
fn check_object(
    map: &Map<String, Value>,
    schema: &Map<String, Value>,
    path: &str,
) -> Result<(), SchemaError> {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(Value::Array(required)) = schema.get("required") {
        for key in required.iter().filter_map(Value::as_str) {
            if !map.contains_key(key) {
                return Err(SchemaError::Missing {
                    path: format!("{path}.{key}"),
                });
            }
        }
    }
    for (key, v) in map {
        match properties.and_then(|p| p.get(key)) {
            Some(sub) => check(v, sub, &format!("{path}.{key}"))?,
            None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                return Err(SchemaError::NotAllowed {
                    path: format!("{path}.{key}"),
                });
            }
            None => {}
        }
    }
    Ok(())
}

/// A string's length and a number's size.
fn bounds(value: &Value, schema: &Map<String, Value>, path: &str) -> Result<(), SchemaError> {
    let path_ = || path.to_string();
    match value {
        Value::String(s) => {
            let len = s.chars().count() as u64;
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && len < min
            {
                return Err(SchemaError::TooShort { path: path_(), min });
            }
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
                && len > max
            {
                return Err(SchemaError::TooLong { path: path_(), max });
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
                && x < min
            {
                return Err(SchemaError::Below { path: path_(), min });
            }
            if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
                && x > max
            {
                return Err(SchemaError::Above { path: path_(), max });
            }
        }
        _ => {}
    }
    Ok(())
}

fn is_type(value: &Value, kind: &str) -> bool {
    match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn checks_the_usual_keywords() {
        let schema = json!({
            "type": "object",
            "properties": {
                "unit": {"enum": ["c", "f"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}}
            },
            "required": ["unit"],
            "additionalProperties": false
        });
        assert!(validate(&json!({"unit": "c", "days": 3, "tags": ["a"]}), &schema).is_ok());
        assert_eq!(
            validate(&json!({"days": 3}), &schema),
            Err(SchemaError::Missing {
                path: "$.unit".into()
            })
        );
        assert_eq!(
            validate(&json!({"days": 3}), &schema)
                .unwrap_err()
                .to_string(),
            "$.unit is required"
        );
        assert!(validate(&json!({"unit": "k"}), &schema).is_err());
        assert!(validate(&json!({"unit": "c", "days": 9}), &schema).is_err());
        assert!(validate(&json!({"unit": "c", "days": 2.5}), &schema).is_err());
        assert!(
            validate(&json!({"unit": "c", "tags": ["long"]}), &schema)
                .unwrap_err()
                .to_string()
                .contains("$.tags[0]")
        );
        assert!(
            validate(&json!({"unit": "c", "x": 1}), &schema)
                .unwrap_err()
                .to_string()
                .contains("not an allowed")
        );
    }
}
