//! The HTTP gateway channel end to end: a real daemon (dispatcher and
//! pipeline) behind it, clients speaking HTTP to 127.0.0.1.

mod support;

use std::sync::Arc;
use std::time::Duration;

use hearth::channels::GatewayChannel;
use hearth::config::{Config, Environment};
use hearth::daemon::Daemon;
use hearth::providers::Role;
use serde_json::{Value, json};
use support::*;

/// A daemon whose only channel is a gateway on a free port, answering
/// with an echo that takes `delay`.
struct Running {
    daemon: Daemon,
    url: String,
    provider: Arc<SlowEcho>,
    _home: tempfile::TempDir,
}

async fn gateway(extra: &str, delay: Duration) -> Running {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("hearth.toml");
    std::fs::write(
        &path,
        format!("[channels.gateway]\nlisten = \"127.0.0.1:0\"\n{extra}"),
    )
    .unwrap();
    let cfg = Config::load_file(&path, &Environment::with_home(home.path())).unwrap();
    let channel = Arc::new(GatewayChannel::from_config(&cfg.gateway).unwrap());
    let provider = SlowEcho::new("echo", delay);
    let runtime = builder(cfg, local(provider.clone()))
        .channel(channel.clone())
        .build()
        .unwrap();
    let daemon = Daemon::start(runtime, None);
    let addr = tokio::time::timeout(Duration::from_secs(10), channel.local_addr())
        .await
        .expect("the gateway listens");
    Running {
        daemon,
        url: format!("http://{addr}"),
        provider,
        _home: home,
    }
}

async fn post(url: &str, token: Option<&str>, body: Value) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(format!("{url}/v1/message"))
        .json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn a_request_gets_its_reply_and_a_chat_keeps_its_history() {
    let Running {
        daemon,
        url,
        provider,
        _home,
    } = gateway("", Duration::from_millis(10)).await;
    let (status, body) = post(&url, None, json!({"text": "lights on", "chat": "kitchen"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reply"], "echo: lights on");
    assert_eq!(body["chat"], "kitchen");
    let (_, body) = post(&url, None, json!({"text": "and music", "chat": "kitchen"})).await;
    assert_eq!(body["reply"], "echo: and music");
    // The second request saw the first turn of the same chat.
    let second = &provider.requests()[1];
    let turns = turns(&second.messages[1..]);
    assert_eq!(
        turns,
        [
            (Role::User, "lights on"),
            (Role::Assistant, "echo: lights on"),
            (Role::User, "and music"),
        ]
    );
    // Runtime commands work too.
    let (status, body) = post(&url, None, json!({"text": "/new", "chat": "kitchen"})).await;
    assert_eq!(status, 200);
    assert!(
        body["reply"].as_str().unwrap().contains("new conversation"),
        "{body}"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn two_chats_are_answered_at_the_same_time() {
    let Running {
        daemon,
        url,
        provider,
        _home,
    } = gateway("", Duration::from_millis(700)).await;
    let t0 = std::time::Instant::now();
    let (a, b) = tokio::join!(
        post(&url, None, json!({"text": "one", "chat": "a"})),
        post(&url, None, json!({"text": "two", "chat": "b"})),
    );
    assert_eq!(
        (a.1["reply"].as_str(), b.1["reply"].as_str()),
        (Some("echo: one"), Some("echo: two"))
    );
    assert!(
        t0.elapsed() < Duration::from_millis(1_300),
        "answered one after the other"
    );
    assert_eq!(provider.max_concurrent(), 2);
    daemon.stop().await;
}

#[tokio::test]
async fn the_token_guards_every_route() {
    let token = "0123456789abcdef0123";
    let Running {
        daemon,
        url,
        provider: _,
        _home,
    } = gateway(&format!("token = \"{token}\"\n"), Duration::from_millis(10)).await;
    let (status, body) = post(&url, None, json!({"text": "hi"})).await;
    assert_eq!(status, 401, "{body}");
    assert!(body["error"].as_str().unwrap().contains("Bearer"));
    let (status, _) = post(&url, Some("0123456789abcdef0124"), json!({"text": "hi"})).await;
    assert_eq!(status, 401);
    let (status, body) = post(&url, Some(token), json!({"text": "hi"})).await;
    assert_eq!((status, body["reply"].as_str()), (200, Some("echo: hi")));
    let health = reqwest::get(format!("{url}/health")).await.unwrap();
    assert_eq!(health.status().as_u16(), 401);
    let health = reqwest::Client::new()
        .get(format!("{url}/health"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    daemon.stop().await;
}

#[tokio::test]
async fn bad_requests_get_a_clear_error_and_reach_nobody() {
    let Running {
        daemon,
        url,
        provider,
        _home,
    } = gateway("", Duration::from_millis(10)).await;
    let raw = reqwest::Client::new()
        .post(format!("{url}/v1/message"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status().as_u16(), 400);
    let body: Value = raw.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("not the expected JSON"),
        "{body}"
    );
    for (request, what) in [
        (json!({"text": "   "}), "empty"),
        (json!({"text": "hi", "chat": "../../etc"}), "`chat`"),
        (json!({"text": "hi", "sender": "x".repeat(65)}), "`sender`"),
        (json!({"text": "hi", "colour": "red"}), "unknown field"),
    ] {
        let (status, body) = post(&url, None, request).await;
        assert_eq!(status, 400, "{body}");
        assert!(body["error"].as_str().unwrap().contains(what), "{body}");
    }
    let huge = reqwest::Client::new()
        .post(format!("{url}/v1/message"))
        .json(&json!({"text": "x".repeat(100_000)}))
        .send()
        .await
        .unwrap();
    assert_eq!(huge.status().as_u16(), 413);
    assert!(provider.requests().is_empty());
    daemon.stop().await;
}

#[tokio::test]
async fn a_slow_reply_times_out_and_stop_releases_a_waiting_request() {
    let Running {
        daemon,
        url,
        provider: _,
        _home,
    } = gateway(
        "reply_timeout_secs = 1\n[daemon]\nshutdown_grace_secs = 1\n",
        Duration::from_secs(30),
    )
    .await;
    let (status, body) = post(&url, None, json!({"text": "think hard"})).await;
    assert_eq!(status, 504, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("reply_timeout_secs")
    );
    daemon.stop().await;

    let Running {
        daemon,
        url,
        provider,
        _home,
    } = gateway("", Duration::from_secs(30)).await;
    let started = provider.started.notified();
    let slow = tokio::spawn({
        let url = url.clone();
        async move { post(&url, None, json!({"text": "write a novel"})).await }
    });
    started.await;
    let (status, body) = post(&url, None, json!({"text": "/stop"})).await;
    assert_eq!((status, body["reply"].as_str()), (200, Some("Stopped.")));
    let (status, body) = tokio::time::timeout(Duration::from_secs(5), slow)
        .await
        .expect("the stopped request is answered at once")
        .unwrap();
    assert_eq!((status, body["reply"].as_str()), (200, Some("(stopped)")));
    daemon.stop().await;
}

#[test]
fn listening_beyond_this_machine_needs_a_long_token() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("hearth.toml");
    let env = Environment::with_home(home.path());
    let load = |body: &str| {
        std::fs::write(&path, body).unwrap();
        Config::load_file(&path, &env).map(|c| c.gateway)
    };
    let e = load("[channels.gateway]\nlisten = \"0.0.0.0:8787\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("channels.gateway.token"), "{e}");
    let e = load("[channels.gateway]\nlisten = \"127.0.0.1:8787\"\ntoken = \"short\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least 16"), "{e}");
    let e = load("[channels.gateway]\nlisten = \"localhost\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("channels.gateway.listen"), "{e}");
    let ok = load("[channels.gateway]\nlisten = \"0.0.0.0:8787\"\ntoken = \"0123456789abcdef\"\n")
        .unwrap();
    assert_eq!(ok.listen.unwrap().port(), 8787);
    assert!(load("").unwrap().listen.is_none(), "off by default");
}
