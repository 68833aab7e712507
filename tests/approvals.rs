//! Approvals: a call of a tool in `[agent] approve` runs only after the
//! person who started the turn allows it, in their own chat: Telegram
//! buttons through the fake Bot API, the gateway's follow-up request, and
//! the pipeline's rules (always, reset, timeout, a channel that cannot
//! ask, `autonomy = "full"`). The terminal's y/N is in `tests/chat_pty.rs`.
//!
//! The model is the parrot: it writes the call it is told to, and repeats
//! what the tool answered, so its reply shows what the model was told.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hearth::channels::{Answer, Channel, GatewayChannel, InMemoryChannel};
use hearth::config::{Config, Environment, StreamMode};
use hearth::daemon::Daemon;
use hearth::dispatch::Report;
use hearth::pipeline::RuntimeBuilder;
use hearth::tools::ToolRegistry;
use serde_json::{Value, json};
use support::telegram_bot::{self, WAIT, shown, telegram_config};
use support::telegram_fake::{BOT_USERNAME, FakeTelegram, Incoming};
use support::*;
use tokio::sync::mpsc;

const ADA: i64 = 1001;
const BOB: i64 = 1002;

fn write_call(path: &str, content: &str) -> String {
    call("file_write", json!({"path": path, "content": content}))
}

/// A daemon with the tools `hearth daemon` builds, the parrot, and `channel`.
fn daemon(
    cfg: Config,
    home: &Path,
    channel: Arc<dyn Channel>,
) -> (Daemon, mpsc::UnboundedReceiver<Report>) {
    let env = Environment::with_home(home);
    let context = hearth::cli::tools_cmd::context(&cfg, &env).unwrap();
    let tools = ToolRegistry::for_config(&cfg.agent, &context.sandbox);
    let runtime = RuntimeBuilder::new(cfg, local(Arc::new(Parrot::default())), context)
        .tools(Arc::new(tools))
        .channel(channel)
        .build()
        .unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    (Daemon::start(runtime, Some(tx)), rx)
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Report>) -> Report {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("a report in time")
        .expect("the daemon runs")
}

struct Mem {
    daemon: Daemon,
    rx: mpsc::UnboundedReceiver<Report>,
    channel: Arc<InMemoryChannel>,
    workspace: PathBuf,
    home: tempfile::TempDir,
}

fn mem(tweak: impl FnOnce(&mut Config)) -> Mem {
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    tweak(&mut cfg);
    let workspace = cfg.agent.workspace.join("mem");
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, rx) = daemon(cfg, home.path(), channel.clone());
    Mem {
        daemon,
        rx,
        channel,
        workspace,
        home,
    }
}

impl Mem {
    async fn say(&mut self, who: &str, text: &str) -> String {
        self.channel.inject_text(who, text);
        next(&mut self.rx).await;
        texts(&self.channel, who).pop().unwrap_or_default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_or_unanswered_call_changes_nothing_and_the_reply_says_so() {
    let mut m = mem(|_| {});
    m.channel.answer_approvals([Some(Answer::Deny), None]);
    let reply = m.say("ada", &write_call("a.txt", "x")).await;
    assert!(reply.contains("denied"), "{reply}");
    assert!(reply.contains("could not do it"), "{reply}");
    let reply = m.say("ada", &write_call("a.txt", "x")).await;
    assert!(reply.contains("did not allow this call within"), "{reply}");
    assert!(!m.workspace.join("ada/a.txt").exists());
    // The question named the tool, its arguments, and who may answer.
    let asked = m.channel.asked();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0].tool, "file_write");
    assert!(asked[0].arguments.contains("a.txt"), "{:?}", asked[0]);
    assert_eq!(asked[0].sender, "ada");
    // Positive control: allowed, it runs.
    m.channel.answer_approvals([Some(Answer::Once)]);
    m.say("ada", &write_call("a.txt", "x")).await;
    assert_eq!(
        std::fs::read_to_string(m.workspace.join("ada/a.txt")).unwrap(),
        "x"
    );
    m.daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_holds_for_that_person_across_a_restart_until_reset() {
    let mut m = mem(|_| {});
    m.channel.answer_approvals([Some(Answer::Always)]);
    m.say("ada", &write_call("1.txt", "1")).await;
    m.say("ada", &write_call("2.txt", "2")).await;
    assert_eq!(m.channel.asked().len(), 1, "always: asked once");
    assert!(m.workspace.join("ada/2.txt").exists());
    // Another person is still asked (and here cannot be: nothing runs).
    let reply = m.say("bob", &write_call("b.txt", "b")).await;
    assert!(reply.contains("cannot ask"), "{reply}");
    assert!(!m.workspace.join("bob/b.txt").exists());
    m.daemon.stop().await;

    // After a restart the grant holds, until `/approvals reset`.
    let Mem { home, .. } = m;
    let cfg = config(home.path());
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let workspace = cfg.agent.workspace.join("mem");
    let (daemon, rx) = self::daemon(cfg, home.path(), channel.clone());
    let mut m = Mem {
        daemon,
        rx,
        channel,
        workspace,
        home,
    };
    m.say("ada", &write_call("3.txt", "3")).await;
    assert!(m.workspace.join("ada/3.txt").exists(), "the grant held");
    assert!(m.channel.asked().is_empty());
    let reply = m.say("ada", "/approvals reset").await;
    assert!(reply.contains("ask again"), "{reply}");
    let reply = m.say("ada", &write_call("4.txt", "4")).await;
    assert!(reply.contains("cannot ask"), "{reply}");
    assert!(!m.workspace.join("ada/4.txt").exists());
    m.daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_listed_tools_ask_and_full_autonomy_asks_nothing() {
    // `file_read` is not in the default list: it runs without a question.
    let mut m = mem(|_| {});
    std::fs::create_dir_all(m.workspace.join("ada")).unwrap();
    std::fs::write(m.workspace.join("ada/n.txt"), "note").unwrap();
    let reply = m
        .say("ada", &call("file_read", json!({"path": "n.txt"})))
        .await;
    assert!(reply.contains("note"), "{reply}");
    assert!(m.channel.asked().is_empty());
    m.daemon.stop().await;

    let mut m = mem(|c| c.agent.autonomy = hearth::security::Autonomy::Full);
    m.say("ada", &write_call("f.txt", "f")).await;
    assert!(m.channel.asked().is_empty());
    assert!(m.workspace.join("ada/f.txt").exists());
    m.daemon.stop().await;

    // An owner who lists nothing is asked nothing; one who lists file_read
    // is asked about reads.
    let mut m = mem(|c| c.agent.approve = vec!["file_read".into()]);
    m.say("ada", &write_call("g.txt", "g")).await;
    assert!(m.workspace.join("ada/g.txt").exists());
    let reply = m
        .say("ada", &call("file_read", json!({"path": "g.txt"})))
        .await;
    assert!(reply.contains("cannot ask"), "{reply}");
    m.daemon.stop().await;
}

// ---- Telegram -----------------------------------------------------------

struct Tg {
    fake: FakeTelegram,
    daemon: Daemon,
    rx: mpsc::UnboundedReceiver<Report>,
    workspace: PathBuf,
    _home: tempfile::TempDir,
}

async fn telegram(timeout_secs: u64) -> Tg {
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    telegram_config(
        &mut cfg,
        &fake,
        &[&ADA.to_string(), &BOB.to_string()],
        StreamMode::Off,
    );
    cfg.agent.approval_timeout_secs = timeout_secs;
    let workspace = cfg.agent.workspace.join("telegram");
    let channel = telegram_bot::channel(&cfg);
    let (daemon, rx) = daemon(cfg, home.path(), channel);
    Tg {
        fake,
        daemon,
        rx,
        workspace,
        _home: home,
    }
}

impl Tg {
    /// Waits for a question with buttons in `chat` other than those in
    /// `seen`; returns its message id.
    async fn question(&self, chat: i64, seen: &[i64]) -> i64 {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(id) = self
                .fake
                .with_buttons(chat)
                .into_iter()
                .find(|id| !seen.contains(id))
            {
                let text = self.fake.message_text(chat, id).unwrap();
                assert!(text.contains("file_write"), "{text}");
                return id;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no question in chat {chat}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn buttons_gone(&self, chat: i64, id: i64) {
        let deadline = tokio::time::Instant::now() + WAIT;
        while !self.fake.keyboard(chat, id).is_empty() {
            assert!(tokio::time::Instant::now() < deadline, "buttons stayed");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn last_reply(&self, chat: i64) -> String {
        self.fake
            .ok_calls_of("sendMessage")
            .iter()
            .filter(|c| c.i64("chat_id") == Some(chat) && c.params.get("reply_markup").is_none())
            .map(shown)
            .next_back()
            .unwrap_or_default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_buttons_allow_deny_and_time_out_and_only_the_asker_answers() {
    let mut t = telegram(5).await;
    let group = -100_200;

    // Ada asks in a group; Bob, a member, presses Allow: not his to answer.
    t.fake.inject(Incoming {
        chat_id: Some(group),
        ..Incoming::text(
            ADA,
            &format!("@{BOT_USERNAME} {}", write_call("allowed.txt", "yes")),
        )
    });
    let q = t.question(group, &[]).await;
    assert_eq!(
        t.fake.keyboard(group, q),
        ["Allow once", "Always for this chat", "Deny"]
    );
    t.fake.press(BOB, group, q, "Allow once").unwrap();
    let answers = t.fake.wait_for("answerCallbackQuery", 1, WAIT).await;
    assert!(
        answers[0]
            .str("text")
            .unwrap()
            .contains("Only the person who asked"),
        "{answers:?}"
    );
    assert_eq!(t.fake.keyboard(group, q).len(), 3, "still open");
    // Ada allows it: it runs, the buttons go, the question shows the verdict.
    t.fake.press(ADA, group, q, "Allow once").unwrap();
    next(&mut t.rx).await;
    let folder = t.workspace.join(group.to_string());
    assert_eq!(
        std::fs::read_to_string(folder.join("allowed.txt")).unwrap(),
        "yes"
    );
    t.buttons_gone(group, q).await;
    assert!(
        t.fake
            .message_text(group, q)
            .unwrap()
            .contains("allowed once"),
        "{:?}",
        t.fake.message_text(group, q)
    );
    // A second press on the closed question is told so.
    assert!(
        t.fake.press(ADA, group, q, "Allow once").is_err(),
        "no button left to press"
    );

    // Deny: nothing is written and the model says it could not.
    t.fake
        .inject(Incoming::text(ADA, &write_call("denied.txt", "no")));
    let q = t.question(ADA, &[]).await;
    t.fake.press(ADA, ADA, q, "Deny").unwrap();
    next(&mut t.rx).await;
    let mine = t.workspace.join(ADA.to_string());
    assert!(!mine.join("denied.txt").exists());
    let reply = t.last_reply(ADA);
    assert!(
        reply.contains("denied") && reply.contains("could not"),
        "{reply}"
    );
    t.buttons_gone(ADA, q).await;

    // No answer within the timeout: denied, buttons removed, said so.
    t.fake
        .inject(Incoming::text(ADA, &write_call("late.txt", "late")));
    let late = t.question(ADA, &[q]).await;
    let q = late;
    next(&mut t.rx).await;
    assert!(!mine.join("late.txt").exists());
    assert!(
        t.last_reply(ADA)
            .contains("did not allow this call within 5 s"),
        "{}",
        t.last_reply(ADA)
    );
    t.buttons_gone(ADA, q).await;
    assert!(
        t.fake
            .message_text(ADA, q)
            .unwrap()
            .contains("no answer within 5 s"),
        "{:?}",
        t.fake.message_text(ADA, q)
    );
    t.daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_always_for_this_chat_asks_once_and_a_stale_button_is_closed() {
    let mut t = telegram(60).await;
    t.fake
        .inject(Incoming::text(BOB, &write_call("1.txt", "1")));
    let q = t.question(BOB, &[]).await;
    t.fake.press(BOB, BOB, q, "Always for this chat").unwrap();
    next(&mut t.rx).await;
    t.fake
        .inject(Incoming::text(BOB, &write_call("2.txt", "2")));
    next(&mut t.rx).await;
    let folder = t.workspace.join(BOB.to_string());
    assert!(folder.join("1.txt").exists() && folder.join("2.txt").exists());
    let questions = t
        .fake
        .ok_calls_of("sendMessage")
        .into_iter()
        .filter(|c| c.params.get("reply_markup").is_some())
        .count();
    assert_eq!(questions, 1, "always: asked once");
    // Ada has granted nothing: she is still asked.
    t.fake
        .inject(Incoming::text(ADA, &write_call("a.txt", "a")));
    let q = t.question(ADA, &[]).await;
    t.fake.press(ADA, ADA, q, "Deny").unwrap();
    next(&mut t.rx).await;
    assert!(!t.workspace.join(ADA.to_string()).join("a.txt").exists());

    // A button of a question an earlier run left open does nothing, says
    // so, and is removed.
    let stale = t.fake.earlier_bot_message(
        ADA,
        "🔐 Allow `shell`?",
        json!({"inline_keyboard": [[{"text": "Allow once", "callback_data": "ap:0123456789abcdef0123456789abcdef:once"}]]}),
    );
    t.fake.press(ADA, ADA, stale, "Allow once").unwrap();
    t.buttons_gone(ADA, stale).await;
    let answers = t.fake.ok_calls_of("answerCallbackQuery");
    assert!(
        answers
            .last()
            .unwrap()
            .str("text")
            .unwrap()
            .contains("closed"),
        "{answers:?}"
    );
    assert!(t.fake.ok_calls_of("editMessageReplyMarkup").len() == 1);
    t.daemon.stop().await;
}

// ---- Gateway ------------------------------------------------------------

const TOKEN: &str = "gw-token-0123456789abcdef";

async fn gateway() -> (Daemon, String, PathBuf, tempfile::TempDir) {
    let (daemon, url, workspace, home, _) = gateway_with("").await;
    (daemon, url, workspace, home)
}

/// [`gateway`] with `extra` keys in `[channels.gateway]`; the channel too.
async fn gateway_with(
    extra: &str,
) -> (
    Daemon,
    String,
    PathBuf,
    tempfile::TempDir,
    Arc<GatewayChannel>,
) {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("hearth.toml");
    std::fs::write(
        &path,
        format!(
            "[agent]\napproval_timeout_secs = 5\n[channels.gateway]\nlisten = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\n{extra}"
        ),
    )
    .unwrap();
    let cfg = Config::load_file(&path, &Environment::with_home(home.path())).unwrap();
    let workspace = cfg.agent.workspace.join("gateway");
    let channel = Arc::new(
        hearth::daemon::gateway_settings(&cfg.gateway)
            .map(GatewayChannel::new)
            .unwrap(),
    );
    let (daemon, _rx) = daemon(cfg, home.path(), channel.clone());
    let addr = tokio::time::timeout(WAIT, channel.local_addr())
        .await
        .unwrap();
    (daemon, format!("http://{addr}"), workspace, home, channel)
}

/// Answers question `id` as the client of `chat`.
async fn answer(url: &str, id: &str, chat: &str, answer: &str) -> (u16, Value) {
    post(
        url,
        "/v1/approval",
        json!({"id": id, "chat": chat, "answer": answer}),
    )
    .await
}

async fn post(url: &str, path: &str, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{url}{path}"))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_returns_the_question_and_the_follow_up_answers_it() {
    let (daemon, url, workspace, _home) = gateway().await;
    let folder = workspace.join("kitchen");

    // Deny: the follow-up gets the reply, which says it could not.
    let (status, body) = post(
        &url,
        "/v1/message",
        json!({"text": write_call("denied.txt", "no"), "chat": "kitchen"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let q = &body["approval"];
    assert_eq!(q["tool"], "file_write", "{body}");
    assert!(q["arguments"].as_str().unwrap().contains("denied.txt"));
    assert_eq!(q["expires_in_secs"], 5);
    let id = q["id"].as_str().unwrap().to_string();
    // Someone who names another chat cannot answer it.
    let (status, _) = answer(&url, &id, "garage", "once").await;
    assert_eq!(status, 404);
    // A web page cannot answer it either.
    let foreign = reqwest::Client::new()
        .post(format!("{url}/v1/approval"))
        .header("origin", "https://evil.example")
        .header("content-type", "text/plain")
        .body(json!({"id": id, "chat": "kitchen", "answer": "once"}).to_string())
        .send()
        .await
        .unwrap();
    assert!(foreign.status().is_client_error());
    let (status, body) = answer(&url, &id, "kitchen", "deny").await;
    assert_eq!(status, 200, "{body}");
    let reply = body["reply"].as_str().unwrap();
    assert!(
        reply.contains("denied") && reply.contains("could not"),
        "{reply}"
    );
    assert!(!folder.join("denied.txt").exists());
    // The question is closed now.
    let (status, _) = answer(&url, &id, "kitchen", "once").await;
    assert_eq!(status, 404);

    // Allow: it runs, and the follow-up gets the reply.
    let (_, body) = post(
        &url,
        "/v1/message",
        json!({"text": write_call("allowed.txt", "yes"), "chat": "kitchen"}),
    )
    .await;
    let id = body["approval"]["id"].as_str().unwrap().to_string();
    let (status, body) = answer(&url, &id, "kitchen", "once").await;
    assert_eq!(status, 200, "{body}");
    assert!(body["reply"].is_string(), "{body}");
    assert_eq!(
        std::fs::read_to_string(folder.join("allowed.txt")).unwrap(),
        "yes"
    );

    // Nobody answers: denied after the timeout; a late answer finds it closed.
    let (_, body) = post(
        &url,
        "/v1/message",
        json!({"text": write_call("late.txt", "late"), "chat": "kitchen"}),
    )
    .await;
    let id = body["approval"]["id"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_secs(7)).await;
    let (status, _) = answer(&url, &id, "kitchen", "once").await;
    assert_eq!(status, 404);
    assert!(!folder.join("late.txt").exists());
    // The chat still answers.
    let (status, body) = post(
        &url,
        "/v1/message",
        json!({"text": "hello", "chat": "kitchen"}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(body["reply"].as_str().unwrap().contains("hello"), "{body}");
    daemon.stop().await;
}

/// The owner answers a gateway client's question on the web page: the
/// call runs as the page said, the client's own later answer gets the
/// reply and is told where it was decided (not a 404), and a client that
/// never comes back leaves nothing parked. The control: a question the
/// client answers itself is parked until it does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_answered_on_the_page_tells_the_client_and_lets_go() {
    let (daemon, url, workspace, _home, channel) = gateway_with("reply_timeout_secs = 2\n").await;
    let folder = workspace.join("kitchen");
    let board = daemon.runtime().questions().clone();
    let ask = |file: &str| {
        post(
            &url,
            "/v1/message",
            json!({"text": write_call(file, "paged"), "chat": "kitchen"}),
        )
    };
    let (status, body) = ask("paged.txt").await;
    assert_eq!(status, 200, "{body}");
    let id = body["approval"]["id"].as_str().unwrap().to_string();
    assert_eq!(channel.parked_questions(), 1);
    assert!(
        board.answer(&id, Answer::Once),
        "the page's answer is taken"
    );
    let written = folder.join("paged.txt");
    let deadline = std::time::Instant::now() + WAIT;
    while !written.exists() {
        assert!(std::time::Instant::now() < deadline, "the call never ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The client comes back with its own answer: the page's stands.
    let (status, body) = answer(&url, &id, "kitchen", "deny").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["answered_on_page"], "once", "{body}");
    assert!(body["reply"].is_string(), "{body}");
    assert_eq!(channel.parked_questions(), 0);
    let (status, _) = answer(&url, &id, "kitchen", "once").await;
    assert_eq!(status, 404, "answered once is answered");

    // Answered on the page, and the client never comes back.
    let (_, body) = ask("gone.txt").await;
    let id = body["approval"]["id"].as_str().unwrap().to_string();
    assert!(board.answer(&id, Answer::Once));
    // The control: the client's own question, left open, stays parked
    // while it may still be answered.
    let (_, body) = ask("mine.txt").await;
    let mine = body["approval"]["id"].as_str().unwrap().to_string();
    assert_eq!(channel.parked_questions(), 2);
    // Each is let go by its question's 5 s and the reply's 2 s.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while channel.parked_questions() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{} parked questions were never let go",
            channel.parked_questions()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (status, _) = answer(&url, &mine, "kitchen", "once").await;
    assert_eq!(status, 404);
    assert!(!folder.join("mine.txt").exists(), "unanswered is denied");
    daemon.stop().await;
}

/// The approval question hides nothing that decides the risk: a
/// `file_write` whose 720-character content comes before its path shows
/// the path whole on Telegram (the buttons' message) and to every channel
/// (the question it is handed), with how much content was left out. The
/// control: a short call is shown as the model wrote it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_question_shows_the_path_whatever_comes_before_it() {
    let hostile = call(
        "file_write",
        json!({"content": "A".repeat(720), "path": "AGENTS.md"}),
    );
    let mut t = telegram(5).await;
    t.fake.inject(Incoming::text(ADA, &hostile));
    let q = t.question(ADA, &[]).await;
    let text = t.fake.message_text(ADA, q).unwrap();
    assert!(text.contains("\"path\":\"AGENTS.md\""), "{text}");
    assert!(text.contains("more characters not shown"), "{text}");
    t.fake.press(ADA, ADA, q, "Deny").unwrap();
    next(&mut t.rx).await;

    let mut m = mem(|_| {});
    m.channel
        .answer_approvals([Some(Answer::Deny), Some(Answer::Deny)]);
    m.say("ada", &hostile).await;
    m.say("ada", &write_call("short.txt", "hi")).await;
    let asked = m.channel.asked();
    assert!(
        asked[0].question().contains("AGENTS.md"),
        "{}",
        asked[0].question()
    );
    assert_eq!(
        asked[1].arguments,
        json!({"path": "short.txt", "content": "hi"}).to_string()
    );
    m.daemon.stop().await;
}
