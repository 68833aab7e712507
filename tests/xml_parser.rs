//! The tool-call parser against realistic outputs of local models, kept as
//! fixtures in `tests/fixtures/tool_calls.json` (malformed ones included).
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use hearth::agent::call_format::xml::{Dialects, parse_reply_with};
use serde_json::Value;

#[test]
fn fixtures_parse_as_expected() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tool_calls.json"
    );
    let fixtures: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(fixtures.len() >= 20);
    for f in &fixtures {
        let name = f["name"].as_str().unwrap();
        // Fenced JSON is a call only in fixtures for a protocol that says so.
        let dialects = Dialects {
            fenced_json: f["fenced_json"].as_bool().unwrap_or(false),
        };
        let parsed = parse_reply_with(f["output"].as_str().unwrap(), dialects);
        let calls: Vec<Value> = parsed
            .calls
            .iter()
            .map(|c| Value::Array(vec![Value::String(c.name.clone()), c.arguments.clone()]))
            .collect();
        assert_eq!(Value::Array(calls), f["calls"], "{name}: calls");
        assert_eq!(parsed.text, f["text"].as_str().unwrap(), "{name}: text");
        assert_eq!(
            parsed.malformed.len() as u64,
            f["malformed"].as_u64().unwrap(),
            "{name}: malformed {:?}",
            parsed.malformed
        );
        assert!(
            !parsed.text.contains("<tool_call>") || name.starts_with("mentions"),
            "{name}"
        );
        assert!(!parsed.text.contains("<think>"), "{name}");
    }
}
