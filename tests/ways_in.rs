//! The gateway's streaming ways in, end to end: a daemon (dispatcher,
//! pipeline, tools, approvals) behind `/ws/chat`, spoken to by a real
//! WebSocket client, and the OpenAI-compatible API driven by the real
//! `openai` Python package (`make test-clients` installs it).
//!
//! The model is the typist: it answers as the parrot does (quoting the
//! user, or writing the call it is told to), one word at a time.

mod common;
mod support;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use hearth::channels::GatewayChannel;
use hearth::config::{Config, Environment};
use hearth::daemon::Daemon;
use hearth::metrics::Metrics;
use hearth::pipeline::RuntimeBuilder;
use hearth::tools::ToolRegistry;
use serde_json::{Value, json};
use support::*;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};

const TOKEN: &str = "ways-in-token-0123456789";
const WAIT: Duration = Duration::from_secs(60);

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

struct Running {
    daemon: Daemon,
    metrics: Arc<Metrics>,
    addr: std::net::SocketAddr,
    typist: Arc<Typist>,
    workspace: PathBuf,
    _home: tempfile::TempDir,
}

/// A daemon with the tools `hearth daemon` builds, the typist, and a
/// gateway on a free port that lets `http://allowed.example` in.
async fn start() -> Running {
    start_with("").await
}

/// [`start`] with more `[channels.gateway]` settings.
async fn start_with(gateway: &str) -> Running {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("hearth.toml");
    std::fs::write(
        &path,
        format!(
            "[agent]\napproval_timeout_secs = 10\n[channels.gateway]\nlisten = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\nallowed_origins = [\"http://allowed.example\"]\n{gateway}"
        ),
    )
    .unwrap();
    let env = Environment::with_home(home.path());
    let cfg = Config::load_file(&path, &env).unwrap();
    let workspace = cfg.agent.workspace.clone();
    let metrics = Arc::new(Metrics::new());
    let channel = Arc::new(
        GatewayChannel::from_config(&cfg.gateway)
            .unwrap()
            .with_metrics(metrics.clone()),
    );
    let context = hearth::cli::tools_cmd::context(&cfg, &env).unwrap();
    let tools = ToolRegistry::for_config(&cfg.agent, &context.sandbox);
    let typist = Typist::new(Duration::from_millis(15));
    let runtime = RuntimeBuilder::new(cfg, local(typist.clone()), context)
        .tools(Arc::new(tools))
        .channel(channel.clone())
        .metrics(metrics.clone())
        .build()
        .unwrap();
    let daemon = Daemon::start(runtime, None);
    let addr = tokio::time::timeout(WAIT, channel.local_addr())
        .await
        .expect("the gateway listens");
    Running {
        daemon,
        metrics,
        addr,
        typist,
        workspace,
        _home: home,
    }
}

/// Opens `/ws/chat?chat=CHAT` with `headers`; the HTTP status of a refusal.
async fn connect(
    addr: std::net::SocketAddr,
    chat: &str,
    headers: &[(&str, &str)],
) -> Result<(Socket, tungstenite::http::Response<Option<Vec<u8>>>), u16> {
    let mut request = format!("ws://{addr}/ws/chat?chat={chat}")
        .into_client_request()
        .unwrap();
    for (name, value) in headers {
        request.headers_mut().insert(
            tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok(pair) => Ok(pair),
        Err(tungstenite::Error::Http(response)) => Err(response.status().as_u16()),
        Err(e) => panic!("the upgrade failed another way: {e}"),
    }
}

async fn open(addr: std::net::SocketAddr, chat: &str) -> Socket {
    let bearer = format!("Bearer {TOKEN}");
    connect(addr, chat, &[("authorization", &bearer)])
        .await
        .expect("the token holder gets a socket")
        .0
}

async fn send(socket: &mut Socket, frame: Value) {
    socket.send(Message::text(frame.to_string())).await.unwrap();
}

/// The next JSON frame (pings are answered by the client library).
async fn frame(socket: &mut Socket) -> Value {
    loop {
        let message = tokio::time::timeout(WAIT, socket.next())
            .await
            .expect("a frame in time")
            .expect("the socket is open")
            .unwrap();
        if let Message::Text(text) = message {
            return serde_json::from_str(text.as_str()).unwrap();
        }
    }
}

/// Frames up to and including the turn's `done`.
async fn turn(socket: &mut Socket) -> Vec<Value> {
    let mut frames = Vec::new();
    loop {
        let f = frame(socket).await;
        let done = f["type"] == "done";
        frames.push(f);
        if done {
            return frames;
        }
    }
}

fn chunks(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .filter(|f| f["type"] == "chunk")
        .map(|f| f["text"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_websocket_streams_the_reply_in_chunks_and_keeps_the_chat() {
    let run = start().await;
    let mut socket = open(run.addr, "desk").await;
    send(
        &mut socket,
        json!({"type": "message", "text": "the quick brown fox jumps"}),
    )
    .await;
    let frames = turn(&mut socket).await;
    let done = frames.last().unwrap();
    let text = done["text"].as_str().unwrap();
    assert!(text.contains("the quick brown fox jumps"), "{frames:?}");
    let pieces = chunks(&frames);
    assert!(
        pieces.len() >= 3,
        "the reply streamed in pieces: {frames:?}"
    );
    assert_eq!(pieces.concat(), text, "the chunks add up to the reply");
    // The second message on the socket is the same conversation.
    send(&mut socket, json!({"type": "message", "text": "and again"})).await;
    let frames = turn(&mut socket).await;
    assert!(
        frames.last().unwrap()["text"]
            .as_str()
            .unwrap()
            .contains("and again")
    );
    let requests = run.typist.parrot.requests.lock().unwrap().clone();
    let history: Vec<&str> = requests[1]
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert!(
        history.iter().any(|m| m.contains("the quick brown fox")),
        "the second turn saw the first: {history:?}"
    );
    // A frame it cannot take gets an error, and the socket stays open.
    send(&mut socket, json!({"type": "shout", "text": "x"})).await;
    assert_eq!(frame(&mut socket).await["type"], "error");
    socket.send(Message::text("not json")).await.unwrap();
    assert_eq!(frame(&mut socket).await["type"], "error");
    send(
        &mut socket,
        json!({"type": "message", "text": "still here"}),
    )
    .await;
    let frames = turn(&mut socket).await;
    assert!(
        frames.last().unwrap()["text"]
            .as_str()
            .unwrap()
            .contains("still here")
    );
    run.daemon.stop().await;
}

#[tokio::test]
async fn stop_on_a_websocket_cancels_the_turn_and_the_next_one_runs() {
    let run = start().await;
    let mut socket = open(run.addr, "desk").await;
    let long = "word ".repeat(400);
    send(&mut socket, json!({"type": "message", "text": long})).await;
    let first = frame(&mut socket).await;
    assert_eq!(first["type"], "chunk", "{first}");
    // A second message while one runs is refused, not queued unseen.
    send(&mut socket, json!({"type": "message", "text": "me too"})).await;
    let mut frames = vec![first];
    loop {
        let f = frame(&mut socket).await;
        if f["type"] == "error" {
            break;
        }
        frames.push(f);
    }
    send(&mut socket, json!({"type": "stop"})).await;
    let rest = turn(&mut socket).await;
    let done = rest.last().unwrap();
    assert_eq!(done["stopped"], true, "{done}");
    frames.extend(rest);
    let streamed = chunks(&frames).concat();
    assert!(
        streamed.len() < long.len(),
        "the reply stopped part way ({} of {} characters)",
        streamed.len(),
        long.len()
    );
    // Positive control: the chat goes on.
    send(
        &mut socket,
        json!({"type": "message", "text": "after the stop"}),
    )
    .await;
    let frames = turn(&mut socket).await;
    let done = frames.last().unwrap();
    assert!(
        done["text"].as_str().unwrap().contains("after the stop"),
        "{done}"
    );
    assert!(done.get("stopped").is_none());
    run.daemon.stop().await;
}

#[tokio::test]
async fn a_websocket_asks_before_a_tool_runs_and_shows_it_running() {
    let run = start().await;
    let mut socket = open(run.addr, "desk").await;
    let write = |path: &str| call("file_write", json!({"path": path, "content": "hi"}));
    send(
        &mut socket,
        json!({"type": "message", "text": write("yes.txt")}),
    )
    .await;
    let asked = frame(&mut socket).await;
    assert_eq!(asked["type"], "approval", "{asked}");
    assert_eq!(asked["tool"], "file_write");
    // Hostile: an answer to a question this socket was never asked.
    send(
        &mut socket,
        json!({"type": "approval", "id": "made-up", "answer": "always"}),
    )
    .await;
    assert_eq!(frame(&mut socket).await["type"], "error");
    send(
        &mut socket,
        json!({"type": "approval", "id": asked["id"], "answer": "once"}),
    )
    .await;
    let frames = turn(&mut socket).await;
    assert!(
        frames
            .iter()
            .any(|f| f["type"] == "tool" && f["name"] == "file_write"),
        "{frames:?}"
    );
    assert!(
        file_under(&run.workspace, "yes.txt"),
        "the allowed call ran"
    );
    // Denied: the file is not written, and no tool notice comes.
    send(
        &mut socket,
        json!({"type": "message", "text": write("no.txt")}),
    )
    .await;
    let asked = frame(&mut socket).await;
    send(
        &mut socket,
        json!({"type": "approval", "id": asked["id"], "answer": "deny"}),
    )
    .await;
    let frames = turn(&mut socket).await;
    assert!(!frames.iter().any(|f| f["type"] == "tool"), "{frames:?}");
    assert!(!file_under(&run.workspace, "no.txt"));
    run.daemon.stop().await;
}

#[tokio::test]
async fn the_websocket_upgrade_passes_the_same_guard() {
    let run = start().await;
    let bearer = format!("Bearer {TOKEN}");
    let protocols = format!("hearth, bearer.{TOKEN}");
    // Hostile: a foreign page's socket, even with the token; no token; a wrong one.
    assert_eq!(
        connect(
            run.addr,
            "x",
            &[
                ("origin", "https://evil.example"),
                ("authorization", &bearer)
            ]
        )
        .await
        .err(),
        Some(403)
    );
    assert_eq!(connect(run.addr, "x", &[]).await.err(), Some(401));
    assert_eq!(
        connect(
            run.addr,
            "x",
            &[("sec-websocket-protocol", "hearth, bearer.not-the-token-000")]
        )
        .await
        .err(),
        Some(401)
    );
    assert_eq!(
        connect(
            run.addr,
            "x",
            &[("host", "attacker.example"), ("authorization", &bearer)]
        )
        .await
        .err(),
        Some(403)
    );
    assert_eq!(
        connect(run.addr, "../x", &[("authorization", &bearer)])
            .await
            .err(),
        Some(400)
    );
    // Positive controls: a browser on an allowed page, the token as a
    // subprotocol; the server picks `hearth`.
    let (mut socket, response) = connect(
        run.addr,
        "browser",
        &[
            ("origin", "http://allowed.example"),
            ("sec-websocket-protocol", &protocols),
        ],
    )
    .await
    .expect("an allowed page with the token gets a socket");
    assert_eq!(response.headers()["sec-websocket-protocol"], "hearth");
    send(&mut socket, json!({"type": "message", "text": "hello"})).await;
    assert_eq!(turn(&mut socket).await.last().unwrap()["type"], "done");
    run.daemon.stop().await;
}

/// A frame over the 64 KiB limit (a client pasting a whole file) ends that
/// socket with a close saying why; the daemon goes on, and a new socket on
/// the same chat is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_over_the_limit_is_refused_with_a_reason() {
    let run = start().await;
    let mut socket = open(run.addr, "paste").await;
    let huge = json!({"type": "message", "text": "x".repeat(100 * 1024)});
    let _ = socket.send(Message::text(huge.to_string())).await;
    let close = loop {
        match tokio::time::timeout(WAIT, socket.next())
            .await
            .expect("the server answers")
        {
            Some(Ok(Message::Close(frame))) => break frame,
            Some(Ok(Message::Ping(_))) => continue,
            other => panic!("a close frame, not {other:?}"),
        }
    };
    let close = close.expect("a close frame with a code");
    assert_eq!(u16::from(close.code), 1009, "{close:?}");
    assert!(close.reason.contains("64 KiB"), "{close:?}");
    let mut again = open(run.addr, "paste").await;
    send(&mut again, json!({"type": "message", "text": "short one"})).await;
    assert_eq!(turn(&mut again).await.last().unwrap()["type"], "done");
    run.daemon.stop().await;
}

/// A client gone without closing (it reads nothing, so it answers no ping)
/// loses its socket after three ping intervals; the positive control reads,
/// so its library answers every ping, and keeps its socket and its chat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_answers_no_ping_is_closed_and_one_that_does_stays() {
    let run = start_with("ws_ping_secs = 1\n").await;
    let mut gone = open(run.addr, "gone").await;
    let mut here = open(run.addr, "here").await;
    let quiet_until = tokio::time::Instant::now() + Duration::from_millis(4500);
    let mut pings = 0;
    while let Ok(message) = tokio::time::timeout_at(quiet_until, here.next()).await {
        match message {
            Some(Ok(Message::Ping(_))) => pings += 1,
            other => panic!("only pings while quiet, not {other:?}"),
        }
    }
    assert!(pings >= 3, "pinged every second: {pings}");
    // The silent one: the pings it missed, then the end of the socket.
    let mut missed = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::time::timeout_at(deadline, gone.next())
            .await
            .expect("the silent client's socket ends")
        {
            Some(Ok(Message::Ping(_))) => missed += 1,
            Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
            Some(Ok(other)) => panic!("{other:?}"),
        }
    }
    assert!(missed <= 2, "closed at the third interval: {missed} pings");
    // The one that answered is served as ever.
    send(
        &mut here,
        json!({"type": "message", "text": "still there?"}),
    )
    .await;
    assert_eq!(turn(&mut here).await.last().unwrap()["type"], "done");
    run.daemon.stop().await;
}

/// Runs a script of `tests/clients/` with the pinned client packages.
async fn python(script: &str, args: &[&str], stdin: &str) -> Value {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let clients = root.join("target/pyclients");
    assert!(
        clients.join(".installed").exists(),
        "the Python client packages are missing: run `make test-clients`"
    );
    let mut child = tokio::process::Command::new("python3")
        .arg(root.join("tests/clients").join(script))
        .args(args)
        .env("PYTHONPATH", &clients)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut input, stdin.as_bytes())
        .await
        .unwrap();
    drop(input);
    let out = tokio::time::timeout(Duration::from_secs(300), child.wait_with_output())
        .await
        .expect("the client finishes")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_python_client_talks_to_hearth() {
    let run = start().await;
    let base = format!("http://{}", run.addr);
    let seen = python("openai_chat.py", &[&base, TOKEN], "").await;
    assert_eq!(seen["models"], json!(["hearth"]));
    assert_eq!(seen["object"], "chat.completion");
    assert_eq!(seen["whole_finish"], "stop");
    assert!(
        seen["whole"].as_str().unwrap().contains("my name is Ada"),
        "{seen}"
    );
    // Streamed: in pieces, which add up to the typist's reply.
    let pieces: Vec<&str> = seen["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(pieces.len() >= 3, "{seen}");
    assert!(
        pieces.concat().contains("tell me a story about Bob"),
        "{seen}"
    );
    assert_eq!(seen["stream_finish"], "stop");
    // Two conversations kept apart: Ada's second turn saw her first and
    // nothing of Bob's; the client's system prompt was left out.
    let requests = run.typist.parrot.requests.lock().unwrap().clone();
    let ada = requests
        .iter()
        .find(|r| {
            r.messages
                .last()
                .is_some_and(|m| m.content.contains("what is my name?"))
        })
        .expect("Ada's second turn reached the model");
    let all: String = ada.messages.iter().map(|m| m.content.clone()).collect();
    assert!(all.contains("my name is Ada"), "{all}");
    assert!(!all.contains("story about Bob"), "{all}");
    assert!(!all.contains("a client's own prompt"), "{all}");
    // Errors in OpenAI's shape, raised as the client's own exceptions.
    assert_eq!(seen["wrong_key"]["status"], 401, "{seen}");
    assert_eq!(seen["wrong_key"]["code"], "invalid_api_key");
    assert_eq!(seen["no_user"]["status"], 400, "{seen}");
    run.daemon.stop().await;
}

#[tokio::test]
async fn the_openai_routes_refuse_foreign_pages_in_openai_shape() {
    let run = start().await;
    let url = format!("http://{}/v1/chat/completions", run.addr);
    let body = json!({"model": "hearth", "messages": [{"role": "user", "content": "hi"}]});
    let client = reqwest::Client::new();
    // Hostile: a page on another site, with the token; a form post.
    let response = client
        .post(&url)
        .bearer_auth(TOKEN)
        .header("origin", "https://evil.example")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let error: Value = response.json().await.unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("evil.example")
    );
    assert_eq!(error["error"]["type"], "invalid_request_error");
    let response = client
        .post(&url)
        .bearer_auth(TOKEN)
        .header("content-type", "text/plain")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
    assert!(
        run.typist.parrot.requests.lock().unwrap().is_empty(),
        "nothing reached the model"
    );
    // Positive control: the same request from no page.
    let response = client
        .post(&url)
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let reply: Value = response.json().await.unwrap();
    assert!(
        reply["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .contains("hi")
    );
    run.daemon.stop().await;
}

/// `/metrics` as the Prometheus client library's parser reads it:
/// `(name, labels, value)` of every sample.
async fn scrape(addr: std::net::SocketAddr) -> Vec<(String, Value, f64)> {
    let response = reqwest::Client::new()
        .get(format!("http://{addr}/metrics"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    let text = response.text().await.unwrap();
    let samples = python("metrics.py", &[], &text).await;
    samples
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s[0].as_str().unwrap().to_string(),
                s[1].clone(),
                s[2].as_f64().unwrap(),
            )
        })
        .collect()
}

fn sample(samples: &[(String, Value, f64)], name: &str, labels: Value) -> f64 {
    samples
        .iter()
        .filter(|(n, l, _)| {
            n == name
                && labels
                    .as_object()
                    .unwrap()
                    .iter()
                    .all(|(k, v)| l.get(k) == Some(v))
        })
        .map(|(_, _, v)| v)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_change_as_messages_flow_and_parse_as_prometheus_text() {
    let run = start().await;
    let url = format!("http://{}/metrics", run.addr);
    assert!(run.metrics.render().ends_with("# EOF\n"));
    // Hostile: no token; a foreign page with the token.
    let client = reqwest::Client::new();
    assert_eq!(client.get(&url).send().await.unwrap().status(), 401);
    let foreign = client
        .get(&url)
        .bearer_auth(TOKEN)
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);

    let before = scrape(run.addr).await;
    let replied = json!({"channel": "gateway", "outcome": "replied"});
    assert_eq!(
        sample(&before, "hearth_messages_total", replied.clone()),
        0.0
    );
    for text in ["one", &call("file_read", json!({"path": "missing.txt"}))] {
        let response = client
            .post(format!("http://{}/v1/message", run.addr))
            .bearer_auth(TOKEN)
            .json(&json!({"text": text, "chat": "metrics"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let after = scrape(run.addr).await;
    assert_eq!(
        sample(&after, "hearth_messages_total", replied),
        2.0,
        "{after:?}"
    );
    assert_eq!(sample(&after, "hearth_reply_seconds_count", json!({})), 2.0);
    assert!(sample(&after, "hearth_first_token_seconds_count", json!({})) >= 2.0);
    assert_eq!(
        sample(
            &after,
            "hearth_tool_calls_total",
            json!({"tool": "file_read", "outcome": "error"})
        ),
        1.0,
        "{after:?}"
    );
    // The typist reports no usage; the families are there, with nothing yet.
    assert_eq!(
        sample(
            &after,
            "hearth_prompt_tokens_total",
            json!({"kind": "reused"})
        ),
        0.0
    );
    run.daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_binary_serves_smollm2_to_every_way_in_and_counts_it() {
    common::model(common::SMOLLM2);
    let sandbox = common::Sandbox::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = sandbox.config(&format!(
        "[generation]\ntemperature = 0.0\nmax_tokens = 400\n[channels.gateway]\nlisten = \"127.0.0.1:{port}\"\ntoken = \"{TOKEN}\"\n"
    ));
    let mut daemon = tokio::process::Command::from(sandbox.hearth_process())
        .arg("--config")
        .arg(&config)
        .arg("daemon")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let health = format!("http://{addr}/health");
    let client = reqwest::Client::new();
    let up = async {
        loop {
            let ok = client.get(&health).bearer_auth(TOKEN).send().await;
            if ok.is_ok_and(|r| r.status() == 200) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    tokio::time::timeout(WAIT, up)
        .await
        .expect("the daemon's gateway comes up");
    let seen = python("openai_chat.py", &[&format!("http://{addr}"), TOKEN], "").await;
    assert!(!seen["whole"].as_str().unwrap().trim().is_empty(), "{seen}");
    assert!(!seen["pieces"].as_array().unwrap().is_empty(), "{seen}");
    assert_eq!(seen["stream_finish"], "stop");
    assert!(!seen["ada_again"].as_str().unwrap().trim().is_empty());
    assert_eq!(seen["wrong_key"]["status"], 401);
    // The same daemon over a WebSocket: a streamed turn, then a long
    // one stopped part way.
    let mut socket = open(addr, "ws-desk").await;
    send(
        &mut socket,
        json!({"type": "message", "text": "What is the capital of France?"}),
    )
    .await;
    let frames = turn(&mut socket).await;
    let done = frames.last().unwrap();
    assert!(!chunks(&frames).is_empty(), "{frames:?}");
    assert!(!done["text"].as_str().unwrap().trim().is_empty(), "{done}");
    assert!(!done["text"].as_str().unwrap().contains("<|im_end|>"));
    send(
        &mut socket,
        json!({"type": "message", "text": "Write a very long story about a dragon."}),
    )
    .await;
    assert_eq!(frame(&mut socket).await["type"], "chunk");
    send(&mut socket, json!({"type": "stop"})).await;
    let done = turn(&mut socket).await.pop().unwrap();
    assert_eq!(done["stopped"], true, "{done}");
    // And the seeds' HTTP endpoint.
    let answer: Value = client
        .post(format!("http://{addr}/api/chat"))
        .bearer_auth(TOKEN)
        .json(&json!({"text": "Say hello.", "chat": "http-desk"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        !answer["reply"].as_str().unwrap().trim().is_empty(),
        "{answer}"
    );
    let samples = scrape(addr).await;
    let replied = json!({"channel": "gateway", "outcome": "replied"});
    assert_eq!(
        sample(&samples, "hearth_messages_total", replied),
        5.0,
        "{samples:?}"
    );
    assert!(
        sample(
            &samples,
            "hearth_prompt_tokens_total",
            json!({"kind": "decoded"})
        ) > 0.0
    );
    // Ada's second turn found her conversation cached (in its slot, or
    // in RAM when Bob's took the slot).
    assert!(
        sample(
            &samples,
            "hearth_prompt_tokens_total",
            json!({"kind": "reused"})
        ) > 0.0,
        "{samples:?}"
    );
    assert!(sample(&samples, "hearth_decode_tokens_per_second", json!({})) > 0.0);
    assert_eq!(
        sample(
            &samples,
            "hearth_queue_depth",
            json!({"priority": "interactive"})
        ),
        0.0
    );
    let _ = daemon.start_kill();
    let _ = daemon.wait().await;
}
