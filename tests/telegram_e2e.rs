//! Issue 6's acceptance lines end to end: a real [`Daemon`] (supervised
//! listener, dispatcher, pipeline) whose only channel is a real
//! [`TelegramChannel`] speaking HTTP to the fake Bot API server on
//! 127.0.0.1, with scripted or slow providers, and once with the real model.
//!
//! One test per acceptance line (reactions and typing in order, the
//! refusal, partial drafts, the 10,000-character split, 429s, a 10 s outage,
//! the 200-message burst, commands), plus topics and media, a daemon restart
//! with messages queued, and the real SmolLM2 model once.
//!
//! Real teloxide timing means real time here: short poll timeouts and draft
//! intervals keep the file quick (about 20 s).

mod common;
mod support;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hearth::channels::telegram::utf16_len;
use hearth::config::StreamMode;
use hearth::pipeline::ListenerState;
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
async fn after_ten_seconds_down_the_channel_recovers_and_answers_what_came_meanwhile_once() {
    let provider = SlowEcho::new("echo", Duration::from_millis(100));
    let mut bot = bot(&["42", "43"], StreamMode::Off, provider.clone()).await;
    assert_eq!(bot.ask(42, "before").await.1, Outcome::Replied);

    let down_at = Instant::now();
    bot.fake.set_down(true);
    let (_, one) = bot.fake.inject(Incoming::text(42, "during one"));
    let (last, two) = bot.fake.inject(Incoming::text(43, "during two"));
    tokio::time::sleep(Duration::from_secs(10)).await;
    let status = bot.daemon.runtime().status().clone();
    assert!(
        down_at.elapsed() >= Duration::from_secs(10),
        "the sleep is real time"
    );
    bot.fake.set_down(false);

    let done = bot.reports(2).await;
    let got: BTreeMap<String, Outcome> = done
        .into_iter()
        .map(|r| (r.message_id, r.outcome))
        .collect();
    let want: BTreeMap<String, Outcome> = [
        (format!("42:{one}"), Outcome::Replied),
        (format!("43:{two}"), Outcome::Replied),
    ]
    .into();
    assert_eq!(got, want);
    let deadline = Instant::now() + WAIT;
    while bot.fake.confirmed_offset() <= last {
        assert!(Instant::now() < deadline, "update {last} never confirmed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bot.quiet(Duration::from_secs(1)).await;
    assert_eq!(bot.sent_to(42), ["echo: before", "echo: during one"]);
    assert_eq!(bot.sent_to(43), ["echo: during two"]);
    let mut turns = provider.user_turns();
    turns.sort();
    assert_eq!(
        turns,
        ["before", "during one", "during two"],
        "one model call each"
    );
    let health = status.listener("telegram").unwrap();
    assert_eq!(health.state, ListenerState::Running);
    // teloxide holds a 5xx answer for 10 s before failing the call, so the
    // listener fails once, near the end of the outage, and the first restart
    // (2 s later) finds the API back.
    assert!(health.restarts >= 1, "{health:?}");
    let polls: Vec<u16> = bot
        .fake
        .calls_of("getUpdates")
        .iter()
        .map(|c| c.status)
        .collect();
    assert!(polls.contains(&502), "{polls:?}");
    let back = bot
        .fake
        .calls()
        .into_iter()
        .find(|c| c.at > down_at && c.ok() && c.method == "getUpdates")
        .expect("a successful poll after the outage");
    assert!(back.at - down_at >= Duration::from_secs(10));
    bot.daemon.stop().await;
}

/// The last paragraph of a text: the message an echo answered.
fn last_part(text: &str) -> &str {
    text.rsplit("\n\n").next().unwrap_or(text).trim()
}

#[tokio::test]
async fn a_burst_of_200_messages_from_20_users_is_answered_once_or_superseded() {
    let provider = SlowEcho::new("echo", Duration::from_millis(200));
    let mut bot = bot(&["*"], StreamMode::Off, provider.clone()).await;
    let mut ids: HashMap<String, usize> = HashMap::new();
    let mut last_of: HashMap<i64, String> = HashMap::new();
    // Each user sends runs of three in a row (the later ones interrupt the
    // earlier), the 20 users taking turns.
    for i in 0..200 {
        let user = 100 + ((i / 3) % 20) as i64;
        let (_, message) = bot
            .fake
            .inject(Incoming::text(user, &format!("message {i}")));
        let id = format!("{user}:{message}");
        ids.insert(id.clone(), i);
        last_of.insert(user, id);
    }
    let done = bot.reports(200).await;
    bot.quiet(Duration::from_secs(1)).await;

    let mut outcome_of: HashMap<usize, Outcome> = HashMap::new();
    for r in &done {
        let i = *ids
            .get(&r.message_id)
            .expect("a report for an injected message");
        assert!(
            outcome_of.insert(i, r.outcome.clone()).is_none(),
            "message {i} handled twice"
        );
        assert!(
            matches!(r.outcome, Outcome::Replied | Outcome::Superseded),
            "message {i}: {:?}",
            r.outcome
        );
    }
    for id in last_of.values() {
        assert_eq!(
            outcome_of[&ids[id]],
            Outcome::Replied,
            "{id}: a last message"
        );
    }
    // Sends and model calls per message: one each for a reply, at most one
    // (cut off) model call for a superseded message, never a send.
    let mut sends: HashMap<String, usize> = HashMap::new();
    for call in bot.fake.calls_of("sendMessage") {
        assert!(call.ok(), "{call:?}");
        let text = shown(&call);
        *sends.entry(last_part(&text).to_string()).or_default() += 1;
    }
    let mut model_calls: HashMap<String, usize> = HashMap::new();
    for request in provider.requests() {
        *model_calls
            .entry(last_part(&last_user(&request)).to_string())
            .or_default() += 1;
    }
    let mut replied = 0;
    for (i, outcome) in &outcome_of {
        let key = format!("message {i}");
        let sent = sends.get(&format!("echo: {key}")).copied().unwrap_or(0)
            + sends.get(&key).copied().unwrap_or(0);
        let calls = model_calls.get(&key).copied().unwrap_or(0);
        if *outcome == Outcome::Replied {
            replied += 1;
            assert_eq!((sent, calls), (1, 1), "{key}: sends and model calls");
        } else {
            assert_eq!(sent, 0, "{key} superseded yet sent");
            assert!(calls <= 1, "{key}: {calls} model calls");
        }
    }
    assert_eq!(bot.fake.calls_of("sendMessage").len(), replied);
    assert!(replied >= 20);
    assert!(replied < 200, "the interruption rule never applied");
    // ✅ (as 👌) on exactly the answered messages.
    let mut checked: Vec<usize> = bot
        .fake
        .ok_calls_of("setMessageReaction")
        .iter()
        .filter(|c| emoji(c).as_deref() == Some("👌"))
        .map(|c| {
            let id = format!(
                "{}:{}",
                c.i64("chat_id").unwrap(),
                c.i64("message_id").unwrap()
            );
            ids[&id]
        })
        .collect();
    let mut answered: Vec<usize> = outcome_of
        .iter()
        .filter(|(_, o)| **o == Outcome::Replied)
        .map(|(i, _)| *i)
        .collect();
    answered.sort();
    checked.sort();
    assert_eq!(checked, answered);
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
async fn real_model_answers_an_allowed_user_in_telegram() {
    let model = common::model(common::SMOLLM2);
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    telegram_config(&mut cfg, &fake, &["42"], StreamMode::Partial);
    cfg.model.path = model.display().to_string();
    cfg.model.context_size = 2048;
    cfg.generation.max_tokens = 48;
    cfg.generation.temperature = 0.0;
    let settings = hearth::engine::EngineSettings::from_config(&cfg).expect("engine settings");
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

#[tokio::test]
async fn messages_waiting_when_the_daemon_stops_are_answered_after_it_restarts() {
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    telegram_config(&mut cfg, &fake, &["*"], StreamMode::Off);
    let first = SlowEcho::new("first", Duration::from_millis(1500));
    // 20 users, 8 in flight: 12 wait on the bus when the daemon stops.
    let mut ids = HashSet::new();
    for user in 0..20 {
        let (_, message) = fake.inject(Incoming::text(200 + user, &format!("hi from {user}")));
        ids.insert(format!("{}:{message}", 200 + user));
    }
    let mut bot = start(fake, home, cfg.clone(), local(first.clone()), |b| b);
    let started = first.started.notified();
    tokio::time::timeout(WAIT, started).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(first.requests().len() < 20, "some still wait on the bus");
    let Bot {
        fake,
        daemon,
        mut reports,
        _home: home,
    } = bot;
    daemon.stop().await;
    let mut done = HashSet::new();
    while let Ok(r) = reports.try_recv() {
        if r.outcome == Outcome::Replied {
            done.insert(r.message_id);
        }
    }

    let second = SlowEcho::new("second", Duration::from_millis(100));
    bot = start(fake, home, cfg, local(second.clone()), |b| b);
    let rest = bot.reports(20 - done.len()).await;
    for r in rest {
        assert_eq!(r.outcome, Outcome::Replied);
        assert!(done.insert(r.message_id), "answered twice");
    }
    assert_eq!(done, ids, "every message answered once across the restart");
    bot.quiet(Duration::from_secs(1)).await;
    assert_eq!(first.requests().len() + second.requests().len(), 20);
    bot.daemon.stop().await;
}
