//! Issue 6's acceptance lines end to end: a real [`Daemon`] (supervised
//! listener, dispatcher, pipeline) whose only channel is a real
//! [`TelegramChannel`] speaking HTTP to the fake Bot API server on
//! 127.0.0.1, with scripted or slow providers, and once with the real model.
//!
//! One test per acceptance line (reactions and typing in order, the
//! refusal, partial drafts, the 10,000-character split, 429s, commands),
//! plus topics and media and the real SmolLM2 model once. The outage, the
//! 200-message burst and the restart are in `telegram_resilience.rs`.
//!
//! Real teloxide timing means real time here: short poll timeouts and draft
//! intervals keep the file quick (about 20 s).
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;
use crate::support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hearth::channels::telegram::utf16_len;
use hearth::config::StreamMode;
use hearth::pipeline::{Outcome, StaticProviders};
use hearth::providers::{Provider, ScriptedProvider};
use support::telegram_bot::*;
use support::telegram_fake::{BOT_USERNAME, Call, FakeTelegram, Incoming};
use support::{SlowEcho, config, last_user, local};

#[tokio::test]
async fn an_allowed_user_gets_eyes_typing_a_reply_then_a_check_and_a_stranger_only_the_refusal() {
    let provider = SlowEcho::new("echo", Duration::from_millis(500));
    let mut bot = bot(&["42"], StreamMode::Off, provider.clone()).await;
    let (id, outcome) = bot.ask(42, "hello there").await;
    assert_eq!(outcome, Outcome::Replied);

    let calls: Vec<Call> = bot
        .fake
        .calls()
        .into_iter()
        .filter(|c| c.method != "getUpdates" && c.method != "getMe" && c.method != "deleteWebhook")
        .collect();
    assert!(calls.iter().all(Call::ok), "{calls:?}");
    let seen: Vec<(String, Option<String>)> = calls
        .iter()
        .map(|c| {
            let what = match c.method.as_str() {
                "setMessageReaction" => emoji(c),
                "sendChatAction" => c.str("action"),
                "sendMessage" => Some(shown(c)),
                _ => None,
            };
            (c.method.clone(), what)
        })
        .collect();
    let expect = |m: &str, w: &str| (m.to_string(), Some(w.to_string()));
    assert_eq!(
        seen,
        [
            expect("setMessageReaction", "👀"),
            expect("sendChatAction", "typing"),
            expect("sendMessage", "echo: hello there"),
            // ✅ is not a reaction Telegram accepts; the channel maps it to 👌.
            expect("setMessageReaction", "👌"),
        ]
    );
    let message_id: i64 = id.rsplit(':').next().unwrap().parse().unwrap();
    for reaction in bot.fake.calls_of("setMessageReaction") {
        assert_eq!(reaction.i64("chat_id"), Some(42));
        assert_eq!(reaction.i64("message_id"), Some(message_id));
    }

    // A stranger: one refusal naming their id, for two messages; no model call.
    let before = bot.fake.calls().len();
    bot.fake.inject(Incoming::text(13, "let me in"));
    let (last, _) = bot.fake.inject(Incoming::text(13, "please"));
    let deadline = Instant::now() + WAIT;
    while bot.fake.confirmed_offset() <= last {
        assert!(Instant::now() < deadline, "update {last} never confirmed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bot.quiet(Duration::from_millis(500)).await;
    let after: Vec<Call> = bot.fake.calls()[before..]
        .iter()
        .filter(|c| c.method != "getUpdates")
        .cloned()
        .collect();
    assert_eq!(after.len(), 1, "only the refusal: {after:?}");
    assert_eq!(after[0].method, "sendMessage");
    assert_eq!(after[0].i64("chat_id"), Some(13));
    assert!(shown(&after[0]).contains("13"), "{}", shown(&after[0]));
    assert_eq!(provider.user_turns(), ["hello there"], "no model call");
    bot.daemon.stop().await;
}

#[tokio::test]
async fn partial_stream_mode_edits_a_draft_in_place_spaced_by_the_interval() {
    let words: Vec<String> = (0..24).map(|i| format!("word{i}")).collect();
    let whole = words.join(" ");
    let provider = Arc::new(Streamer {
        words,
        gap: Duration::from_millis(100),
    });
    let mut bot = bot(&["42"], StreamMode::Partial, provider).await;
    let (_, outcome) = bot.ask(42, "stream please").await;
    assert_eq!(outcome, Outcome::Replied);

    let sends = bot.fake.calls_of("sendMessage");
    assert_eq!(sends.len(), 1, "one message, edited in place: {sends:?}");
    assert!(
        whole.starts_with(&shown(&sends[0])) && shown(&sends[0]) != whole,
        "the draft starts with the first words: {}",
        shown(&sends[0])
    );
    let edits = bot.fake.calls_of("editMessageText");
    assert!(edits.iter().all(Call::ok), "no refused edit: {edits:?}");
    assert!(
        edits.len() >= 3,
        "the draft grew in several edits: {}",
        edits.len()
    );
    // 24 deltas in about 2.4 s with a 300 ms interval: far fewer edits than deltas.
    assert!(edits.len() < 20, "{} edits", edits.len());
    assert!(
        edits[0].at - sends[0].at >= Duration::from_millis(300),
        "the first edit came {:?} after the draft",
        edits[0].at - sends[0].at
    );
    for pair in edits.windows(2) {
        assert!(
            pair[1].at - pair[0].at >= Duration::from_millis(300),
            "edits {:?} apart",
            pair[1].at - pair[0].at
        );
    }
    // While streaming, every edit shows more; the final edit may repeat the
    // text to apply the formatting.
    let streaming = &edits[..edits.len() - 1];
    for pair in streaming.windows(2) {
        assert_ne!(shown(&pair[0]), shown(&pair[1]), "an unchanged edit");
    }
    assert_eq!(
        edits.last().unwrap().str("parse_mode").as_deref(),
        Some("HTML")
    );
    for edit in &edits {
        assert_eq!(edit.i64("message_id"), edits[0].i64("message_id"));
        assert!(whole.starts_with(&shown(edit)), "{}", shown(edit));
    }
    let last = edits.last().unwrap();
    assert_eq!(shown(last), whole, "the final edit holds the whole reply");
    assert_eq!(
        bot.fake
            .message_text(42, last.i64("message_id").unwrap())
            .as_deref(),
        Some(whole.as_str())
    );
    let reactions: Vec<Option<String>> = bot
        .fake
        .ok_calls_of("setMessageReaction")
        .iter()
        .map(emoji)
        .collect();
    assert_eq!(reactions, [Some("👀".into()), Some("👌".into())]);
    assert!(bot.fake.calls_of("setMessageReaction")[1].at >= last.at);
    bot.daemon.stop().await;
}

/// 10,000 characters in paragraphs of six lines, some outside the BMP.
fn long_reply() -> String {
    let mut reply = String::new();
    let mut n = 0;
    while reply.chars().count() < 10_000 {
        for _ in 0..6 {
            reply.push_str(&format!(
                "Sentence {n:04} says ünïcödé 😀 and more words.\n"
            ));
            n += 1;
        }
        reply.push('\n');
    }
    let reply: String = reply.chars().take(10_000).collect();
    reply.trim_end().to_string()
}

/// Asks for the long reply; returns the parts the user reads, in order.
async fn long_reply_parts(stream: StreamMode, reply: &str) -> Vec<String> {
    let provider: Arc<dyn Provider> = match stream {
        StreamMode::Off => Arc::new(ScriptedProvider::new([reply.to_string()])),
        // Streamed in five pieces, so a draft is certainly started.
        StreamMode::Partial => {
            let lines: Vec<&str> = reply.split(' ').collect();
            let piece = lines.len().div_ceil(5);
            Arc::new(Streamer {
                words: lines.chunks(piece).map(|c| c.join(" ")).collect(),
                gap: Duration::from_millis(100),
            })
        }
    };
    let mut bot = bot(&["42"], stream, provider).await;
    let (_, outcome) = bot.ask(42, "a long one").await;
    assert_eq!(outcome, Outcome::Replied);
    let calls = bot.fake.calls();
    assert!(
        calls.iter().all(Call::ok),
        "none refused as too long: {:?}",
        calls.iter().filter(|c| !c.ok()).collect::<Vec<_>>()
    );
    let mut parts = bot.sent_to(42);
    if stream == StreamMode::Partial {
        // The draft (the first message) ends holding the first part.
        let edits = bot.fake.ok_calls_of("editMessageText");
        let draft = edits.last().expect("the draft's final edit");
        let id = draft.i64("message_id").unwrap();
        parts[0] = bot.fake.message_text(42, id).expect("the draft");
        assert!(edits.iter().all(|e| e.i64("message_id") == Some(id)));
    }
    bot.daemon.stop().await;
    parts
}

#[tokio::test]
async fn a_10000_character_reply_arrives_in_ordered_parts_within_4096_units() {
    let reply = long_reply();
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    for stream in [StreamMode::Off, StreamMode::Partial] {
        let parts = long_reply_parts(stream, &reply).await;
        assert!(parts.len() >= 3, "{stream:?}: {} parts", parts.len());
        for part in &parts {
            assert!(
                utf16_len(part) <= 4096,
                "{stream:?}: a part of {}",
                utf16_len(part)
            );
        }
        // Cut at paragraph or line ends, never inside a sentence.
        for part in &parts[..parts.len() - 1] {
            assert!(part.trim_end().ends_with("words."), "{stream:?}: …{part}");
        }
        // In order and nothing lost (whitespace at the cuts aside).
        assert_eq!(squash(&parts.join("\n")), squash(&reply), "{stream:?}");
    }
}

#[tokio::test]
async fn a_reply_rate_limited_three_times_still_arrives_once() {
    let provider = SlowEcho::new("echo", Duration::from_millis(1500));
    let mut bot = bot(&["42"], StreamMode::Off, provider).await;
    bot.fake.inject(Incoming::text(42, "hello"));
    // 👀 and typing went out; the reply's sendMessage is the next call.
    bot.fake
        .wait_for("sendChatAction", 1, Duration::from_secs(10))
        .await;
    bot.fake.rate_limit(2, 3);
    let report = bot.reports(1).await.remove(0);
    assert_eq!(report.outcome, Outcome::Replied);

    let sends = bot.fake.calls_of("sendMessage");
    let statuses: Vec<u16> = sends.iter().map(|c| c.status).collect();
    assert_eq!(statuses, [429, 429, 429, 200]);
    assert!(
        sends[3].at - sends[0].at >= Duration::from_secs(6),
        "retry_after 2 honoured three times: {:?}",
        sends[3].at - sends[0].at
    );
    assert_eq!(bot.sent_to(42), ["echo: hello"], "delivered once");
    bot.quiet(Duration::from_millis(500)).await;
    assert_eq!(
        emoji(bot.fake.ok_calls_of("setMessageReaction").last().unwrap()).as_deref(),
        Some("👌")
    );
    bot.daemon.stop().await;
}

#[tokio::test]
async fn commands_from_telegram_go_through_the_pipeline_without_a_model_call() {
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    telegram_config(&mut cfg, &fake, &["42"], StreamMode::Off);
    cfg.routing
        .models
        .insert("coder".into(), "coder.gguf".into());
    cfg.routing.models.insert("slow".into(), "slow.gguf".into());
    let echo = SlowEcho::new("echo", Duration::from_millis(100));
    let coder = SlowEcho::new("coder", Duration::from_millis(100));
    let slow = SlowEcho::new("slow", Duration::from_secs(120));
    let providers = Arc::new(
        StaticProviders::new()
            .with("local", echo.clone())
            .with("local:coder", coder.clone())
            .with("local:slow", slow.clone()),
    );
    let mut bot = start(fake, home, cfg, providers, |b| b);

    assert_eq!(bot.ask(42, "my name is Ada").await.1, Outcome::Replied);
    for command in [
        "/status",
        "/models",
        "/model@hearth_test_bot coder",
        "/models",
    ] {
        assert_eq!(bot.ask(42, command).await.1, Outcome::Command, "{command}");
    }
    assert_eq!(bot.ask(42, "who am I?").await.1, Outcome::Replied);
    assert_eq!(bot.ask(42, "/new").await.1, Outcome::Command);
    assert_eq!(bot.ask(42, "and now?").await.1, Outcome::Replied);

    // /stop cuts a slow reply off: nothing else is sent for it.
    assert_eq!(bot.ask(42, "/model slow").await.1, Outcome::Command);
    let started = slow.started.notified();
    let (_, novel) = bot.fake.inject(Incoming::text(42, "write a novel"));
    tokio::time::timeout(WAIT, started)
        .await
        .expect("the slow reply started");
    let t0 = Instant::now();
    bot.fake.inject(Incoming::text(42, "/stop"));
    let done = bot.reports(2).await;
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "/stop waited for the reply"
    );
    let novel = done
        .iter()
        .find(|r| r.message_id == format!("42:{novel}"))
        .expect("a report for the cut-off message");
    assert_eq!(novel.outcome, Outcome::Cancelled);
    assert_eq!(bot.ask(42, "/stop").await.1, Outcome::Command);

    let sent = bot.sent_to(42);
    assert_eq!(sent[0], "echo: my name is Ada");
    assert!(sent[1].contains("channel telegram: running"), "{}", sent[1]);
    assert!(
        sent[1].contains("model for this chat: default"),
        "{}",
        sent[1]
    );
    assert!(
        sent[1].contains("2 messages in this conversation"),
        "{}",
        sent[1]
    );
    assert!(
        sent[2].contains("• default — ") && sent[2].contains("(in use)"),
        "{}",
        sent[2]
    );
    assert!(
        sent[2].lines().any(|l| l == "• coder — coder.gguf"),
        "{}",
        sent[2]
    );
    assert_eq!(sent[3], "This chat now uses coder.");
    assert!(
        sent[4].contains("• coder — coder.gguf (in use)"),
        "{}",
        sent[4]
    );
    assert_eq!(sent[5], "coder: who am I?");
    assert!(sent[6].starts_with("(new conversation)"), "{}", sent[6]);
    assert_eq!(
        sent[7], "echo: and now?",
        "/new also went back to the default model"
    );
    assert_eq!(sent[8], "This chat now uses slow.");
    assert_eq!(sent[9..], ["Stopped.", "Nothing is running."]);

    // Model calls only for the ordinary messages; /new forgot Ada.
    assert_eq!(echo.user_turns(), ["my name is Ada", "and now?"]);
    assert_eq!(coder.user_turns(), ["who am I?"]);
    assert_eq!(slow.user_turns(), ["write a novel"]);
    assert!(
        coder.requests()[0]
            .messages
            .iter()
            .any(|m| m.content.contains("Ada"))
    );
    assert!(
        echo.requests()[1]
            .messages
            .iter()
            .all(|m| !m.content.contains("Ada"))
    );
    // Commands get no reactions: 👀 and 👌 for three replies, 👀 for the cut-off one.
    let reactions: Vec<Option<String>> = bot
        .fake
        .ok_calls_of("setMessageReaction")
        .iter()
        .map(emoji)
        .collect();
    let eyes = Some("👀".to_string());
    let ok = Some("👌".to_string());
    assert_eq!(
        reactions,
        [
            eyes.clone(),
            ok.clone(),
            eyes.clone(),
            ok.clone(),
            eyes.clone(),
            ok.clone(),
            eyes
        ]
    );
    bot.daemon.stop().await;
}

/// The real default model, wrapped as the daemon wraps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// Held across the test's awaits on purpose: it serialises the engines of
// the whole test binary, and this runtime is the test's own.
#[allow(clippy::await_holding_lock)]
async fn real_model_answers_an_allowed_user_in_telegram() {
    let _engine_turn = common::engine_lock();
    let model = common::model(common::SMOLLM2);
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    telegram_config(&mut cfg, &fake, &["42"], StreamMode::Partial);
    cfg.model.path = model.display().to_string();
    cfg.model.context_size = 2048;
    cfg.generation.max_tokens = 48;
    cfg.generation.temperature = 0.0;
    let mut settings = hearth::engine_setup::engine_settings(&cfg).expect("engine settings");
    settings.threads = common::engine_threads();
    let engine = tokio::task::spawn_blocking(move || hearth::engine::Engine::start(settings, None))
        .await
        .unwrap()
        .expect("the engine starts");
    let provider = Arc::new(hearth::providers::LocalProvider::new(engine));
    let providers = Arc::new(StaticProviders::new().with("local", provider.clone()));
    let mut bot = start(fake, home, cfg, providers, |b| b);

    let (_, outcome) = bot.ask(42, "What is the capital of France?").await;
    assert_eq!(outcome, Outcome::Replied);
    // The draft's final text, or the message sent when no draft started.
    let reply = match bot.fake.ok_calls_of("editMessageText").last() {
        Some(last) => bot
            .fake
            .message_text(42, last.i64("message_id").unwrap())
            .expect("the reply message"),
        None => bot.sent_to(42).pop().expect("a reply"),
    };
    assert!(!reply.trim().is_empty());
    for tag in ["<tool_call", "<think", "</think>", "<|", "<im_"] {
        assert!(!reply.contains(tag), "{tag} in the reply: {reply}");
    }
    let reactions: Vec<Option<String>> = bot
        .fake
        .ok_calls_of("setMessageReaction")
        .iter()
        .map(emoji)
        .collect();
    assert_eq!(reactions, [Some("👀".into()), Some("👌".into())]);
    let Bot { daemon, fake, .. } = bot;
    daemon.stop().await;
    drop(fake);
    // The engine is dropped off the async threads (it joins its worker).
    let _ = tokio::task::spawn_blocking(move || drop(provider)).await;
}

#[tokio::test]
async fn a_document_in_a_group_topic_is_answered_in_that_topic_with_a_photo() {
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    telegram_config(&mut cfg, &fake, &["42"], StreamMode::Partial);
    let group = -100_123;
    // The group's own folder in the workspace.
    let workspace = cfg.agent.workspace.join(format!("telegram/{group}"));
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("cat.png"), b"PNGDATA").unwrap();
    // The marker streams early, so a draft edit comes after it.
    let reply = "Here is a cat. [IMAGE:cat.png] It sits on your notes, which are short and say nothing else.";
    let provider = Arc::new(Recorder {
        requests: Mutex::default(),
        inner: Streamer {
            words: reply.split(' ').map(str::to_string).collect(),
            gap: Duration::from_millis(80),
        },
    });
    let mut bot = start(fake, home, cfg, local(provider.clone()), |b| b);

    let mut m = Incoming::text(42, "");
    m.text = None;
    m.chat_id = Some(group);
    m.thread_id = Some(77);
    m.document = Some(("notes.txt".into(), b"my notes".to_vec()));
    m.caption = Some(format!("@{BOT_USERNAME} summarise this"));
    let (_, message) = bot.fake.inject(m);
    let report = bot.reports(1).await.remove(0);
    assert_eq!(report.message_id, format!("{group}:{message}"));
    assert_eq!(report.outcome, Outcome::Replied);

    // The model saw the saved file as a marker, and the caption without the mention.
    let asked = last_user(&provider.requests.lock().unwrap()[0]);
    let (marker, caption) = asked.split_once('\n').expect("marker and caption");
    assert_eq!(caption, "summarise this");
    let path = marker
        .strip_prefix("[DOCUMENT:")
        .and_then(|p| p.strip_suffix(']'))
        .expect("a document marker");
    assert!(std::path::Path::new(path).starts_with(&workspace), "{path}");
    assert_eq!(std::fs::read(path).unwrap(), b"my notes");

    // Everything went to the topic: typing, the draft, the photo.
    for method in ["sendChatAction", "sendMessage", "sendPhoto"] {
        let calls = bot.fake.ok_calls_of(method);
        assert!(!calls.is_empty(), "no {method}");
        for c in calls {
            assert_eq!(
                (c.i64("chat_id"), c.i64("message_thread_id")),
                (Some(group), Some(77)),
                "{method}"
            );
        }
    }
    let uploads = bot.fake.uploads();
    assert_eq!(uploads.len(), 1);
    assert_eq!(
        (uploads[0].file_name.as_str(), uploads[0].bytes.as_slice()),
        ("cat.png", &b"PNGDATA"[..])
    );
    let edits = bot.fake.ok_calls_of("editMessageText");
    let last = edits.last().expect("the draft's final edit");
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(
        squash(
            &bot.fake
                .message_text(group, last.i64("message_id").unwrap())
                .unwrap()
        ),
        squash(&reply.replace("[IMAGE:cat.png]", ""))
    );
    assert!(edits.len() >= 2, "the draft was edited while streaming");
    // The marker never showed, not even in the draft.
    for c in bot.fake.calls_of("sendMessage").iter().chain(&edits) {
        assert!(!shown(c).contains("[IMAGE:"), "{}", shown(c));
    }
    let reactions = bot.fake.ok_calls_of("setMessageReaction");
    assert_eq!(reactions.len(), 2);
    assert!(
        reactions
            .iter()
            .all(|c| c.i64("chat_id") == Some(group) && c.i64("message_id") == Some(message))
    );
    bot.daemon.stop().await;
}
