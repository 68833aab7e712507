//! The pipeline's phases end to end through the dispatcher: hooks,
//! sessions, routes, error outcomes, live feedback, background jobs,
//! memory and the commands answered without a model.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use hearth::channels::{ChannelEvent, ChannelMessage, ChannelPolicy, InMemoryChannel, SendMessage};
use hearth::chat::{ProviderError, Role};
use hearth::history::HistoryStore;
use hearth::pipeline::{Hook, HookAction, Outcome};
use hearth::providers::ScriptedProvider;
use support::*;

struct Moderator;

impl Hook for Moderator {
    fn on_message_received(
        &self,
        mut m: ChannelMessage,
    ) -> BoxFuture<'_, HookAction<ChannelMessage>> {
        Box::pin(async move {
            if m.content.contains("spam") {
                return HookAction::Cancel("spam".into());
            }
            m.content = m.content.replace("colour", "color");
            HookAction::Continue(m)
        })
    }

    fn on_message_sending(&self, mut m: SendMessage) -> BoxFuture<'_, HookAction<SendMessage>> {
        Box::pin(async move {
            if m.content.contains("secret") {
                return HookAction::Cancel("withheld".into());
            }
            m.content.push_str(" —hearth");
            HookAction::Continue(m)
        })
    }
}

#[tokio::test(start_paused = true)]
async fn hooks_cancel_and_modify() {
    let home = tempfile::tempdir().unwrap();
    let provider = SlowEcho::new("echo", Duration::from_millis(10));
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let cfg = config(home.path());
    let data_dir = cfg.data_dir.clone();
    let b = builder(cfg, local(provider.clone())).hook(Arc::new(Moderator));
    let (daemon, mut rx) = start(b, channel.clone());
    channel.inject_text("ada", "buy spam now");
    assert_eq!(
        reports(&mut rx, 1).await[0].outcome,
        Outcome::HookCancelled("spam".into())
    );
    assert!(
        provider.requests().is_empty(),
        "a cancelled message reaches no model"
    );
    channel.inject_text("ada", "favourite colour?");
    assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::Replied);
    assert_eq!(texts(&channel, "ada"), ["echo: favourite color? —hearth"]);
    channel.inject_text("bob", "tell me the secret");
    assert_eq!(
        reports(&mut rx, 1).await[0].outcome,
        Outcome::HookCancelled("withheld".into())
    );
    assert!(texts(&channel, "bob").is_empty());
    daemon.stop().await;
    let bob = HistoryStore::open(&HistoryStore::path_in(&data_dir))
        .unwrap()
        .load("mem_bob_bob", 50)
        .unwrap();
    assert_eq!(bob.len(), 1, "a withheld reply is not saved: {bob:?}");
}

#[tokio::test(start_paused = true)]
async fn sessions_survive_a_restart() {
    let home = tempfile::tempdir().unwrap();
    let channel = Arc::new(InMemoryChannel::new("mem"));
    {
        let provider = SlowEcho::new("echo", Duration::from_millis(10));
        let (daemon, mut rx) = start(
            builder(config(home.path()), local(provider)),
            channel.clone(),
        );
        for turn in ["one", "two", "three"] {
            channel.inject_text("ada", turn);
            reports(&mut rx, 1).await;
        }
        daemon.stop().await;
    }
    let provider = SlowEcho::new("echo", Duration::from_millis(10));
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(
        builder(config(home.path()), local(provider.clone())),
        channel.clone(),
    );
    channel.inject_text("ada", "four");
    reports(&mut rx, 1).await;
    let request = &provider.requests()[0];
    let turns = turns(&request.messages[1..]);
    assert_eq!(
        turns,
        [
            (Role::User, "one"),
            (Role::Assistant, "echo: one"),
            (Role::User, "two"),
            (Role::Assistant, "echo: two"),
            (Role::User, "three"),
            (Role::Assistant, "echo: three"),
            (Role::User, "four"),
        ]
    );
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_edited_route_applies_to_the_next_message_and_a_bad_edit_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("hearth.toml");
    let write = |model: &str, note: &str| {
        std::fs::write(
            &path,
            format!(
                "# {note}\n[routing.models]\na = \"a.gguf\"\nb = \"b.gguf\"\n[[routing.rules]]\nhint = \"code\"\nkeywords = [\"code\"]\nmodel = \"{model}\"\n"
            ),
        )
        .unwrap();
    };
    write("a", "first");
    let env = hearth::config::Environment::with_home(home.path());
    let cfg = hearth::config::Config::load_file(&path, &env).unwrap();
    let a = SlowEcho::new("A", Duration::from_millis(10));
    let b = SlowEcho::new("B", Duration::from_millis(10));
    let fallback = SlowEcho::new("default", Duration::from_millis(10));
    let providers = Arc::new(
        hearth::pipeline::StaticProviders::new()
            .with("local:a", a.clone())
            .with("local:b", b.clone())
            .with("local", fallback.clone()),
    );
    let builder =
        builder(cfg, providers).watch(hearth::pipeline::ConfigWatcher::new(path.clone(), env));
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(builder, channel.clone());

    channel.inject_text("ada", "review my code");
    reports(&mut rx, 1).await;
    channel.inject_text("ada", "hello");
    reports(&mut rx, 1).await;
    write("b", "second edit, a longer note");
    channel.inject_text("ada", "more code");
    reports(&mut rx, 1).await;
    // Invalid: `zzz` is not a model name. The old config stays.
    write("zzz", "third");
    channel.inject_text("ada", "code again");
    reports(&mut rx, 1).await;
    assert_eq!(
        texts(&channel, "ada"),
        [
            "A: review my code",
            "default: hello",
            "B: more code",
            "B: code again"
        ]
    );
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn errors_end_with_a_clear_outcome() {
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    let data_dir = cfg.data_dir.clone();
    cfg.daemon.message_timeout_secs = 5;
    cfg.agent.max_tool_iterations = 1;
    let scripted = Arc::new(
        // The agent loop drops the oldest third and retries once on an
        // overflow; a second overflow reaches the pipeline.
        ScriptedProvider::new(["fine"])
            .then_fail(ProviderError::ContextOverflow {
                needed: 9000,
                limit: 2048,
            })
            .then_fail(ProviderError::ContextOverflow {
                needed: 9000,
                limit: 2048,
            })
            .then_fail(ProviderError::Failed(
                "upstream said api_key=sk-live-0123456789abcdef0123 at /srv/hearth/secret/x".into(),
            )),
    );
    let slow = SlowEcho::new("slow", Duration::from_secs(60));
    let providers = Arc::new(
        hearth::pipeline::StaticProviders::new()
            .with("local", scripted.clone())
            .with("local:slow", slow),
    );
    let mut cfg2 = cfg.clone();
    cfg2.routing
        .models
        .insert("slow".into(), "slow.gguf".into());
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(builder(cfg2, providers), channel.clone());
    channel.inject_text("ada", "first");
    assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::Replied);
    channel.inject_text("ada", &"long ".repeat(300));
    assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::Overflow);
    channel.inject_text("ada", "third");
    assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::Failed);
    channel.inject_text("ada", "/model slow");
    reports(&mut rx, 1).await;
    channel.inject_text("ada", "take your time");
    assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::TimedOut);
    let sent = texts(&channel, "ada");
    assert_eq!(sent[0], "fine");
    assert!(sent[1].contains("kept only the last"), "{}", sent[1]);
    assert!(sent[2].starts_with("Sorry"), "{}", sent[2]);
    assert!(
        !sent[2].contains("sk-live") && !sent[2].contains("/srv/hearth"),
        "{}",
        sent[2]
    );
    assert!(sent[4].starts_with("[Task timed out]"), "{}", sent[4]);
    daemon.stop().await;
    let history = HistoryStore::open(&HistoryStore::path_in(&data_dir))
        .unwrap()
        .load("mem_ada_ada", 50)
        .unwrap();
    let contents: Vec<&str> = history.iter().map(|m| m.content.as_str()).collect();
    assert!(
        contents.iter().any(|c| c.starts_with("[Task failed]")),
        "{contents:?}"
    );
    assert!(
        contents.iter().any(|c| c.starts_with("[Task timed out]")),
        "{contents:?}"
    );
    assert!(
        contents
            .iter()
            .all(|c| c.chars().count() <= 601 || *c == contents[contents.len() - 1])
    );
}

/// A 60 KB paste does not fit however short the history is made: the
/// person is told that the message itself is too long and what works, the
/// history is left whole, and sending it again says the same (it used to
/// say "send your last message again", which failed the same way).
#[tokio::test(start_paused = true)]
async fn a_paste_longer_than_the_context_says_so_and_keeps_the_history() {
    let home = tempfile::tempdir().unwrap();
    let cfg = config(home.path());
    let data_dir = cfg.data_dir.clone();
    let overflow = || ProviderError::ContextOverflow {
        needed: 16_000,
        limit: 4096,
    };
    let mut scripted = ScriptedProvider::new(["fine"]);
    for _ in 0..4 {
        scripted = scripted.then_fail(overflow());
    }
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(builder(cfg, local(Arc::new(scripted))), channel.clone());
    let earlier = format!("remember this: {}", "early words ".repeat(80));
    channel.inject_text("ada", &earlier);
    assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::Replied);
    let paste = "A pasted log line that goes on and on.\n".repeat(1_600);
    assert!(paste.len() > 60_000);
    for _ in 0..2 {
        channel.inject_text("ada", &paste);
        assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::Overflow);
    }
    let sent = texts(&channel, "ada");
    for notice in &sent[1..] {
        assert!(
            notice.contains("too long for the model")
                && notice.contains("4096 tokens")
                && notice.contains("file")
                && notice.contains("context_size"),
            "{notice}"
        );
        assert!(!notice.contains("send your last message again"), "{notice}");
    }
    daemon.stop().await;
    // The earlier turn is still there whole: nothing was compacted.
    let history = HistoryStore::open(&HistoryStore::path_in(&data_dir))
        .unwrap()
        .load("mem_ada_ada", 50)
        .unwrap();
    assert!(
        history.iter().any(|m| m.content == earlier),
        "{:?}",
        history.iter().map(|m| m.content.len()).collect::<Vec<_>>()
    );
    // The paste left the history, so the next turn is not overflowed by it.
    assert!(history.iter().all(|m| m.content != paste));
    assert!(
        history
            .iter()
            .any(|m| m.content.contains("too long to read")),
        "{:?}",
        history.iter().map(|m| m.content.len()).collect::<Vec<_>>()
    );
}

#[tokio::test(start_paused = true)]
async fn typing_drafts_tool_notices_and_reactions() {
    let home = tempfile::tempdir().unwrap();
    let scripted = Arc::new(ScriptedProvider::new([
        "Let me save it.\n<tool_call>{\"name\": \"file_write\", \"arguments\": {\"path\": \"n.txt\", \"content\": \"hi\"}}</tool_call>",
        "Saved n.txt.",
    ]));
    let channel = Arc::new(
        InMemoryChannel::new("mem")
            .with_drafts()
            .with_policy(ChannelPolicy {
                interrupt_on_new_message: true,
                show_tool_calls: true,
                stream_replies: true,
                ..ChannelPolicy::default()
            })
            .always_answer(hearth::channels::Answer::Once),
    );
    let cfg = config(home.path());
    let workspace = cfg.agent.workspace.clone();
    let (daemon, mut rx) = start(builder(cfg, local(scripted.clone())), channel.clone());
    let m = channel.inject_text("ada", "save hi to n.txt");
    assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::Replied);
    assert_eq!(
        std::fs::read_to_string(workspace.join("n.txt")).unwrap(),
        "hi"
    );
    let events = channel.events();
    let pos = |want: &dyn Fn(&ChannelEvent) -> bool| events.iter().position(want);
    let eyes =
        pos(&|e| matches!(e, ChannelEvent::Reaction { emoji, .. } if emoji == "👀")).unwrap();
    let typing = pos(&|e| matches!(e, ChannelEvent::Typing { .. })).unwrap();
    let asked =
        pos(&|e| matches!(e, ChannelEvent::Asked { request, .. } if request.tool == "file_write"))
            .unwrap();
    let notice =
        pos(&|e| matches!(e, ChannelEvent::Sent(s) if s.content == "🔧 file_write…")).unwrap();
    assert!(asked < notice, "the notice follows the approval");
    let finalized =
        pos(&|e| matches!(e, ChannelEvent::DraftFinalized { text, .. } if text == "Saved n.txt."))
            .unwrap();
    let check = pos(&|e| matches!(e, ChannelEvent::Reaction { emoji, message_id } if emoji == "✅" && *message_id == m.id)).unwrap();
    assert!(
        eyes < typing && typing < notice && notice < finalized && finalized < check,
        "{events:#?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ChannelEvent::DraftStarted { .. }))
    );
    // No draft ever showed the raw tool call.
    assert!(events.iter().all(|e| match e {
        ChannelEvent::DraftStarted { text, .. } | ChannelEvent::DraftUpdated { text, .. } =>
            !text.contains("tool_call"),
        _ => true,
    }));
    // The tool call knew which chat it came from: the request carried the tool specs.
    assert!(!scripted.requests()[0].tools.is_empty());
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn background_jobs_deliver_and_run_prompts() {
    let home = tempfile::tempdir().unwrap();
    let provider = SlowEcho::new("echo", Duration::from_millis(10));
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(
        builder(config(home.path()), local(provider.clone())),
        channel.clone(),
    );
    let delivery = daemon.delivery();
    delivery
        .deliver("mem", "chat9", "Assignment due tomorrow")
        .await
        .unwrap();
    assert_eq!(texts(&channel, "chat9"), ["Assignment due tomorrow"]);
    channel.refuse_sends(true);
    assert!(delivery.deliver("mem", "chat9", "again").await.is_err());
    assert!(delivery.deliver("nowhere", "chat9", "x").await.is_err());
    channel.refuse_sends(false);
    delivery
        .run_prompt(hearth::dispatch::PromptJob {
            id: 7,
            channel: "mem",
            to: "chat9",
            thread: None,
            owner: "chat9",
            prompt: "Summarise the new notices",
        })
        .await
        .unwrap();
    let r = reports(&mut rx, 1).await;
    assert_eq!(r[0].outcome, Outcome::Replied);
    assert_eq!(
        texts(&channel, "chat9").last().unwrap(),
        "echo: Summarise the new notices"
    );
    daemon.stop().await;
}

/// Remembers one fact and notes every turn.
#[derive(Default)]
struct FactMemory {
    turns: std::sync::Mutex<Vec<(String, String)>>,
}

use hearth::memory::Said;

impl hearth::memory::TurnMemory for FactMemory {
    fn recall_context<'a>(&'a self, _: &'a Said) -> BoxFuture<'a, Option<String>> {
        Box::pin(async { Some("Ada prefers tea.".to_string()) })
    }

    fn on_user_message<'a>(&'a self, _: &'a Said) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn after_turn<'a>(&'a self, m: &'a Said, reply: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.turns
                .lock()
                .unwrap()
                .push((m.text.clone(), reply.to_string()));
        })
    }
}

/// Says which chat its call came from.
struct WhereAmI;

impl hearth::tools::Tool for WhereAmI {
    fn name(&self) -> &str {
        "where_am_i"
    }

    fn description(&self) -> &str {
        "Which chat this is."
    }

    fn schema(&self) -> serde_json::Value {
        serde_json::json!({"type": "object", "properties": {}})
    }

    fn execute<'a>(
        &'a self,
        _args: serde_json::Value,
        ctx: &'a hearth::tools::ToolContext,
    ) -> BoxFuture<'a, hearth::tools::ToolResult> {
        Box::pin(async move {
            match &ctx.origin {
                Some(o) => hearth::tools::ToolResult::ok(format!(
                    "origin {}/{}/{}",
                    o.channel, o.reply_target, o.sender
                )),
                None => hearth::tools::ToolResult::error("no origin"),
            }
        })
    }
}

#[tokio::test(start_paused = true)]
async fn memory_context_rides_the_user_turn_and_tools_know_the_chat() {
    let home = tempfile::tempdir().unwrap();
    let cfg = config(home.path());
    let data_dir = cfg.data_dir.clone();
    let scripted = Arc::new(ScriptedProvider::new([
        "<tool_call>{\"name\": \"where_am_i\", \"arguments\": {}}</tool_call>",
        "You are in a chat.",
    ]));
    let memory = Arc::new(FactMemory::default());
    let mut registry = hearth::tools::ToolRegistry::default();
    registry.register(Box::new(WhereAmI));
    let b = builder(cfg, local(scripted.clone()))
        .memory(memory.clone())
        .tools(Arc::new(registry));
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(b, channel.clone());
    channel.inject_text("ada", "what do I drink?");
    assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::Replied);
    daemon.stop().await;
    let requests = scripted.requests();
    let first_user = last_user(&requests[0]);
    assert!(first_user.contains("Ada prefers tea."), "{first_user}");
    assert!(first_user.ends_with("what do I drink?"), "{first_user}");
    assert!(
        !requests[0].messages[0].content.contains("Ada prefers tea."),
        "the system prompt stays stable"
    );
    let second = &requests[1].messages;
    assert!(
        second
            .iter()
            .any(|m| m.content.contains("origin mem/ada/ada")),
        "{second:#?}"
    );
    assert_eq!(
        memory.turns.lock().unwrap().as_slice(),
        [(
            "what do I drink?".to_string(),
            "You are in a chat.".to_string()
        )]
    );
    let stored = HistoryStore::open(&HistoryStore::path_in(&data_dir))
        .unwrap()
        .load("mem_ada_ada", 50)
        .unwrap();
    assert_eq!(
        stored[0].content, "what do I drink?",
        "memory context is never stored"
    );
}

#[tokio::test(start_paused = true)]
async fn status_models_and_help_need_no_model_call() {
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    cfg.routing
        .models
        .insert("coder".into(), "coder.gguf".into());
    let provider = SlowEcho::new("echo", Duration::from_millis(10));
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(builder(cfg, local(provider.clone())), channel.clone());
    for command in [
        "/status",
        "/models",
        "/model coder",
        "/model nope",
        "/models",
        "/help",
    ] {
        channel.inject_text("ada", command);
        assert_eq!(
            reports(&mut rx, 1).await[0].outcome,
            Outcome::Command,
            "{command}"
        );
    }
    let sent = texts(&channel, "ada");
    assert!(sent[0].contains("channel mem: running"), "{}", sent[0]);
    // Every store of the data folder beside its limit.
    for store in [
        "history ",
        "inbox ",
        "memory ",
        "lms ",
        "scheduler ",
        "kv caches ",
    ] {
        assert!(sent[0].contains(store), "{store}: {}", sent[0]);
    }
    assert!(
        sent[0].contains("limit: 50 per conversation; forgotten after 365 quiet days"),
        "{}",
        sent[0]
    );
    // Hostile: a chat never learns where the data lives on the server.
    let home_path = home.path().display().to_string();
    assert!(!sent[0].contains(&home_path), "{}", sent[0]);
    assert!(
        sent[0].contains("model for this chat: default"),
        "{}",
        sent[0]
    );
    assert!(
        sent[1].contains("• default — SmolLM2-135M-Instruct.Q4_1.gguf (in use)"),
        "{}",
        sent[1]
    );
    assert!(
        sent[1].contains("• coder — coder.gguf\n") || sent[1].ends_with("• coder — coder.gguf"),
        "{}",
        sent[1]
    );
    assert_eq!(sent[2], "This chat now uses coder.");
    assert!(sent[3].contains("no model named `nope`"), "{}", sent[3]);
    assert!(
        sent[4].contains("• coder — coder.gguf (in use)"),
        "{}",
        sent[4]
    );
    assert!(sent[5].contains("/stop"), "{}", sent[5]);
    assert!(provider.requests().is_empty());
    daemon.stop().await;
}
