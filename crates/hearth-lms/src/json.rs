//! Small readers for JSON payloads whose shape a site promises but a test
//! cannot trust: a missing list is an error naming it, a missing scalar is
//! `None`, never a panic.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::LmsError;

/// `value[key]` as an array, or a malformed-payload error naming `what`.
pub fn array<'a>(value: &'a Value, key: &str, what: &str) -> Result<&'a Vec<Value>, LmsError> {
    value
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| LmsError::Malformed(format!("{what}: no `{key}` list")))
}

/// The value itself as an array.
pub fn as_array<'a>(value: &'a Value, what: &str) -> Result<&'a Vec<Value>, LmsError> {
    value
        .as_array()
        .ok_or_else(|| LmsError::Malformed(format!("{what}: expected a JSON list")))
}

pub fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// An id that may be a number or a string, as text.
pub fn id_of(value: &Value, key: &str) -> Option<String> {
    match value.get(key)? {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// A Unix timestamp field; 0 and absent mean none.
pub fn unix_of(value: &Value, key: &str) -> Option<DateTime<Utc>> {
    value
        .get(key)
        .and_then(Value::as_i64)
        .filter(|t| *t > 0)
        .and_then(|t| DateTime::from_timestamp(t, 0))
}

/// An ISO 8601 (RFC 3339) field.
pub fn iso_of(value: &Value, key: &str) -> Option<DateTime<Utc>> {
    str_of(value, key)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|d| d.with_timezone(&Utc))
}
