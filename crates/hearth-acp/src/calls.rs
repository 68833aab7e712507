//! Tool calls as an editor shows them over ACP: one `toolCallId` from the
//! permission question to the end of the call, the arguments as
//! `rawInput`, the files it touches as `locations`, and its output as
//! `content` when it ends.

use serde_json::{Value, json};

/// The most output shown in the editor for one call.
const OUTPUT_CHARS: usize = 4_000;

/// What kind of call `tool` is, in ACP's words.
pub fn kind(tool: &str) -> &'static str {
    match tool {
        "file_read" | "memory_recall" | "list_dir" | "glob" => "read",
        "file_write" | "file_edit" => "edit",
        "shell" => "execute",
        "http_request" => "fetch",
        _ => "other",
    }
}

/// The files a call names (`path`), for the editor to open.
pub fn locations(arguments: &Value) -> Value {
    let paths: Vec<Value> = ["path", "file", "file_path"]
        .iter()
        .filter_map(|k| arguments.get(k).and_then(Value::as_str))
        .map(|p| json!({ "path": p }))
        .collect();
    Value::Array(paths)
}

/// A call as the `toolCall` of a `session/update` or a permission request.
pub fn call(id: &str, tool: &str, arguments: &Value, status: &str) -> Value {
    json!({
        "toolCallId": id,
        "title": tool,
        "kind": kind(tool),
        "status": status,
        "rawInput": arguments,
        "locations": locations(arguments),
    })
}

/// The `session/update` that starts showing a call.
pub fn started(id: &str, tool: &str, arguments: &Value, status: &str) -> Value {
    let mut update = call(id, tool, arguments, status);
    update["sessionUpdate"] = json!("tool_call");
    update
}

/// A `tool_call_update` to `status`, with `text` as its content if any.
pub fn update(id: &str, status: &str, text: Option<&str>) -> Value {
    let mut update = json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": id,
        "status": status,
    });
    if let Some(text) = text {
        let mut shown: String = text.chars().take(OUTPUT_CHARS).collect();
        let total = text.chars().count();
        if total > OUTPUT_CHARS {
            shown.push_str(&format!("\n… ({} more characters)", total - OUTPUT_CHARS));
        }
        update["content"] =
            json!([{ "type": "content", "content": { "type": "text", "text": shown } }]);
    }
    update
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_carries_its_input_its_files_and_its_output() {
        let args = json!({"path": "notes/a.md", "content": "x"});
        let started = started("call_1", "file_write", &args, "pending");
        assert_eq!(started["sessionUpdate"], "tool_call");
        assert_eq!(started["rawInput"], args);
        assert_eq!(started["locations"], json!([{"path": "notes/a.md"}]));
        assert_eq!(started["kind"], "edit");
        let done = update("call_1", "completed", Some(&"y".repeat(5_000)));
        let text = done["content"][0]["content"]["text"].as_str().unwrap();
        assert!(text.ends_with("(1000 more characters)"), "{text}");
        assert!(
            update("call_1", "in_progress", None)
                .get("content")
                .is_none()
        );
    }
}
