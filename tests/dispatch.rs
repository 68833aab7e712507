//! The dispatcher end to end: an in-memory channel, scripted and slow
//! providers, paused clocks: concurrency, interruption, `/stop`, the
//! in-flight limit, listener restarts and shutdown.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use hearth::channels::{ChannelEvent, ChannelMessage, InMemoryChannel};
use hearth::chat::Role;
use hearth::dispatch::supervise;
use hearth::history::HistoryStore;
use hearth::pipeline::{Hook, HookAction, Outcome};
use hearth::pipeline::{ListenerState, StatusBoard};
use support::*;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(300);

#[tokio::test(start_paused = true)]
async fn two_senders_are_answered_at_the_same_time() {
    let home = tempfile::tempdir().unwrap();
    let provider = SlowEcho::new("echo", Duration::from_secs(10));
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(
        builder(config(home.path()), local(provider.clone())),
        channel.clone(),
    );
    let t0 = tokio::time::Instant::now();
    channel.inject_text("ada", "hello from ada");
    channel.inject_text("bob", "hello from bob");
    let done = reports(&mut rx, 2).await;
    assert!(
        done.iter().all(|r| r.outcome == Outcome::Replied),
        "{done:?}"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "one after the other: {:?}",
        t0.elapsed()
    );
    assert_eq!(provider.max_concurrent(), 2);
    assert_eq!(texts(&channel, "ada"), ["echo: hello from ada"]);
    assert_eq!(texts(&channel, "bob"), ["echo: hello from bob"]);
    daemon.stop().await;
}

/// Holds the first message in its received hook for 5 s, before its user
/// turn is saved: a second message that did not wait for the first to end
/// would save its turn first.
struct SlowStart;

impl Hook for SlowStart {
    fn on_message_received(&self, m: ChannelMessage) -> BoxFuture<'_, HookAction<ChannelMessage>> {
        Box::pin(async move {
            if m.content == "book a table" {
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
            HookAction::Continue(m)
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_second_message_interrupts_the_first_and_history_merges_them() {
    let home = tempfile::tempdir().unwrap();
    let cfg = config(home.path());
    let data_dir = cfg.data_dir.clone();
    let provider = SlowEcho::new("echo", Duration::from_secs(10));
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let b = builder(cfg, local(provider.clone())).hook(Arc::new(SlowStart));
    let (daemon, mut rx) = start(b, channel.clone());
    let first = channel.inject_text("ada", "book a table");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let second = channel.inject_text("ada", "for two people");
    let done = reports(&mut rx, 2).await;
    let by_id: HashMap<_, _> = done
        .iter()
        .map(|r| (r.message_id.clone(), r.outcome.clone()))
        .collect();
    assert_eq!(by_id[&first.id], Outcome::Superseded);
    assert_eq!(by_id[&second.id], Outcome::Replied);
    // Nothing was sent for the first; the reply saw both user turns as one.
    assert_eq!(
        texts(&channel, "ada"),
        ["echo: book a table\n\nfor two people"]
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 1, "the first never reached the model");
    assert_eq!(
        requests[0]
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .count(),
        1
    );
    daemon.stop().await;
    let stored = HistoryStore::open(&HistoryStore::path_in(&data_dir))
        .unwrap()
        .load("mem_ada_ada", 50)
        .unwrap();
    let stored = turns(&stored);
    assert_eq!(
        stored,
        [
            (Role::User, "book a table"),
            (Role::User, "for two people"),
            (Role::Assistant, "echo: book a table\n\nfor two people")
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn an_interrupted_reply_in_progress_is_cut_off() {
    let home = tempfile::tempdir().unwrap();
    let provider = SlowEcho::new("echo", Duration::from_secs(10));
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(
        builder(config(home.path()), local(provider.clone())),
        channel.clone(),
    );
    let started = provider.started.notified();
    let t0 = tokio::time::Instant::now();
    channel.inject_text("ada", "one");
    started.await;
    channel.inject_text("ada", "two");
    let done = reports(&mut rx, 2).await;
    assert_eq!(done[0].outcome, Outcome::Superseded);
    assert_eq!(done[1].outcome, Outcome::Replied);
    assert!(
        t0.elapsed() < Duration::from_secs(15),
        "the first ran to its end"
    );
    assert_eq!(texts(&channel, "ada"), ["echo: one\n\ntwo"]);
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn stop_cancels_at_once_and_sends_nothing_else() {
    let home = tempfile::tempdir().unwrap();
    let provider = SlowEcho::new("echo", Duration::from_secs(100));
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(
        builder(config(home.path()), local(provider.clone())),
        channel.clone(),
    );
    let started = provider.started.notified();
    let long = channel.inject_text("ada", "write a novel");
    started.await;
    let t0 = tokio::time::Instant::now();
    channel.inject_text("ada", "/stop");
    let done = reports(&mut rx, 2).await;
    assert!(
        t0.elapsed() < Duration::from_secs(100),
        "waited for the reply"
    );
    let long_outcome = done.iter().find(|r| r.message_id == long.id).unwrap();
    assert_eq!(long_outcome.outcome, Outcome::Cancelled);
    assert_eq!(texts(&channel, "ada"), ["Stopped."]);
    // With nothing running, /stop says so.
    channel.inject_text("ada", "/stop");
    reports(&mut rx, 1).await;
    assert_eq!(
        texts(&channel, "ada").last().unwrap(),
        "Nothing is running."
    );
    // The next message is a new request, not a continuation of the novel.
    channel.inject_text("ada", "say hi");
    reports(&mut rx, 1).await;
    let requests = provider.requests();
    let turns = turns(&requests.last().unwrap().messages[1..]);
    assert_eq!(
        turns,
        [
            (Role::User, "write a novel"),
            (Role::Assistant, "[Stopped by the user]"),
            (Role::User, "say hi"),
        ]
    );
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn new_forgets_the_conversation() {
    let home = tempfile::tempdir().unwrap();
    let provider = SlowEcho::new("echo", Duration::from_millis(10));
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(
        builder(config(home.path()), local(provider.clone())),
        channel.clone(),
    );
    channel.inject_text("ada", "my name is Ada");
    reports(&mut rx, 1).await;
    channel.inject_text("ada", "/new");
    assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::Command);
    channel.inject_text("ada", "what is my name?");
    reports(&mut rx, 1).await;
    assert!(texts(&channel, "ada")[1].starts_with("(new conversation)"));
    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "/new made no model call");
    let before = requests[0].messages.len();
    let after = &requests[1].messages;
    assert_eq!(after.len(), before, "system + the new message only");
    assert!(after.iter().all(|m| !m.content.contains("Ada")));
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn five_hundred_queued_messages_within_the_limit_and_none_lost() {
    let home = tempfile::tempdir().unwrap();
    let provider = SlowEcho::new("echo", Duration::from_secs(1));
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(
        builder(config(home.path()), local(provider.clone())),
        channel.clone(),
    );
    let mut ids = HashSet::new();
    let mut last_of: HashMap<String, String> = HashMap::new();
    for i in 0..500 {
        let sender = format!("u{}", i % 50);
        let m = channel.inject_text(&sender, &format!("message {i}"));
        ids.insert(m.id.clone());
        last_of.insert(sender, m.id);
    }
    let done = reports(&mut rx, 500).await;
    let seen: HashSet<_> = done.iter().map(|r| r.message_id.clone()).collect();
    assert_eq!(seen, ids, "every message got exactly one outcome");
    assert!(
        done.iter()
            .all(|r| matches!(r.outcome, Outcome::Replied | Outcome::Superseded)),
        "{:?}",
        done.iter()
            .find(|r| !matches!(r.outcome, Outcome::Replied | Outcome::Superseded))
    );
    let replied = done
        .iter()
        .filter(|r| r.outcome == Outcome::Replied)
        .count();
    assert_eq!(
        channel.sent().len(),
        replied,
        "a reply for each Replied, none for the rest"
    );
    for id in last_of.values() {
        let r = done.iter().find(|r| &r.message_id == id).unwrap();
        assert_eq!(
            r.outcome,
            Outcome::Replied,
            "a sender's last message is answered"
        );
    }
    assert!(
        provider.max_concurrent() <= 8,
        "limit exceeded: {}",
        provider.max_concurrent()
    );
    assert!(provider.max_concurrent() >= 2, "no concurrency at all");
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_failing_listener_restarts_with_growing_backoff() {
    let channel = Arc::new(InMemoryChannel::new("mem"));
    channel.fail_listen(3);
    let status = Arc::new(StatusBoard::new());
    let (tx, mut rx) = hearth::channels::Intake::queue(10);
    let shutdown = CancellationToken::new();
    let metrics = Arc::new(hearth::metrics::Metrics::new());
    let task = tokio::spawn(supervise(
        channel.clone(),
        tx,
        status.clone(),
        metrics.clone(),
        shutdown.clone(),
    ));
    channel.inject_text("ada", "are you there?");
    let got = tokio::time::timeout(WAIT, rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.content, "are you there?");
    let starts = channel.listen_starts();
    assert_eq!(starts.len(), 4, "three failures, then a run that lasts");
    let gaps: Vec<u64> = starts.windows(2).map(|w| (w[1] - w[0]).as_secs()).collect();
    assert_eq!(gaps, [2, 4, 8]);
    let health = status.listener("mem").unwrap();
    assert_eq!(health.restarts, 3);
    assert_eq!(health.state, ListenerState::Running);
    assert!(
        health
            .last_error
            .unwrap()
            .contains("scripted listen failure")
    );
    assert!(status.render().contains("channel mem: running (3 restarts"));
    assert!(
        metrics
            .render()
            .contains(r#"hearth_channel_errors_total{channel="mem",operation="listen"} 3"#),
        "each failure is counted for /metrics"
    );
    shutdown.cancel();
    task.await.unwrap();
    assert_eq!(
        status.listener("mem").unwrap().state,
        ListenerState::Stopped
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_lets_an_in_flight_reply_finish() {
    let home = tempfile::tempdir().unwrap();
    let provider = SlowEcho::new("echo", Duration::from_secs(5));
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(
        builder(config(home.path()), local(provider.clone())),
        channel.clone(),
    );
    let started = provider.started.notified();
    channel.inject_text("ada", "quick one");
    started.await;
    daemon.stop().await;
    assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::Replied);
    assert_eq!(texts(&channel, "ada"), ["echo: quick one"]);
}

#[tokio::test(start_paused = true)]
async fn typing_is_refreshed_every_four_seconds_while_working() {
    let home = tempfile::tempdir().unwrap();
    let provider = SlowEcho::new("echo", Duration::from_secs(10));
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(
        builder(config(home.path()), local(provider)),
        channel.clone(),
    );
    channel.inject_text("ada", "think hard");
    reports(&mut rx, 1).await;
    let typing = channel
        .events()
        .iter()
        .filter(|e| matches!(e, ChannelEvent::Typing { recipient } if recipient == "ada"))
        .count();
    // At 0, 4 and 8 s of a 10 s reply.
    assert_eq!(typing, 3);
    daemon.stop().await;
}
