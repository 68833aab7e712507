#![allow(clippy::unwrap_used)]
use serde_json::json;

use super::*;
use crate::chat::ToolCall;

fn tool(name: &str, description: &str, args: &[&str]) -> ToolSpec {
    let props: serde_json::Map<String, serde_json::Value> = args
        .iter()
        .map(|a| (a.to_string(), json!({"type": "string"})))
        .collect();
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters: json!({"type": "object", "properties": props}),
    }
}

fn tools() -> Vec<ToolSpec> {
    vec![
        tool(
            "shell",
            "Run a shell command in the workspace.",
            &["command"],
        ),
        tool("file_read", "Read a file in the workspace.", &["path"]),
        tool(
            "file_write",
            "Write a file in the workspace.",
            &["path", "content"],
        ),
        tool(
            "memory_store",
            "Remember a fact for later conversations.",
            &["key", "content"],
        ),
        tool(
            "memory_recall",
            "Search what was remembered about this user.",
            &["query"],
        ),
        tool(
            "cron_add",
            "Schedule a prompt (a reminder or a recurring task).",
            &["at", "every"],
        ),
        tool(
            "lms_upcoming",
            "List course items (assignments, quizzes) due in the next N days.",
            &["days"],
        ),
    ]
}

fn names(picked: &[ToolSpec]) -> Vec<&str> {
    picked.iter().map(|t| t.name.as_str()).collect()
}

#[test]
fn a_request_gets_the_tools_its_words_name() {
    let all = tools();
    let picked = pick(
        &all,
        "Remind me next Tuesday at 9 to call the dentist",
        &[],
        MOST_PICKED,
    );
    assert!(names(&picked).contains(&"cron_add"), "{:?}", names(&picked));
    let picked = pick(
        &all,
        "Remember that my sister's birthday is May 3",
        &[],
        MOST_PICKED,
    );
    assert!(
        names(&picked).contains(&"memory_store"),
        "{:?}",
        names(&picked)
    );
    let picked = pick(&all, "What do I have due this week?", &[], MOST_PICKED);
    assert!(
        names(&picked).contains(&"lms_upcoming"),
        "{:?}",
        names(&picked)
    );
    let picked = pick(
        &all,
        "Read notes.txt and tell me what's in it",
        &[],
        MOST_PICKED,
    );
    assert_eq!(names(&picked)[0], "file_read", "{:?}", names(&picked));
}

#[test]
fn a_question_that_needs_no_tool_is_offered_none() {
    let picked = pick(&tools(), "What is the capital of France?", &[], MOST_PICKED);
    assert!(picked.is_empty(), "{:?}", names(&picked));
}

#[test]
fn tools_in_use_stay_and_the_order_is_the_registrys() {
    let all = tools();
    let history = vec![ChatMessage::assistant_calls(
        "",
        vec![ToolCall {
            id: "1".into(),
            name: "lms_upcoming".into(),
            arguments: json!({"days": 7}),
        }],
    )];
    let picked = pick(
        &all,
        "And which of those is a quiz? Write it to a file",
        &history,
        1,
    );
    assert_eq!(names(&picked), ["file_write", "lms_upcoming"]);
}

#[test]
fn the_kin_of_a_tool_in_use_fill_the_free_places() {
    let mut all = tools();
    all.push(tool(
        "cron_remove",
        "Delete a scheduled job by its id.",
        &["id"],
    ));
    all.push(tool("cron_list", "List the scheduled jobs.", &[]));
    let history = vec![ChatMessage::assistant_calls(
        "",
        vec![ToolCall {
            id: "1".into(),
            name: "cron_add".into(),
            arguments: json!({"at": "18:00"}),
        }],
    )];
    // The follow-up names no tool; the reminder's kin come with it.
    let picked = pick(&all, "Actually, make it 7pm instead.", &history, 4);
    assert_eq!(names(&picked), ["cron_add", "cron_remove", "cron_list"]);
    // Words of the message come first: one place, the file tool takes it.
    let picked = pick(&all, "Now read the file notes.txt", &history, 1);
    assert_eq!(names(&picked), ["file_read", "cron_add"]);
    // Control: with no tool in use the follow-up gets none.
    assert!(pick(&all, "Actually, make it 7pm instead.", &[], 4).is_empty());
    assert_eq!(family("house__lights_on"), Some("house"));
    assert_eq!(family("cron_add"), Some("cron"));
    assert_eq!(family("shell"), None);
}

#[test]
fn at_most_the_asked_number_are_picked() {
    let picked = pick(
        &tools(),
        "workspace file path command shell read write",
        &[],
        2,
    );
    assert_eq!(picked.len(), 2, "{:?}", names(&picked));
}

#[test]
fn small_windows_get_a_handful_unless_configured() {
    assert_eq!(per_turn(None, Some(4_096)), MOST_PICKED);
    assert_eq!(
        per_turn(None, Some(32_768)),
        0,
        "large windows see every tool"
    );
    assert_eq!(per_turn(None, None), 0, "a cloud model names none");
    assert_eq!(per_turn(Some(0), Some(4_096)), 0);
    assert_eq!(per_turn(Some(7), None), 7);
}

#[test]
fn the_largest_are_measured_in_the_registrys_order() {
    let all = tools();
    let largest = largest(&all, 2);
    assert_eq!(names(&largest), ["memory_store", "cron_add"]);
}
