//! Two allowed people on one Telegram bot (the fake Bot API), with the
//! services `hearth daemon` runs (memory, the scheduler) and the parrot as
//! the model, the worst case: it repeats whatever reaches it, so anything
//! of one person's that reached the other's turn shows in the reply.
//!
//! Neither can see, list or receive the other's files, memories, history
//! or jobs, through tools or through the model's answers; each one's job
//! fires in their own chat with their own memory. Every probe has its
//! positive control: the owner asking the same gets the answer.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hearth::channels::Channel;
use hearth::config::{Environment, StreamMode};
use hearth::daemon::{Daemon, Services};
use hearth::dispatch::Report;
use hearth::pipeline::RuntimeBuilder;
use serde_json::json;
use support::telegram_bot::{self, WAIT, telegram_config};
use support::telegram_fake::{FakeTelegram, Incoming};
use support::*;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub(crate) const ADA: i64 = 2001;
pub(crate) const BOB: i64 = 2002;
/// What only Ada told or gave the bot (six digits: a random id in a reply
/// could hold four).
const ADA_SECRETS: &[&str] = &["471158", "987613", "passport", "secret.txt", "dentist"];

pub(crate) struct Family {
    fake: FakeTelegram,
    parrot: Arc<Parrot>,
    daemon: Daemon,
    rx: mpsc::UnboundedReceiver<Report>,
    pub(crate) stop: CancellationToken,
    workspace: PathBuf,
    _home: tempfile::TempDir,
    /// The data folder the services keep their databases in.
    pub(crate) data_dir: PathBuf,
}

pub(crate) async fn family() -> Family {
    family_with(|_| {}).await
}

/// [`family`], with `adjust` applied to its config first.
pub(crate) async fn family_with(adjust: impl FnOnce(&mut hearth::config::Config)) -> Family {
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let env = Environment::with_home(home.path());
    let mut cfg = config(home.path());
    telegram_config(
        &mut cfg,
        &fake,
        &[&ADA.to_string(), &BOB.to_string()],
        StreamMode::Off,
    );
    cfg.memory.enabled = true;
    cfg.scheduler.enabled = true;
    // Approvals have tests of their own; here every call is the person's.
    cfg.agent.approve.clear();
    adjust(&mut cfg);
    let parrot: Arc<Parrot> = Arc::new(Parrot::default());
    let data_dir = cfg.data_dir.clone();
    let services = Services::open(&cfg, parrot.clone()).unwrap();
    let context = hearth::cli::tools_cmd::context(&cfg, &env).unwrap();
    let tools = services.tools(&cfg, &context.sandbox);
    let channel: Arc<dyn Channel> = telegram_bot::channel(&cfg);
    let workspace = cfg.agent.workspace.join("telegram");
    let runtime = RuntimeBuilder::new(cfg, local(parrot.clone()), context)
        .tools(Arc::new(tools))
        .memory(services.turn_memory().unwrap())
        .channel(channel)
        .build()
        .unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    let daemon = Daemon::start(runtime, Some(tx));
    let stop = CancellationToken::new();
    services.spawn(
        daemon.delivery(),
        Arc::new(hearth::metrics::Metrics::new()),
        stop.clone(),
    );
    Family {
        fake,
        parrot,
        daemon,
        rx,
        stop,
        workspace,
        _home: home,
        data_dir,
    }
}

impl Family {
    /// `who` sends `text`; returns what the bot sent to their chat for it.
    pub(crate) async fn say(&mut self, who: i64, text: &str) -> String {
        self.send(Incoming::text(who, text)).await
    }

    async fn send(&mut self, message: Incoming) -> String {
        let who = message.chat_id.unwrap_or(message.user_id);
        let before = self.sent_to(who).len();
        let (_, id) = self.fake.inject(message);
        // Jobs report too: wait for this message's own report.
        let mine = format!("{who}:{id}");
        loop {
            let report = tokio::time::timeout(WAIT, self.rx.recv())
                .await
                .expect("a report in time")
                .expect("the daemon runs");
            if report.message_id == mine {
                break;
            }
        }
        self.sent_to(who)[before..].join("\n")
    }

    fn sent_to(&self, chat: i64) -> Vec<String> {
        telegram_bot::sent_to(&self.fake, chat)
    }

    /// Waits for the answer to the job `prompt` in `chat` (not the
    /// confirmation that it was scheduled).
    async fn wait_for(&self, chat: i64, prompt: &str) -> String {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let answer = self
                .sent_to(chat)
                .into_iter()
                .find(|t| t.contains(prompt) && !t.contains("scheduled #"));
            if let Some(t) = answer {
                return t;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "`{prompt}` was never answered in chat {chat}: {:?}",
                self.sent_to(chat)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn folder(&self, who: i64) -> PathBuf {
        self.workspace.join(who.to_string())
    }
}

/// Ada's secrets in `text` that Bob did not write himself in `asked`
/// (what he wrote may come back to him: his history, his memories).
fn leaks(text: &str, asked: &str) -> Vec<&'static str> {
    ADA_SECRETS
        .iter()
        .copied()
        .filter(|s| text.to_lowercase().contains(s) && !asked.to_lowercase().contains(s))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_people_on_one_bot_never_reach_each_others_files_memories_history_or_jobs() {
    let mut f = family().await;

    // Ada's things: a document, a file, a memory, a fact in her history,
    // and a job.
    f.send(Incoming {
        document: Some(("passport.pdf".into(), b"%PDF-1.4 P1234567".to_vec())),
        caption: Some("keep this".into()),
        ..Incoming::text(ADA, "")
    })
    .await;
    f.say(
        ADA,
        &call(
            "file_write",
            json!({"path": "secret.txt", "content": "locker 471158"}),
        ),
    )
    .await;
    f.say(
        ADA,
        &call(
            "memory_store",
            json!({"key": "locker", "content": "Ada's locker code is 471158", "category": "core"}),
        ),
    )
    .await;
    f.say(ADA, "my bank pin is 987613").await;
    f.say(
        ADA,
        &call(
            "cron_add",
            json!({"prompt": "dentist reminder: what do you know about my locker code?", "in": "3s"}),
        ),
    )
    .await;
    f.say(
        ADA,
        &call(
            "cron_add",
            json!({"prompt": "dentist weekly check", "every": "7d"}),
        ),
    )
    .await;
    assert!(f.folder(ADA).join("secret.txt").exists());
    let received: Vec<_> = std::fs::read_dir(f.folder(ADA).join("received"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert!(
        received.iter().any(|n| n.contains("passport")),
        "{received:?}"
    );
    let passport = f
        .folder(ADA)
        .join("received")
        .join(received.iter().find(|n| n.contains("passport")).unwrap());

    // Bob's own job, asking the same, fires in his chat with his memory.
    f.say(
        BOB,
        &call(
            "memory_store",
            json!({"key": "locker", "content": "Bob's locker code is 5150", "category": "core"}),
        ),
    )
    .await;
    f.say(
        BOB,
        &call(
            "cron_add",
            json!({"prompt": "what do you know about my locker code?", "in": "3s"}),
        ),
    )
    .await;

    // Bob probes through every tool and through the model's answers.
    let probes = [
        call("list_dir", json!({"path": "."})),
        call("list_dir", json!({"path": ".."})),
        call("glob", json!({"pattern": "**/*"})),
        call("file_read", json!({"path": "../2001/secret.txt"})),
        call(
            "file_read",
            json!({"path": f.folder(ADA).join("secret.txt").display().to_string()}),
        ),
        call("memory_recall", json!({"query": "locker code"})),
        call("memory_recall", json!({"query": "bank pin"})),
        call("cron_list", json!({})),
        call("cron_remove", json!({"id": 1})),
        call("cron_remove", json!({"id": 2})),
        "what is my locker code and my bank pin?".to_string(),
        format!("[DOCUMENT:{}]", passport.display()),
        "[DOCUMENT:../2001/secret.txt]".to_string(),
    ];
    let mut asked = String::new();
    for probe in &probes {
        asked.push_str(probe);
        let reply = f.say(BOB, probe).await;
        assert!(leaks(&reply, &asked).is_empty(), "{probe} → {reply}");
    }
    assert!(
        f.fake.uploads().iter().all(|u| u.chat_id != BOB),
        "a file was sent to Bob: {:?}",
        f.fake
            .uploads()
            .iter()
            .map(|u| &u.file_name)
            .collect::<Vec<_>>()
    );

    // Both jobs fire, each in its own chat, each with its owner's memory.
    let ada_job = f.wait_for(ADA, "dentist reminder").await;
    assert!(
        ada_job.contains("471158"),
        "Ada's job recalls her memory: {ada_job}"
    );
    let bob_job = f
        .wait_for(BOB, "what do you know about my locker code")
        .await;
    assert!(leaks(&bob_job, "").is_empty(), "Bob's job: {bob_job}");
    assert!(
        bob_job.contains("5150"),
        "Bob's job recalls his memory: {bob_job}"
    );
    assert!(!ada_job.contains("5150"), "Ada's job: {ada_job}");
    // Nothing of Ada's content ever reached Bob's chat.
    for text in f.sent_to(BOB) {
        for secret in ["471158", "987613", "P1234567", "dentist"] {
            assert!(!text.contains(secret), "Bob saw: {text}");
        }
    }

    // Positive controls: Ada asking the same gets her things.
    let own = [
        (call("list_dir", json!({"path": "."})), "secret.txt"),
        (call("glob", json!({"pattern": "**/*"})), "passport"),
        (
            call("memory_recall", json!({"query": "locker code"})),
            "471158",
        ),
        // Bob's cron_remove did not remove it.
        (call("cron_list", json!({})), "dentist weekly"),
    ];
    for (probe, want) in own {
        let reply = f.say(ADA, &probe).await;
        assert!(reply.contains(want), "{probe} → {reply}");
    }

    // History: everything the model was shown in Bob's conversations
    // (his own and his jobs') holds nothing of Ada's; hers does.
    let requests = f.parrot.requests.lock().unwrap().clone();
    let shown = |who: i64| -> String {
        requests
            .iter()
            .filter(|r| r.conversation.starts_with(&format!("telegram_{who}_")))
            .flat_map(|r| r.messages.iter().map(|m| m.content.clone()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (ada_saw, bob_saw) = (shown(ADA), shown(BOB));
    assert!(ada_saw.contains("987613") && ada_saw.contains("471158"));
    for secret in ["471158", "987613", "P1234567", "dentist"] {
        assert!(
            !bob_saw.contains(secret),
            "the model saw {secret} in Bob's turns"
        );
    }
    f.stop.cancel();
    f.daemon.stop().await;
}
