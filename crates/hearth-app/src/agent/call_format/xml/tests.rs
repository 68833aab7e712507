//! Unit tests of the lenient tool-call parser, and a property test that
//! arbitrary text never makes it panic.

use serde_json::json;

use super::*;

fn calls(reply: &str) -> Vec<(String, Value)> {
    parse_reply(reply)
        .calls
        .into_iter()
        .map(|c| (c.name, c.arguments))
        .collect()
}

#[test]
fn tool_call_tags_in_their_spellings() {
    for (open, close) in [
        ("<tool_call>", "</tool_call>"),
        ("<toolcall>", "</toolcall>"),
        ("<tool-call>", "</tool-call>"),
        ("<TOOL_CALL>", "</TOOL_CALL>"),
    ] {
        let reply = format!(
            "Checking.\n{open}\n{{\"name\": \"file_read\", \"arguments\": {{\"path\": \"a.txt\"}}}}\n{close}"
        );
        let parsed = parse_reply(&reply);
        assert_eq!(parsed.calls.len(), 1, "{open}");
        assert_eq!(parsed.calls[0].name, "file_read");
        assert_eq!(parsed.calls[0].arguments, json!({"path": "a.txt"}));
        assert_eq!(parsed.calls[0].id, "call_1");
        assert_eq!(parsed.text, "Checking.");
    }
}

#[test]
fn an_unclosed_call_at_the_end_is_read() {
    assert_eq!(
        calls("<tool_call>{\"name\": \"shell\", \"arguments\": {\"command\": \"ls\"}}"),
        [("shell".into(), json!({"command": "ls"}))]
    );
}

#[test]
fn invoke_with_parameter_tags() {
    let reply = "<function_calls>\n<invoke name=\"file_write\">\n<parameter name=\"path\">notes.md</parameter>\n<parameter name=\"content\">hello\nworld</parameter>\n<parameter name=\"append\">true</parameter>\n</invoke>\n</function_calls>";
    let parsed = parse_reply(reply);
    assert_eq!(parsed.calls[0].name, "file_write");
    assert_eq!(
        parsed.calls[0].arguments,
        json!({"path": "notes.md", "content": "hello\nworld", "append": true})
    );
    assert_eq!(parsed.text, "");
}

#[test]
fn function_equals_form() {
    assert_eq!(
        calls("<function=glob>{\"pattern\": \"*.rs\"}</function>"),
        [("glob".into(), json!({"pattern": "*.rs"}))]
    );
    assert_eq!(
        calls(
            "<tool_call>\n<function=shell>\n<parameter=command>\necho hi\n</parameter>\n</function>\n</tool_call>"
        ),
        [("shell".into(), json!({"command": "echo hi"}))]
    );
}

#[test]
fn fenced_json_calls_and_plain_code_blocks() {
    let reply =
        "I'll list it.\n```json\n{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}\n```";
    // hearth's protocol: a fenced example is text, never a call.
    let parsed = parse_reply(reply);
    assert!(parsed.calls.is_empty(), "{parsed:?}");
    assert!(parsed.text.contains("list_dir"));
    // A protocol that says fenced JSON is a call.
    let fenced = Dialects { fenced_json: true };
    let parsed = parse_reply_with(reply, fenced);
    assert_eq!(parsed.calls[0].name, "list_dir");
    assert_eq!(parsed.text, "I'll list it.");
    let code = "Here is code:\n```json\n{\"a\": 1}\n```\nand more";
    let parsed = parse_reply_with(code, fenced);
    assert!(parsed.calls.is_empty());
    assert!(parsed.text.contains("{\"a\": 1}"), "{}", parsed.text);
}

#[test]
fn several_calls_and_string_arguments() {
    let reply = "<tool_call>{\"name\": \"a\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call> then <tool_call>{\"name\": \"b\", \"parameters\": {}}</tool_call>";
    let parsed = parse_reply(reply);
    assert_eq!(
        parsed
            .calls
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(parsed.calls[0].arguments, json!({"x": 1}));
    assert_eq!(parsed.calls[1].id, "call_2");
    assert_eq!(parsed.text, "then");
}

#[test]
fn think_blocks_are_reasoning_even_unclosed() {
    let parsed = parse_reply("<think>plan</think>Answer.<think>more");
    assert_eq!(parsed.text, "Answer.");
    assert_eq!(parsed.reasoning, "plan\nmore");
    let parsed = parse_reply("opened by the template</think>Done.");
    assert_eq!(
        (parsed.reasoning.as_str(), parsed.text.as_str()),
        ("opened by the template", "Done.")
    );
}

#[test]
fn echoed_tool_results_are_not_text() {
    let parsed = parse_reply(
        "<tool_result name=\"file_read\" status=\"ok\">\nhi\n</tool_result>\nThe file says hi.",
    );
    assert_eq!(parsed.text, "The file says hi.");
    assert_eq!(
        parse_reply("Done. <tool_result name=\"x\" status=\"error\">cut").text,
        "Done."
    );
}

#[test]
fn malformed_calls_are_reported_not_dropped() {
    let parsed =
        parse_reply("<tool_call>{\"name\": \"shell\", \"arguments\": {\"command\": </tool_call>");
    assert!(parsed.calls.is_empty());
    assert_eq!(parsed.malformed.len(), 1);
    assert!(
        parsed.malformed[0].contains("not valid JSON"),
        "{:?}",
        parsed.malformed
    );
    let parsed = parse_reply("<tool_call>{\"arguments\": {}}</tool_call>");
    assert!(parsed.malformed[0].contains("no \"name\""));
    let parsed = parse_reply("<tool_call>{\"name\": \"x\", \"arguments\": [1]}</tool_call>");
    assert!(parsed.malformed[0].contains("JSON object"));
}

#[test]
fn arbitrary_text_never_panics() {
    // A deterministic xorshift generator stitches random fragments: the
    // parser's own tags, brackets, quotes, fences and multi-byte characters.
    const FRAGMENTS: [&str; 24] = [
        "<tool_call>",
        "</tool_call>",
        "<toolcall>",
        "<tool-call>",
        "<invoke name=\"",
        "\">",
        "</invoke>",
        "<parameter name=\"k\">",
        "</parameter>",
        "<function=",
        "</function>",
        "```",
        "```json\n",
        "<think>",
        "</think>",
        "{",
        "}",
        "[",
        "]",
        "\"",
        "\\",
        "name",
        "é🦀中",
        "\n",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..20_000 {
        let len = (next() % 24) as usize;
        let mut s = String::new();
        for _ in 0..len {
            let r = next();
            if r % 5 == 0 {
                s.push(char::from_u32((r >> 8) as u32 % 0x11_0000).unwrap_or('x'));
            } else {
                s.push_str(FRAGMENTS[(r >> 3) as usize % FRAGMENTS.len()]);
            }
        }
        let parsed = parse_reply(&s);
        assert!(
            parsed.calls.iter().all(|c| c.arguments.is_object()),
            "{s:?}"
        );
    }
}
