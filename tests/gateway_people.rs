//! Who shares memory on the gateway: each chat is its own person. A
//! front end that serves several people (Open WebUI, Home Assistant, a
//! script) names them with the OpenAI `user` field, `X-Hearth-Chat` or the
//! `chat` of `/v1/message`, and one never recalls another's memories. The
//! model is the parrot, which repeats everything that reaches it, memory
//! context included: a leak shows in the reply. The owner asking the same
//! question gets the answer (the positive control).
#![allow(clippy::unwrap_used)] // test helpers: an unwrap is the clearest failure

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use hearth::channels::GatewayChannel;
use hearth::config::{Config, Environment};
use hearth::daemon::{Daemon, Services};
use hearth::pipeline::RuntimeBuilder;
use serde_json::{Value, json};
use support::*;

// Six digits each: a conversation's random id in a reply could hold four.
const PIN: &str = "913728";

struct Running {
    _daemon: Daemon,
    url: String,
    parrot: Arc<Parrot>,
    _home: tempfile::TempDir,
}

impl Running {
    /// The requests the model got in `chat`'s turns.
    fn requests_of(&self, chat: &str) -> Vec<hearth::chat::ChatRequest> {
        let prefix = format!("gateway_{chat}_");
        self.parrot
            .requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.conversation.starts_with(&prefix))
            .cloned()
            .collect()
    }

    /// Everything the model was shown in `chat`'s turns, from request
    /// `from` on.
    fn shown(&self, chat: &str, from: usize) -> String {
        self.requests_of(chat)
            .iter()
            .skip(from)
            .flat_map(|r| r.messages.iter().map(|m| m.content.clone()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

async fn gateway() -> Running {
    let home = tempfile::tempdir().unwrap();
    let env = Environment::with_home(home.path());
    let path = home.path().join("hearth.toml");
    std::fs::write(
        &path,
        "[memory]\nenabled = true\nconsolidate = false\n[channels.gateway]\nlisten = \"127.0.0.1:0\"\nallow_loopback_without_token = true\n",
    )
    .unwrap();
    let mut cfg = Config::load_file(&path, &env).unwrap();
    cfg.agent.approve.clear();
    let parrot: Arc<Parrot> = Arc::new(Parrot::default());
    let services = Services::open(&cfg, parrot.clone()).unwrap();
    let context = hearth::cli::tools_cmd::context(&cfg, &env).unwrap();
    let tools = services.tools(&cfg, &context.sandbox);
    let channel = Arc::new(
        hearth::daemon::gateway_settings(&cfg.gateway)
            .map(GatewayChannel::new)
            .unwrap(),
    );
    let runtime = RuntimeBuilder::new(cfg, local(parrot.clone()), context)
        .tools(Arc::new(tools))
        .memory(services.turn_memory().unwrap())
        .channel(channel.clone())
        .build()
        .unwrap();
    let daemon = Daemon::start(runtime, None);
    let addr = tokio::time::timeout(Duration::from_secs(10), channel.local_addr())
        .await
        .expect("the gateway listens");
    Running {
        _daemon: daemon,
        url: format!("http://{addr}"),
        parrot,
        _home: home,
    }
}

/// An OpenAI chat completion as `user` (or with `X-Hearth-Chat`); the reply text.
async fn complete(url: &str, user: Option<&str>, header: Option<&str>, text: &str) -> String {
    let mut body = json!({"model": "hearth", "messages": [{"role": "user", "content": text}]});
    if let Some(user) = user {
        body["user"] = json!(user);
    }
    let mut request = reqwest::Client::new()
        .post(format!("{url}/v1/chat/completions"))
        .timeout(Duration::from_secs(60))
        .json(&body);
    if let Some(chat) = header {
        request = request.header("X-Hearth-Chat", chat);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    let reply: Value = response.json().await.unwrap();
    reply["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn message(url: &str, chat: &str, text: &str) -> String {
    let reply: Value = reqwest::Client::new()
        .post(format!("{url}/v1/message"))
        .timeout(Duration::from_secs(60))
        .json(&json!({"text": text, "chat": chat}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    reply["reply"].as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_openai_users_never_recall_each_others_memories() {
    let g = gateway().await;
    let told = format!("please remember: my bank PIN is {PIN}, keep it secret");
    complete(&g.url, Some("alice"), None, &told).await;
    let stored = parrot_call(
        "memory_store",
        json!({"key": "locker", "content": "Alice's locker code is 471158", "category": "core"}),
    );
    complete(&g.url, Some("alice"), None, &stored).await;

    // Bob, through the same token, by `user` and by header.
    let asked = "what is my bank PIN and my locker code?";
    for (user, header) in [(Some("bob"), None), (None, Some("bob"))] {
        let reply = complete(&g.url, user, header, asked).await;
        assert!(
            !reply.contains(PIN) && !reply.contains("471158"),
            "Bob got Alice's memory: {reply}"
        );
        let recall = parrot_call("memory_recall", json!({"query": "bank PIN locker code"}));
        let reply = complete(&g.url, user, header, &recall).await;
        assert!(
            !reply.contains(PIN) && !reply.contains("471158"),
            "memory_recall gave Bob Alice's memory: {reply}"
        );
    }
    // `/v1/message` chats are people too; and the plainest question.
    for question in [asked, "what is my bank PIN?"] {
        let reply = message(&g.url, "bob", question).await;
        assert!(!reply.contains(PIN), "{reply}");
        let reply = complete(&g.url, Some("bob"), None, question).await;
        assert!(!reply.contains(PIN), "{reply}");
    }
    // Nothing of Alice's reached the model in any of Bob's turns: not in a
    // memory context, not in a history.
    let bob_saw = g.shown("bob", 0);
    assert!(
        bob_saw.contains("bank PIN"),
        "Bob's turns were read: {bob_saw}"
    );
    assert!(
        !bob_saw.contains(PIN) && !bob_saw.contains("471158"),
        "the model saw Alice's memory in Bob's turns: {bob_saw}"
    );

    // Positive control: Alice, with her history cleared, is given her PIN
    // by memory, and recalls her locker code, by `user` and by header.
    complete(&g.url, Some("alice"), None, "/new").await;
    let before = g.requests_of("alice").len();
    complete(&g.url, Some("alice"), None, "what is my bank PIN?").await;
    let alice_saw = g.shown("alice", before);
    assert!(alice_saw.contains(PIN), "Alice's own memory: {alice_saw}");
    let recall = parrot_call("memory_recall", json!({"query": "locker code"}));
    let reply = complete(&g.url, None, Some("alice"), &recall).await;
    assert!(
        reply.contains("471158"),
        "Alice's own memory_recall: {reply}"
    );
}

fn parrot_call(name: &str, args: Value) -> String {
    support::parrot::call(name, args)
}
