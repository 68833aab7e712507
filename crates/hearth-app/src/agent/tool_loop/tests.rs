//! The loop against a scripted provider and the real core tools.

use serde_json::json;

use super::*;
use crate::agent::call_format::XmlToolDispatcher;
use crate::agent::context::ContextLimits;
use crate::chat::Role;
use crate::providers::ScriptedProvider;
use crate::security::{Autonomy, SecurityPolicy};

fn tools(dir: &tempfile::TempDir) -> ToolContext {
    ToolContext::new(
        SecurityPolicy::new(&dir.path().join("ws"), Autonomy::Supervised, None).unwrap(),
        Duration::from_secs(5),
    )
}

fn settings(max_iterations: u32) -> LoopSettings {
    LoopSettings {
        max_iterations,
        timeout: Duration::from_secs(30),
        sampling: SamplingParams::greedy(64),
        first_tool_choice: ToolChoice::Auto,
        context: ContextLimits::default(),
        parallel_tools: false,
        offered: None,
    }
}

fn run(
    provider: &ScriptedProvider,
    dir: &tempfile::TempDir,
    max: u32,
    hook: Option<&BeforeToolCall>,
) -> LoopOutcome {
    let registry = ToolRegistry::core();
    let ctx = tools(dir);
    let tool_loop = ToolLoop {
        provider,
        dispatcher: &XmlToolDispatcher,
        registry: &registry,
        tools: &ctx,
        before_tool_call: hook,
        after_tool_call: None,
    };
    let messages = vec![
        ChatMessage::system("sys"),
        ChatMessage::user("Save hi to n.txt and read it back."),
    ];
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(tool_loop.run("t", messages, &settings(max), CancellationToken::new()))
        .unwrap()
}

#[test]
fn write_then_read_then_answer() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new([
        "I'll save it.\n<tool_call>{\"name\": \"file_write\", \"arguments\": {\"path\": \"n.txt\", \"content\": \"hi\"}}</tool_call>",
        "<tool_call>{\"name\": \"file_read\", \"arguments\": {\"path\": \"n.txt\"}}</tool_call>",
        "<think>It worked.</think>The file n.txt says: hi",
    ]);
    let outcome = run(&provider, &dir, 10, None);
    assert_eq!(outcome.text, "The file n.txt says: hi");
    assert!(!outcome.text.contains("<tool_call>") && !outcome.text.contains("<think>"));
    assert_eq!(outcome.iterations, 3);

    // History: call, result, call, result, answer — in order.
    let h = &outcome.history;
    assert_eq!(h.len(), 5);
    match (&h[0], &h[1], &h[2], &h[3], &h[4]) {
        (
            ConversationMessage::AssistantToolCalls {
                text, calls: c1, ..
            },
            ConversationMessage::ToolResults(r1),
            ConversationMessage::AssistantToolCalls { calls: c2, .. },
            ConversationMessage::ToolResults(r2),
            ConversationMessage::Chat(answer),
        ) => {
            assert_eq!(text, "I'll save it.");
            assert_eq!(c1[0].name, "file_write");
            assert!(!r1[0].is_error, "{r1:?}");
            assert_eq!(c2[0].name, "file_read");
            assert_eq!(c2[0].arguments, json!({"path": "n.txt"}));
            assert_eq!(r2[0].content, "hi");
            assert_eq!(answer.role, Role::Assistant);
        }
        other => panic!("unexpected history {other:?}"),
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ws/n.txt")).unwrap(),
        "hi"
    );

    // The third request carried both results back as <tool_result> blocks.
    let requests = provider.requests();
    let last = requests.last().unwrap();
    let results: Vec<&str> = last
        .messages
        .iter()
        .filter(|m| m.content.starts_with("<tool_result"))
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(results.len(), 2);
    assert!(
        results[1].contains("name=\"file_read\" status=\"ok\">\nhi\n"),
        "{results:?}"
    );
    assert!(!last.tools.is_empty(), "tools are offered");
}

#[test]
fn a_repeated_call_gets_a_note_and_the_next_round_must_answer() {
    let dir = tempfile::tempdir().unwrap();
    let same = "<tool_call>{\"name\": \"list_dir\", \"arguments\": {}}</tool_call>";
    let provider = ScriptedProvider::new([same, same, same]);
    let outcome = run(&provider, &dir, 10, None);
    let results = tool_results(&outcome);
    assert!(!results[0].is_error);
    assert!(
        results[1].is_error && results[1].content.contains("previous step"),
        "identical call not re-run"
    );
    let last = provider.requests().pop().unwrap();
    assert_eq!(
        last.tool_choice,
        ToolChoice::None,
        "the third round offers no tools"
    );
    assert!(
        last.messages
            .last()
            .unwrap()
            .content
            .ends_with("Do not call any tool.")
    );
    // The third reply was a call again: not run; the user gets the last result.
    assert_eq!(outcome.iterations, 3);
    assert!(
        outcome.text.starts_with("Here is what `list_dir` returned"),
        "{}",
        outcome.text
    );
}

#[test]
fn unknown_and_malformed_calls_then_the_iteration_limit() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new([
        "<tool_call>{\"name\": \"launch_rockets\", \"arguments\": {}}</tool_call>",
        "<tool_call>{\"name\": \"glob\"",
        "<tool_call>{\"name\": \"list_dir\", \"arguments\": {}}</tool_call>",
        "<tool_call>{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}</tool_call>",
    ]);
    let outcome = run(&provider, &dir, 4, None);
    let results = tool_results(&outcome);
    assert!(results[0].is_error && results[0].content.contains("unknown tool"));
    assert!(results[1].is_error && results[1].content.contains("could not be read"));
    assert!(
        outcome.text.contains("stopped after 4 rounds"),
        "{}",
        outcome.text
    );
}

/// A small model that quotes the malformed-call hint back: the hint it
/// was given holds no tag a parser reads, so quoting it writes no call
/// (it used to loop, each quote a new broken call, for every round).
#[test]
fn the_malformed_call_hint_is_inert_when_quoted() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new(["<tool_call>{\"name\": \"glob\"", "ok"]);
    let outcome = run(&provider, &dir, 4, None);
    let hint = &tool_results(&outcome)[0].content;
    assert!(hint.contains("could not be read"), "{hint}");
    assert!(
        hint.contains("tool_call"),
        "the shape is still shown: {hint}"
    );
    // Quoted back whole, it parses as no call and no broken call.
    let reply = hearth_reply(hint);
    let parsed = XmlToolDispatcher.parse(&reply);
    assert!(
        parsed.calls.is_empty() && parsed.malformed.is_empty(),
        "{parsed:?}"
    );
    // The control: the raw hint, undefused, is read as a broken call.
    let raw = hearth_reply(&format!("Sure.{}", XmlToolDispatcher.call_hint()));
    assert!(!XmlToolDispatcher.parse(&raw).malformed.is_empty());
}

fn hearth_reply(text: &str) -> crate::chat::ChatReply {
    crate::chat::ChatReply {
        text: text.to_string(),
        reasoning: String::new(),
        tool_calls: Vec::new(),
        malformed: Vec::new(),
        usage: Default::default(),
        finish: FinishReason::Stop,
    }
}

#[test]
fn a_hook_can_refuse_a_call() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new([
        "<tool_call>{\"name\": \"file_write\", \"arguments\": {\"path\": \"x\", \"content\": \"y\"}}</tool_call>",
        "ok",
    ]);
    let hook = |call: &ParsedToolCall| -> futures::future::BoxFuture<'static, HookDecision> {
        let write = call.name == "file_write";
        Box::pin(async move {
            if write {
                HookDecision::Refuse("writes need approval".into())
            } else {
                HookDecision::Run
            }
        })
    };
    let outcome = run(&provider, &dir, 10, Some(&hook));
    assert_eq!(outcome.text, "ok");
    assert!(
        tool_results(&outcome)[0]
            .content
            .contains("writes need approval")
    );
    assert!(!dir.path().join("ws/x").exists());
}

fn tool_results(outcome: &LoopOutcome) -> Vec<&ToolResultMessage> {
    outcome
        .history
        .iter()
        .filter_map(|m| match m {
            ConversationMessage::ToolResults(r) => r.first(),
            _ => None,
        })
        .collect()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn a_context_overflow_drops_the_oldest_third_and_retries_once() {
    let dir = tempfile::tempdir().unwrap();
    let registry = ToolRegistry::core();
    let ctx = tools(&dir);
    let provider = ScriptedProvider::default()
        .then_fail(ProviderError::ContextOverflow {
            needed: 900,
            limit: 512,
        })
        .then_reply("Short answer.");
    let tool_loop = ToolLoop {
        provider: &provider,
        dispatcher: &XmlToolDispatcher,
        registry: &registry,
        tools: &ctx,
        before_tool_call: None,
        after_tool_call: None,
    };
    let mut messages = vec![ChatMessage::system("sys")];
    for i in 0..6 {
        messages.push(ChatMessage::user(format!("old question {i}")));
        messages.push(ChatMessage::assistant(format!("old answer {i}")));
    }
    messages.push(ChatMessage::user("now"));
    let outcome =
        block_on(tool_loop.run("t", messages, &settings(3), CancellationToken::new())).unwrap();
    assert_eq!(outcome.text, "Short answer.");
    assert_eq!(outcome.context.messages_dropped, 4);
    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "one retry");
    assert_eq!(requests[1].messages.len(), requests[0].messages.len() - 4);
    assert_eq!(requests[1].messages[1].content, "old question 2");
    let kept = outcome
        .rewritten_history
        .expect("the caller learns the new history");
    assert_eq!(kept.len(), 8);
    assert_eq!(kept[0].content, "old question 2");

    // A second overflow in the same turn is the caller's to handle.
    let provider = ScriptedProvider::default()
        .then_fail(ProviderError::ContextOverflow {
            needed: 9,
            limit: 5,
        })
        .then_fail(ProviderError::ContextOverflow {
            needed: 9,
            limit: 5,
        });
    let tool_loop = ToolLoop {
        provider: &provider,
        ..tool_loop
    };
    let messages = vec![
        ChatMessage::system("sys"),
        ChatMessage::user("a"),
        ChatMessage::assistant("b"),
        ChatMessage::user("now"),
    ];
    let err =
        block_on(tool_loop.run("t", messages, &settings(3), CancellationToken::new())).unwrap_err();
    assert!(matches!(
        err,
        LoopError::Provider(ProviderError::ContextOverflow { .. })
    ));
}

#[test]
fn parallel_tools_run_every_call_of_a_reply_and_keep_their_order() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    std::fs::write(dir.path().join("ws/a.txt"), "alpha").unwrap();
    std::fs::write(dir.path().join("ws/b.txt"), "beta").unwrap();
    let registry = ToolRegistry::core();
    let ctx = tools(&dir);
    let provider = ScriptedProvider::new([
        "<tool_call>{\"name\": \"file_read\", \"arguments\": {\"path\": \"a.txt\"}}</tool_call>\n<tool_call>{\"name\": \"file_read\", \"arguments\": {\"path\": \"b.txt\"}}</tool_call>",
        "alpha and beta",
    ]);
    let tool_loop = ToolLoop {
        provider: &provider,
        dispatcher: &XmlToolDispatcher,
        registry: &registry,
        tools: &ctx,
        before_tool_call: None,
        after_tool_call: None,
    };
    let settings = LoopSettings {
        parallel_tools: true,
        offered: None,
        ..settings(3)
    };
    let messages = vec![ChatMessage::system("sys"), ChatMessage::user("read both")];
    let outcome =
        block_on(tool_loop.run("t", messages, &settings, CancellationToken::new())).unwrap();
    match &outcome.history[1] {
        ConversationMessage::ToolResults(r) => {
            let contents: Vec<&str> = r.iter().map(|r| r.content.as_str()).collect();
            assert_eq!(contents, ["alpha", "beta"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(outcome.text, "alpha and beta");
}

#[test]
fn a_reply_cut_while_thinking_says_so_and_names_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    // A reasoning model that thought until max_tokens: nothing to show.
    let provider = ScriptedProvider::new(Vec::<String>::new()).then_cut(
        "<think>The user wants n.txt. First I should consider",
        FinishReason::Length,
    );
    let outcome = run(&provider, &dir, 4, None);
    assert!(outcome.text.contains("max_tokens"), "{}", outcome.text);
    assert!(!outcome.text.contains("consider"), "no reasoning shown");
    // Positive control: a thought that ends, then nothing, is not blamed
    // on the length.
    let provider = ScriptedProvider::new(["<think>Nothing to say.</think>"]);
    let outcome = run(&provider, &dir, 4, None);
    assert_eq!(outcome.text, super::THOUGHT_ONLY);
}

#[test]
fn a_reply_that_only_thought_says_so_and_offers_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    // As QwQ or DeepSeek-R1 do when their template opened the block: the
    // model stops without ever closing it.
    let provider = ScriptedProvider::new(Vec::<String>::new()).then_cut(
        "<think>The user asks about n.txt. Maybe I should",
        FinishReason::Stop,
    );
    let outcome = run(&provider, &dir, 4, None);
    assert!(
        outcome.text.contains("only thought")
            && outcome.text.contains("reasoning = \"off\"")
            && outcome.text.contains("max_tokens"),
        "{}",
        outcome.text
    );
    assert!(
        !outcome.text.contains("Maybe I should"),
        "no reasoning shown"
    );
    // Positive control: nothing at all, no thought: the plain answer.
    let provider = ScriptedProvider::new([""]);
    let outcome = run(&provider, &dir, 4, None);
    assert_eq!(outcome.text, "I could not find an answer.");
}
