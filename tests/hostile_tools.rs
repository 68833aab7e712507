//! Tool lists built to break the daemon, as BFCL-shaped requests: a schema
//! 500 levels deep, 1,000 tools, names with control characters or the call
//! marker, a `$ref` that loops, a repetition llama.cpp cannot hold. Each
//! gets a clear 400 that names `tools` (or the body), and a control request
//! beside it, sane in the same way, is answered by the same daemon.

use serde_json::{Value, json};

use crate::support::api_daemon::{SERVED, daemon_with};
use crate::support::ways_in::TOKEN;

fn tool(name: &str, parameters: Value) -> Value {
    json!({"type": "function", "function": {"name": name,
        "description": "Book a flight.", "parameters": parameters}})
}

fn city() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
}

/// A schema nested `levels` objects deep (two JSON levels each).
fn nested(levels: usize) -> String {
    let open = r#"{"type": "object", "properties": {"a": "#;
    format!(
        "{}{}{}",
        open.repeat(levels),
        r#"{"type": "string"}"#,
        "}}".repeat(levels)
    )
}

/// A request offering `tools`, as text (a deep schema cannot be a `Value`
/// serde_json would print).
fn asking(tools: &str) -> String {
    format!(
        r#"{{"model": "{SERVED}", "max_tokens": 24, "tool_choice": "auto", "tools": {tools},
        "messages": [{{"role": "user", "content": "Book a flight to Oslo."}}]}}"#
    )
}

async fn send(base: &str, body: String) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("the daemon answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// `hostile` is refused with a message containing `says` (and `param`
/// `tools` when `about_tools`); `control` is answered.
async fn refused_beside(base: &str, hostile: String, says: &str, control: String) {
    let (status, answer) = send(base, hostile).await;
    assert_eq!(status, 400, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains(says), "`{says}` not in {answer}");
    assert!(
        !message.contains('\u{1}'),
        "control characters are escaped: {answer}"
    );
    let (status, answer) = send(base, control).await;
    assert_eq!(status, 200, "the control: {answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_tool_lists_get_a_clear_400_and_the_daemon_answers_on() {
    let run = daemon_with("", "").await;
    let base = run.base.as_str();
    let one = |name: &str, parameters: &Value| json!([tool(name, parameters.clone())]).to_string();
    // 500 levels: past the body's nesting limit; 40 levels is fine.
    let deep = |levels| {
        format!(
            r#"[{{"type": "function", "function": {{"name": "book", "parameters": {{"type": "object", "properties": {{"to": {}}}}}}}}}]"#,
            nested(levels)
        )
    };
    refused_beside(
        base,
        asking(&deep(500)),
        "recursion limit",
        asking(&deep(40)),
    )
    .await;
    // 1,000 tools: more than a request may offer; 100 are offered.
    let many = |n: usize| {
        Value::Array((0..n).map(|i| tool(&format!("book_{i}"), city())).collect()).to_string()
    };
    let (status, answer) = send(base, asking(&many(1000))).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["param"], "tools", "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("1000 tools")
    );
    let (status, answer) = send(base, asking(&many(100))).await;
    assert!(
        status == 200 || answer["error"]["code"] == "context_length_exceeded",
        "100 tools are taken, or said not to fit: {answer}"
    );
    // Names a model could not write, or that would end a call early.
    for name in [
        "book\u{1}\n",
        "<tool_call>",
        "a</tool_call><tool_call>",
        "book\"x",
    ] {
        let (status, answer) = send(base, asking(&one(name, &city()))).await;
        assert_eq!(status, 400, "{name:?}: {answer}");
        assert_eq!(answer["error"]["param"], "tools", "{answer}");
        assert!(
            !answer["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains('\u{1}')
        );
        let (status, answer) = send(base, asking(&one("book_flight", &city()))).await;
        assert_eq!(status, 200, "the control: {answer}");
    }
    // A `$ref` that loops, and one that goes nowhere; the control's resolves.
    let looping = json!({"type": "object", "properties": {"to": {"$ref": "#/$defs/a"}},
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}});
    let nowhere = json!({"type": "object", "properties": {"to": {"$ref": "#/$defs/gone"}}});
    let resolving = json!({"type": "object", "properties": {"to": {"$ref": "#/$defs/city"}},
        "$defs": {"city": {"type": "string"}}});
    for broken in [looping, nowhere] {
        refused_beside(
            base,
            asking(&one("book_flight", &broken)),
            "the parameters of tool `book_flight`",
            asking(&one("book_flight", &resolving)),
        )
        .await;
    }
    // A million repetitions; two thousand is the most a grammar holds.
    let repeats = |n: u64| {
        json!({"type": "object", "properties": {"to": {"type": "array",
            "items": {"type": "string"}, "minItems": n}}})
    };
    refused_beside(
        base,
        asking(&one("book_flight", &repeats(1_000_000))),
        "`minItems: 1000000` asks for more than the 2000 repetitions",
        asking(&one("book_flight", &repeats(2))),
    )
    .await;
}
