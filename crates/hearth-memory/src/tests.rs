//! The memory seam end to end: a real store in a temporary folder, a
//! scripted provider for consolidation, and the tools through the registry.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::chat::Priority;
use crate::config::MemoryConfig;
use crate::providers::ScriptedProvider;
use crate::security::{Autonomy, SecurityPolicy};
use hearth_tools::{ToolContext, ToolOrigin, ToolRegistry};

fn store() -> (tempfile::TempDir, Arc<MemoryStore>) {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::open(&MemoryStore::path_in(dir.path())).unwrap();
    (dir, Arc::new(store))
}

fn msg(id: &str, sender: &str, chat: &str, content: &str) -> Said {
    Said {
        id: id.into(),
        sender: sender.into(),
        chat: chat.into(),
        text: content.into(),
        channel: "telegram".into(),
        thread: None,
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn auto_save_keys_and_length_threshold() {
    let (_d, s) = store();
    let m = StoreMemory::new(Arc::clone(&s), MemoryConfig::default());
    let mut long = msg(
        "42",
        "alice",
        "alice",
        "I keep the spare key under the blue pot",
    );
    long.thread = Some("7".into());
    assert!(m.save_message(&long));
    assert_eq!(
        StoreMemory::auto_save_key(&long),
        "telegram_alice_7_alice_42"
    );
    let saved = s
        .get("telegram:alice", "telegram_alice_7_alice_42")
        .unwrap()
        .unwrap();
    assert_eq!(saved.category, Category::Conversation);
    // The same key with other words (a channel whose ids started over)
    // is saved beside it, never over it; the same words again are one memory.
    let mut again = long.clone();
    again.text = "The locker code is 4711, remember it".into();
    assert!(m.save_message(&again));
    assert!(m.save_message(&again));
    assert_eq!(
        s.get("telegram:alice", "telegram_alice_7_alice_42")
            .unwrap()
            .unwrap()
            .content,
        "I keep the spare key under the blue pot"
    );
    assert_eq!(s.list(None, None, 10).unwrap().len(), 2);
    s.forget(
        "telegram:alice",
        &s.list(None, None, 10)
            .unwrap()
            .iter()
            .find(|e| e.content.contains("4711"))
            .unwrap()
            .key,
    )
    .unwrap();
    // 19 characters: not saved.
    assert!(!m.save_message(&msg("43", "alice", "alice", "ok thanks a lot!!!!")));
    assert_eq!(s.list(None, None, 10).unwrap().len(), 1);
    let off = StoreMemory::new(
        Arc::clone(&s),
        MemoryConfig {
            auto_save: false,
            ..MemoryConfig::default()
        },
    );
    assert!(!off.save_message(&msg(
        "44",
        "alice",
        "alice",
        "long enough to be saved, surely"
    )));
}

#[test]
fn scopes_do_not_leak_between_senders() {
    let (_d, s) = store();
    let m = StoreMemory::new(Arc::clone(&s), MemoryConfig::default());
    rt().block_on(async {
        m.on_user_message(&msg(
            "1",
            "alice",
            "alice",
            "My gym locker code is 4411, remember it",
        ))
        .await;
        let bob = m
            .recall_context(&msg("2", "bob", "bob", "what is my gym locker code?"))
            .await;
        assert_eq!(bob, None, "bob must not see alice's memory");
        let alice = m
            .recall_context(&msg("3", "alice", "alice", "what is my gym locker code?"))
            .await
            .expect("alice recalls her own memory");
        assert!(alice.starts_with("[Memory context]\n- "), "{alice}");
        assert!(alice.contains("4411"), "{alice}");

        // In a group, alice's private memory stays private too; what was
        // stored for the group is shared with its members.
        s.store(
            "telegram:chat:-100",
            "rule",
            "The gym locker room closes at 22:00",
            Category::Custom,
        )
        .unwrap();
        let bob_in_group = m
            .recall_context(&msg(
                "4",
                "bob",
                "-100",
                "when does the gym locker room close",
            ))
            .await
            .unwrap();
        assert!(bob_in_group.contains("22:00"), "{bob_in_group}");
        assert!(!bob_in_group.contains("4411"), "{bob_in_group}");
        let bob_private = m
            .recall_context(&msg(
                "5",
                "bob",
                "bob",
                "when does the gym locker room close",
            ))
            .await;
        assert_eq!(bob_private, None, "the group's memory stays in the group");
    });
}

#[test]
fn a_message_is_not_recalled_back_to_itself() {
    let (_d, s) = store();
    let m = StoreMemory::new(s, MemoryConfig::default());
    let message = msg(
        "9",
        "alice",
        "alice",
        "remind me what the plumber charged last time",
    );
    rt().block_on(async {
        m.on_user_message(&message).await;
        assert_eq!(m.recall_context(&message).await, None);
    });
}

#[test]
fn the_context_limits_hold_through_the_seam() {
    let (_d, s) = store();
    for i in 0..12 {
        s.store(
            "telegram:alice",
            &format!("trip{i}"),
            &format!("trip {i} to the mountains: {}", "snow ".repeat(400)),
            Category::Core,
        )
        .unwrap();
    }
    s.store(
        "telegram:alice",
        "photo",
        "trip photo [IMAGE:/x.png] mountains",
        Category::Core,
    )
    .unwrap();
    s.store(
        "telegram:alice",
        "trip_history",
        "trip mountains transcript",
        Category::Core,
    )
    .unwrap();
    let config = MemoryConfig {
        recall_limit: 20,
        ..MemoryConfig::default()
    };
    let m = StoreMemory::new(s, config);
    let ctx = rt()
        .block_on(m.recall_context(&msg("1", "alice", "alice", "our trip to the mountains")))
        .unwrap();
    let entries: Vec<&str> = ctx.lines().skip(1).collect();
    assert_eq!(entries.len(), 4);
    for e in &entries {
        assert!(e.chars().count() <= 2 + 800, "{}", e.chars().count());
        assert!(!e.contains("[IMAGE:") && !e.contains("transcript"), "{e}");
    }
    assert!(ctx.chars().count() <= 4_000);
}

#[test]
fn consolidation_keeps_what_the_user_said_and_ignores_the_assistant() {
    let (_d, s) = store();
    let user = "Just so you know, my daughter Mina is allergic to peanuts.";
    let reply = "Noted! By the way, the Eiffel Tower is 330 metres tall.";
    // The model answers with the user's fact, a fact from the assistant's
    // reply, and junk.
    let provider = Arc::new(ScriptedProvider::new([
        "Here are the facts:\n[\"The user's daughter Mina is allergic to peanuts\", \"The Eiffel Tower is 330 metres tall\", 7, \"\"]",
    ]));
    let m = StoreMemory::new(Arc::clone(&s), MemoryConfig::default())
        .with_consolidation(provider.clone());
    let message = msg("1", "alice", "alice", user);
    let stored = rt().block_on(m.consolidate(&message));
    assert_eq!(stored, 1);
    let core = s
        .list(Some("telegram:alice"), Some(Category::Core), 10)
        .unwrap();
    assert_eq!(core.len(), 1, "{core:?}");
    assert!(core[0].content.contains("Mina is allergic to peanuts"));
    assert!(!core.iter().any(|e| e.content.contains("Eiffel")));

    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].priority, Priority::Background);
    let sent: String = requests[0]
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert!(sent.contains(user));
    assert!(!sent.contains(reply) && !sent.contains("Eiffel"), "{sent}");
    let _ = reply;
}

/// What the 135M model did with a question: it answered it, and the
/// answer was kept as the person's fact. A question is neither auto-saved
/// nor consolidated; a statement beside it still is (the control).
#[test]
fn a_question_is_not_kept_and_its_answer_is_no_fact() {
    let (_d, s) = store();
    let provider = Arc::new(ScriptedProvider::new([
        "[\"The capital of France is Paris.\", \"list_to_json\", \"My sister lives in Lyon.\"]",
    ]));
    let m = StoreMemory::new(Arc::clone(&s), MemoryConfig::default())
        .with_consolidation(provider.clone());
    let asked = msg("1", "alice", "alice", "What is the capital of France?");
    assert!(!m.save_message(&asked));
    assert_eq!(rt().block_on(m.consolidate(&asked)), 0);
    assert!(
        provider.requests().is_empty(),
        "a question is not even sent"
    );
    let told = msg(
        "2",
        "alice",
        "alice",
        "My sister lives in Lyon, and I visit her in May.",
    );
    assert!(m.save_message(&told));
    assert_eq!(rt().block_on(m.consolidate(&told)), 1);
    let all = s.list(Some("telegram:alice"), None, 10).unwrap();
    assert!(
        !all.iter()
            .any(|e| e.content.contains("Paris") || e.content.contains("json")),
        "{all:?}"
    );
    assert!(
        all.iter().any(|e| e.content == "My sister lives in Lyon."),
        "{all:?}"
    );
}

#[test]
fn after_turn_consolidates_in_the_background_and_survives_a_failing_model() {
    let (_d, s) = store();
    let provider = Arc::new(
        ScriptedProvider::new(["- Works night shifts at the harbour"])
            .then_fail(crate::chat::ProviderError::Failed("busy".into())),
    );
    let m = StoreMemory::new(Arc::clone(&s), MemoryConfig::default()).with_consolidation(provider);
    rt().block_on(async {
        let message = msg(
            "1",
            "alice",
            "alice",
            "I work night shifts at the harbour these days",
        );
        m.after_turn(&message, "Sounds tiring!").await;
        let mut found = false;
        for _ in 0..200 {
            if !s.list(None, Some(Category::Core), 10).unwrap().is_empty() {
                found = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(found, "the background task stored the fact");
        // The next one fails: nothing stored, nothing crashes.
        m.after_turn(
            &msg("2", "alice", "alice", "I also play the cello on weekends"),
            "Nice",
        )
        .await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(s.list(None, Some(Category::Core), 10).unwrap().len(), 1);
    });
}

fn tool_ctx(dir: &tempfile::TempDir, origin: Option<ToolOrigin>) -> ToolContext {
    ToolContext::new(
        SecurityPolicy::new(&dir.path().join("ws"), Autonomy::Supervised, None).unwrap(),
        Duration::from_secs(5),
    )
    .with_origin(origin)
    .unwrap()
}

fn origin(sender: &str, chat: &str) -> Option<ToolOrigin> {
    Some(ToolOrigin {
        channel: "telegram".into(),
        reply_target: chat.into(),
        sender: sender.into(),
        thread_ts: None,
        one_credential: false,
    })
}

#[test]
fn tools_work_in_the_callers_scope() {
    let (dir, s) = store();
    let mut reg = ToolRegistry::default();
    for t in memory_tools(Arc::clone(&s)) {
        reg.register(t);
    }
    let alice = tool_ctx(&dir, origin("alice", "alice"));
    let bob = tool_ctx(&dir, origin("bob", "bob"));
    rt().block_on(async {
        let r = reg
            .run(
                "memory_store",
                json!({"content": "Alice's bike is a red Brompton", "key": "bike"}),
                &alice,
            )
            .await;
        assert!(!r.is_error, "{r:?}");
        let r = reg
            .run("memory_recall", json!({"query": "bike"}), &alice)
            .await;
        assert!(
            r.content.contains("red Brompton") && r.content.contains("bike"),
            "{r:?}"
        );
        assert!(r.content.starts_with("[0."), "a score is shown: {r:?}");
        let r = reg
            .run("memory_recall", json!({"query": "bike"}), &bob)
            .await;
        assert_eq!(r.content, "nothing remembered matches");
        let r = reg.run("memory_forget", json!({"key": "bike"}), &bob).await;
        assert!(r.is_error, "bob cannot forget alice's memory");
        let r = reg
            .run(
                "memory_store",
                json!({"content": "x y z w", "shared": true}),
                &alice,
            )
            .await;
        assert!(r.is_error, "no group in a private chat: {r:?}");
        let r = reg
            .run("memory_forget", json!({"key": "bike"}), &alice)
            .await;
        assert!(!r.is_error, "{r:?}");
        assert!(s.list(None, None, 10).unwrap().is_empty());
        let local = tool_ctx(&dir, None);
        let r = reg
            .run(
                "memory_store",
                json!({"content": "from the command line"}),
                &local,
            )
            .await;
        assert!(!r.is_error);
        assert_eq!(s.list(Some(LOCAL_SCOPE), None, 10).unwrap().len(), 1);
    });
}
