//! The daemon's background services wired as `hearth daemon` wires them:
//! LMS notices reach a chat through the channel, a scheduled prompt runs
//! through the agent into its chat, and the services' tools are offered.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use chrono::Utc;
use hearth::channels::InMemoryChannel;
use hearth::config::{LmsKind, LmsSourceConfig, LmsTarget};
use hearth::daemon::Services;
use hearth::providers::ScriptedProvider;
use hearth::scheduler::{Delivery, NewJob, Payload, Schedule};
use support::{builder, config, local, start, texts};
use tokio_util::sync::CancellationToken;

async fn feed() -> String {
    let rss = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lms/news.rss"),
    )
    .unwrap();
    let app = Router::new().route("/news.rss", get(move || async move { rss.clone() }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/news.rss")
}

/// Waits until `check` holds (real time: the services use the system clock).
async fn until(what: &str, check: impl Fn() -> bool) {
    for _ in 0..300 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lms_notices_and_scheduled_prompts_reach_their_chats() {
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    cfg.lms.sources = vec![LmsSourceConfig {
        kind: LmsKind::Rss,
        name: "news".into(),
        url: feed().await,
        token: None,
        courses: Vec::new(),
        files: true,
        files_mb: 100,
        files_poll: std::time::Duration::from_secs(6 * 3600),
        scores: false,
    }];
    cfg.lms.deliver = Some(LmsTarget {
        channel: "mem".into(),
        to: "ada".into(),
    });
    let provider = Arc::new(ScriptedProvider::new(["Time to stretch!"]));
    let services = Services::open(&cfg, provider.clone()).unwrap();
    let sandbox = hearth::sandbox::Sandbox::resolve(
        hearth::sandbox::SandboxChoice::Auto,
        home.path(),
        false,
        Default::default(),
    );
    let tools = services.tools(&cfg, &sandbox);
    let names = tools.names();
    for tool in [
        "memory_store",
        "memory_recall",
        "memory_forget",
        "cron_add",
        "cron_list",
        "cron_remove",
        "lms_upcoming",
        "file_read",
    ] {
        assert!(
            names.iter().any(|n| n == tool),
            "{tool} is offered: {names:?}"
        );
    }

    let channel = Arc::new(InMemoryChannel::new("mem"));
    let mut runtime = builder(cfg.clone(), local(provider.clone())).tools(Arc::new(tools));
    if let Some(memory) = services.turn_memory() {
        runtime = runtime.memory(memory);
    }
    let (daemon, _reports) = start(runtime, channel.clone());
    let stop = CancellationToken::new();
    let metrics = Arc::new(hearth::metrics::Metrics::new());
    services.spawn(daemon.delivery(), metrics.clone(), stop.clone());

    // The first poll runs at once. The feed's items are all past (March
    // 2025), so a new source sends one line instead of a notice each.
    let tracking = |t: &String| t.starts_with("Tracking 2 items from news. 2 already past");
    until("the tracking line", || {
        texts(&channel, "ada").iter().any(tracking)
    })
    .await;
    until("the poll counted", || {
        metrics.render().contains("hearth_lms_polls_total{")
            && metrics.render().contains("hearth_lms_notices_total{")
    })
    .await;
    assert!(
        metrics.render().contains(r#"outcome="ok"} 1"#),
        "{}",
        metrics.render()
    );
    let notices = texts(&channel, "ada");
    assert_eq!(
        notices.iter().filter(|t| tracking(t)).count(),
        1,
        "{notices:?}"
    );
    assert!(
        !notices.iter().any(|n| n.contains("Library opening hours")),
        "no notice per past item: {notices:?}"
    );

    // A one-shot prompt two seconds from now runs through the agent.
    let scheduler = services
        .scheduler
        .as_ref()
        .expect("the scheduler is on by default");
    scheduler
        .add(NewJob {
            name: Some("stretch".into()),
            schedule: Schedule::At(Utc::now() + chrono::Duration::seconds(2)),
            timezone: chrono_tz::UTC,
            payload: Payload::AgentPrompt {
                prompt: "Remind me to stretch.".into(),
            },
            delivery: Delivery {
                channel: "mem".into(),
                to: "ada".into(),
                thread: None,
                owner: None,
            },
        })
        .unwrap();
    until("the scheduled reply", || {
        texts(&channel, "ada")
            .iter()
            .any(|t| t == "Time to stretch!")
    })
    .await;
    let asked = provider.requests();
    assert!(
        asked.iter().any(|r| r
            .messages
            .iter()
            .any(|m| m.content.contains("Remind me to stretch."))),
        "the prompt reached the model"
    );
    let left = scheduler.list().unwrap();
    assert!(
        left.is_empty(),
        "a one-shot is gone once it fired: {left:?}"
    );
    assert_eq!(
        texts(&channel, "ada")
            .iter()
            .filter(|t| tracking(t))
            .count(),
        1,
        "no line twice"
    );
    stop.cancel();
    daemon.stop().await;
}
