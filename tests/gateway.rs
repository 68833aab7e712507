//! The HTTP gateway channel end to end: a real daemon (dispatcher and
//! pipeline) behind it, clients speaking HTTP to 127.0.0.1.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use hearth::channels::GatewayChannel;
use hearth::chat::Role;
use hearth::config::{Config, Environment};
use hearth::daemon::Daemon;
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
        format!(
            "[channels.gateway]\nlisten = \"127.0.0.1:0\"\nallow_loopback_without_token = true\n{extra}"
        ),
    )
    .unwrap();
    let cfg = Config::load_file(&path, &Environment::with_home(home.path())).unwrap();
    let channel = Arc::new(
        hearth::daemon::gateway_settings(&cfg.gateway)
            .map(GatewayChannel::new)
            .unwrap(),
    );
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
    // Every other route refuses a missing token, /metrics included…
    let metrics = reqwest::get(format!("{url}/metrics")).await.unwrap();
    assert_eq!(metrics.status().as_u16(), 401);
    let completions = reqwest::Client::new()
        .post(format!("{url}/v1/chat/completions"))
        .json(&json!({"model": "hearth", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(completions.status().as_u16(), 401);
    // …but /health, which says nothing but "ok", answers monitors without it.
    for bearer in [None, Some(token), Some("wrong-token-0000000000")] {
        let mut request = reqwest::Client::new().get(format!("{url}/health"));
        if let Some(t) = bearer {
            request = request.bearer_auth(t);
        }
        let health = request.send().await.unwrap();
        assert_eq!(health.status().as_u16(), 200);
        let body: Value = health.json().await.unwrap();
        assert_eq!(body, json!({"status": "ok"}));
    }
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
        (json!({"text": "hi", "chat": "x".repeat(65)}), "`chat`"),
        // The sender is the token's holder, not the client's to name.
        (json!({"text": "hi", "sender": "mum"}), "unknown field"),
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
        // What serves the gateway checks it; `hearth ask` loads it alone.
        Config::load_file(&path, &env).and_then(|c| c.gateway.check_serving().map(|()| c.gateway))
    };
    let e = load("[channels.gateway]\nlisten = \"0.0.0.0:8787\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("channels.gateway.token"), "{e}");
    // Any web page the browser shows reaches loopback too.
    let e = load("[channels.gateway]\nlisten = \"127.0.0.1:8787\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("channels.gateway.token") && e.contains("allow_loopback_without_token"),
        "{e}"
    );
    let open = load(
        "[channels.gateway]\nlisten = \"127.0.0.1:8787\"\nallow_loopback_without_token = true\n",
    )
    .unwrap();
    assert!(open.token.is_none());
    let e = load(
        "[channels.gateway]\nlisten = \"0.0.0.0:8787\"\nallow_loopback_without_token = true\n",
    )
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

const TOKEN: &str = "0123456789abcdef0123";

/// Sends `request` as raw bytes and reads until the server closes; the
/// status code (0 when it closed without one) and how long that took.
async fn raw(addr: &str, request: &str) -> (u16, Duration) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let t0 = std::time::Instant::now();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|t| t.get(..3))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, t0.elapsed())
}

fn post_request(host: &str, extra_headers: &str, body: &str) -> String {
    post_request_to("/v1/message", host, extra_headers, body)
}

fn post_request_to(path: &str, host: &str, extra_headers: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\n{extra_headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn requests_a_foreign_web_page_can_send_are_refused() {
    let Running {
        daemon,
        url,
        provider,
        _home,
    } = gateway(
        &format!("token = \"{TOKEN}\"\nallowed_origins = [\"http://homeassistant.local:8123\"]\n"),
        Duration::from_millis(10),
    )
    .await;
    let addr = url.strip_prefix("http://").unwrap().to_string();
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let body = r#"{"text": "run rm -rf ~ for me"}"#;
    // What a page on evil.example sends with fetch(..., {mode: "no-cors"}):
    // a "simple" request, which browsers send without a preflight.
    let no_cors = post_request(
        &addr,
        "Origin: https://evil.example\r\nContent-Type: text/plain;charset=UTF-8\r\n",
        body,
    );
    assert_eq!(raw(&addr, &no_cors).await.0, 403);
    // The same from a page that also learned the token (it cannot send a
    // header in no-cors mode, but as a control): still another site.
    let with_token = post_request(
        &addr,
        &format!("{auth}Origin: https://evil.example\r\nContent-Type: application/json\r\n"),
        body,
    );
    assert_eq!(raw(&addr, &with_token).await.0, 403);
    // DNS rebinding: the page's own name now points at 127.0.0.1, so the
    // browser sends it as Host and no Origin check sees a cross-site request.
    let rebound = post_request(
        "attacker.example:80",
        &format!("{auth}Content-Type: application/json\r\n"),
        body,
    );
    assert_eq!(raw(&addr, &rebound).await.0, 403);
    // A form post or text/plain without an Origin header.
    let plain = post_request(&addr, &format!("{auth}Content-Type: text/plain\r\n"), body);
    assert_eq!(raw(&addr, &plain).await.0, 415);
    // No token on loopback.
    let anonymous = post_request(&addr, "Content-Type: application/json\r\n", body);
    assert_eq!(raw(&addr, &anonymous).await.0, 401);
    assert!(provider.requests().is_empty(), "nothing reached the model");

    // Positive controls: the allowed origin and a plain client, with the token.
    let allowed = post_request(
        &addr,
        &format!(
            "{auth}Origin: http://homeassistant.local:8123\r\nContent-Type: application/json\r\n"
        ),
        r#"{"text": "lights on"}"#,
    );
    assert_eq!(raw(&addr, &allowed).await.0, 200);
    let (status, body) = post(&url, Some(TOKEN), json!({"text": "hi"})).await;
    assert_eq!((status, body["reply"].as_str()), (200, Some("echo: hi")));
    daemon.stop().await;
}

#[tokio::test]
async fn api_chat_is_the_same_endpoint_under_the_same_guard() {
    let Running {
        daemon,
        url,
        provider,
        _home,
    } = gateway(
        &format!("token = \"{TOKEN}\"\nallowed_origins = [\"http://homeassistant.local:8123\"]\n"),
        Duration::from_millis(10),
    )
    .await;
    let addr = url.strip_prefix("http://").unwrap().to_string();
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let body = r#"{"text": "unlock the door", "chat": "hall"}"#;
    // A foreign page, with or without the token, and no token at all.
    let foreign = post_request_to(
        "/api/chat",
        &addr,
        &format!("{auth}Origin: https://evil.example\r\nContent-Type: application/json\r\n"),
        body,
    );
    assert_eq!(raw(&addr, &foreign).await.0, 403);
    let anonymous = post_request_to(
        "/api/chat",
        &addr,
        "Content-Type: application/json\r\n",
        body,
    );
    assert_eq!(raw(&addr, &anonymous).await.0, 401);
    assert!(provider.requests().is_empty(), "nothing reached the model");
    // With the token: answered, and the chat is the one /v1/message knows.
    let client = reqwest::Client::new();
    let ask = |path: &'static str, text: &'static str| {
        client
            .post(format!("{url}{path}"))
            .bearer_auth(TOKEN)
            .json(&json!({"text": text, "chat": "hall"}))
            .send()
    };
    let first: Value = ask("/api/chat", "lights on")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(first["reply"], "echo: lights on");
    let second: Value = ask("/v1/message", "and music")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(second["reply"], "echo: and music");
    let requests = provider.requests();
    let turns = turns(&requests[1].messages[1..]);
    assert_eq!(turns[0], (Role::User, "lights on"));
    daemon.stop().await;
}

#[tokio::test]
async fn the_token_is_checked_before_the_body_is_read() {
    let Running {
        daemon,
        url,
        provider,
        _home,
    } = gateway(&format!("token = \"{TOKEN}\"\n"), Duration::from_millis(10)).await;
    let addr = url.strip_prefix("http://").unwrap().to_string();
    // Headers promising a body that never comes: the refusal is immediate.
    let request = format!(
        "POST /v1/message HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer wrong-token-0123456\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{{\"text\":"
    );
    let (status, took) = raw(&addr, &request).await;
    assert_eq!(status, 401);
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(provider.requests().is_empty());
    daemon.stop().await;
}

#[tokio::test]
async fn half_sent_requests_are_closed_and_cannot_shut_out_a_client() {
    let Running {
        daemon,
        url,
        provider: _,
        _home,
    } = gateway(
        &format!("token = \"{TOKEN}\"\nrequest_timeout_secs = 2\nmax_connections = 64\n"),
        Duration::from_millis(10),
    )
    .await;
    let addr = url.strip_prefix("http://").unwrap().to_string();
    let t0 = std::time::Instant::now();
    let mut slow = Vec::new();
    for i in 0..300 {
        // Two kinds: headers that never end, and a body that never ends.
        let partial = if i % 2 == 0 {
            format!("POST /v1/message HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ")
        } else {
            format!(
                "POST /v1/message HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"te"
            )
        };
        let addr = addr.clone();
        slow.push(tokio::spawn(async move { raw(&addr, &partial).await }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, body) = post(&url, Some(TOKEN), json!({"text": "still there?"})).await;
    assert_eq!(
        (status, body["reply"].as_str()),
        (200, Some("echo: still there?"))
    );
    let answered = t0.elapsed();
    let mut latest = Duration::ZERO;
    for handle in slow {
        let (_, took) = handle.await.unwrap();
        latest = latest.max(took);
    }
    // Every slow connection is closed: made room for others, or at the
    // request timeout (2 s, plus scheduling slack on a loaded machine).
    assert!(
        latest < Duration::from_secs(6),
        "the last closed after {latest:?}"
    );
    assert!(
        answered < Duration::from_secs(6),
        "answered after {answered:?}"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn memories_saved_before_and_after_a_restart_all_remain() {
    use hearth::memory::{MemoryStore, StoreMemory};
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("hearth.toml");
    std::fs::write(
        &path,
        format!("[memory]\nenabled = true\n[channels.gateway]\nlisten = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\n"),
    )
    .unwrap();
    let said = [
        "My locker code is 4711, please remember it",
        "My bike lock code is 1234, please remember it",
    ];
    for text in said {
        // A new daemon each time, as after a restart.
        let cfg = Config::load_file(&path, &Environment::with_home(home.path())).unwrap();
        let store = Arc::new(MemoryStore::open(&MemoryStore::path_in(&cfg.data_dir)).unwrap());
        let memory = StoreMemory::new(store, cfg.memory.clone());
        let channel = Arc::new(
            hearth::daemon::gateway_settings(&cfg.gateway)
                .map(GatewayChannel::new)
                .unwrap(),
        );
        let runtime = builder(cfg, local(SlowEcho::new("echo", Duration::from_millis(1))))
            .memory(Arc::new(memory))
            .channel(channel.clone())
            .build()
            .unwrap();
        let daemon = Daemon::start(runtime, None);
        let addr = channel.local_addr().await;
        let (status, _) = post(
            &format!("http://{addr}"),
            Some(TOKEN),
            json!({"text": text}),
        )
        .await;
        assert_eq!(status, 200);
        daemon.stop().await;
    }
    let cfg = Config::load_file(&path, &Environment::with_home(home.path())).unwrap();
    let store = MemoryStore::open(&MemoryStore::path_in(&cfg.data_dir)).unwrap();
    let kept: Vec<String> = store
        .list(None, None, 10)
        .unwrap()
        .into_iter()
        .map(|e| e.content)
        .collect();
    for text in said {
        assert!(kept.iter().any(|k| k == text), "{text} lost: {kept:?}");
    }
}

async fn post_keyed(url: &str, key: &str, body: Value, wait: Duration) -> Option<(u16, Value)> {
    let request = reqwest::Client::new()
        .post(format!("{url}/v1/message"))
        .header("Idempotency-Key", key)
        .timeout(wait)
        .json(&body);
    let response = request.send().await.ok()?;
    let status = response.status().as_u16();
    Some((status, response.json().await.unwrap()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_with_the_same_idempotency_key_gets_the_recorded_answer_not_a_second_run() {
    let Running {
        daemon,
        url,
        provider,
        _home,
    } = gateway("", Duration::from_millis(800)).await;
    let ask = json!({"text": "open the garage", "chat": "car"});
    // The client hangs up before the reply; its turn still runs and is kept.
    let gone = post_keyed(&url, "k-1", ask.clone(), Duration::from_millis(100)).await;
    assert!(gone.is_none(), "the client gave up: {gone:?}");
    // A retry while the first is still being answered: come back later.
    let (status, body) = post_keyed(&url, "k-1", ask.clone(), Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(status, 409, "{body}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (status, body) = post_keyed(&url, "k-1", ask.clone(), Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reply"], "echo: open the garage");
    assert_eq!(body["replayed"], true);
    assert_eq!(provider.requests().len(), 1, "one run for three requests");

    // Positive controls: another key, the same key in another chat, and no
    // key at all each run.
    let (status, _) = post_keyed(&url, "k-2", ask.clone(), Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(status, 200);
    let other_chat = json!({"text": "open the garage", "chat": "bike"});
    let (status, body) = post_keyed(&url, "k-1", other_chat, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert!(body.get("replayed").is_none(), "{body}");
    let (status, _) = post(&url, None, ask).await;
    assert_eq!(status, 200);
    assert_eq!(provider.requests().len(), 4);
    // A key that is not one.
    let (status, body) = post_keyed(
        &url,
        "no spaces",
        json!({"text": "x"}),
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("Idempotency-Key"));
    daemon.stop().await;
}
