use tokio_util::sync::CancellationToken;

use super::*;
use crate::chat::{ChatMessage, Role};
use crate::providers::ScriptedProvider;

/// `[system, (user, assistant) × turns, current user]`.
fn prompt(turns: usize, each: usize) -> Vec<ChatMessage> {
    let mut m = vec![ChatMessage::system("You help.")];
    for i in 0..turns {
        m.push(ChatMessage::user(format!(
            "question {i} {}",
            "q".repeat(each)
        )));
        m.push(ChatMessage::assistant(format!(
            "answer {i} {}",
            "a".repeat(each)
        )));
    }
    m.push(ChatMessage::user("the current question"));
    m
}

fn window(messages: &mut Vec<ChatMessage>) -> Window<'_> {
    let current = messages.len() - 1;
    Window { messages, current }
}

#[test]
fn old_tool_results_are_cut_and_the_current_turn_is_not() {
    let big = "x".repeat(10_000);
    let mut m = vec![
        ChatMessage::system("s"),
        ChatMessage::user("read it"),
        ChatMessage::assistant("<tool_call>{}</tool_call>"),
        ChatMessage::user(format!(
            "<tool_result name=\"file_read\" status=\"ok\">\n{big}\n</tool_result>"
        )),
        ChatMessage::assistant("done"),
        ChatMessage::user("again"),
        ChatMessage::user(format!(
            "<tool_result name=\"file_read\" status=\"ok\">\n{big}\n</tool_result>"
        )),
    ];
    let current_result = m[6].content.clone();
    let mut w = Window {
        messages: &mut m,
        current: 5,
    };
    assert_eq!(trim_old_tool_results(&mut w, 2_000), 1);
    assert!(m[3].content.chars().count() < 2_100);
    assert!(m[3].content.contains("characters cut"));
    assert_eq!(m[6].content, current_result);
}

#[test]
fn the_budget_drops_whole_old_turns_but_never_the_current_one() {
    let mut m = prompt(10, 1_000);
    let mut w = window(&mut m);
    let dropped = trim_budget(&mut w, 8_000);
    assert!(dropped >= 6 && dropped.is_multiple_of(2), "{dropped}");
    assert!(w.chars() <= 8_000);
    assert_eq!(m[0].role, Role::System);
    assert_eq!(m[1].role, Role::User, "history starts at a user turn");
    assert_eq!(m.last().unwrap().content, "the current question");

    // A budget smaller than the current turn empties the history only.
    let mut m = prompt(3, 100);
    let mut w = window(&mut m);
    trim_budget(&mut w, 5);
    assert_eq!(m.len(), 2);
    assert_eq!(m[1].content, "the current question");
}

#[test]
fn emergency_drops_the_oldest_third() {
    let mut m = prompt(9, 10);
    let mut w = window(&mut m);
    assert_eq!(drop_oldest_third(&mut w), 6);
    assert_eq!(w.current, 13);
    assert!(m[1].content.starts_with("question 3"));
    let mut only_current = vec![ChatMessage::user("hi")];
    assert_eq!(drop_oldest_third(&mut window(&mut only_current)), 0);
}

const SECRET_ID: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";

fn long_history_with_identifiers() -> Vec<ChatMessage> {
    let mut m = prompt(8, 400);
    m[1].content = format!(
        "Please track ticket {SECRET_ID}; the logs are in /var/log/app/error.log and the fix is commit a1b2c3d4e5f6."
    );
    m[3].content = "See https://example.org/issues/42 for the report.".into();
    m
}

#[tokio::test]
async fn compression_runs_past_half_the_window_and_keeps_identifiers() {
    // The model's summary forgets most identifiers; they are added back.
    let provider = ScriptedProvider::new(["The user asked to track a ticket and read logs."])
        .with_context_window(2_000);
    let mut m = long_history_with_identifiers();
    let before = m.len();
    let mut w = window(&mut m);
    let limits = ContextLimits::default();
    let done = compress(&provider, "c", &mut w, &limits, &CancellationToken::new())
        .await
        .unwrap();
    assert!(done);
    let current = w.current;
    assert!(m.len() < before);
    assert_eq!(m[current].content, "the current question");
    let summary = &m[1].content;
    assert!(summary.starts_with("[Summary of the earlier conversation]"));
    for id in [
        SECRET_ID,
        "/var/log/app/error.log",
        "a1b2c3d4e5f6",
        "https://example.org/issues/42",
    ] {
        assert!(summary.contains(id), "{id} kept: {summary}");
    }
    assert_eq!(m[2].role, Role::Assistant);
    assert_eq!(m[3].role, Role::User, "kept history starts at a user turn");
    // The summariser saw the old turns, with the identifiers.
    let request = &provider.requests()[0];
    assert!(request.messages[1].content.contains(SECRET_ID));
    assert!(request.conversation.ends_with("#summary"));
    assert!(request.internal, "a summary never streams to the user");
}

#[tokio::test]
async fn no_compression_below_half_the_window_or_without_a_window() {
    let provider = ScriptedProvider::new(["unused"]).with_context_window(100_000);
    let mut m = long_history_with_identifiers();
    let limits = ContextLimits::default();
    let cancel = CancellationToken::new();
    assert!(
        !compress(&provider, "c", &mut window(&mut m), &limits, &cancel)
            .await
            .unwrap()
    );
    let no_window = ScriptedProvider::new(["unused"]);
    assert!(
        !compress(&no_window, "c", &mut window(&mut m), &limits, &cancel)
            .await
            .unwrap()
    );
    assert!(provider.requests().is_empty() && no_window.requests().is_empty());
}
