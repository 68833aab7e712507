//! The Telegram channel end to end under stress: a 10 s Bot API outage, a
//! burst of 200 messages from 20 users, and a daemon restart with messages
//! waiting, each against the fake Bot API server on 127.0.0.1 through a real
//! [`Daemon`](hearth::daemon) and [`TelegramChannel`](hearth::channels::telegram).
//! The ordinary paths (typing, drafts, long replies, 429s, commands, topics,
//! the real model) are in `telegram_e2e.rs`.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use hearth::config::StreamMode;
use hearth::pipeline::ListenerState;
use hearth::pipeline::Outcome;
use support::telegram_bot::*;
use support::telegram_fake::{FakeTelegram, Incoming};
use support::{SlowEcho, config, last_user, local};

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
