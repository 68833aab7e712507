//! A daemon behind the gateway for the ways-in tests (`tests/websocket.rs`,
//! `tests/ways_in.rs`): the typist as its model, a real WebSocket client,
//! and the real Python client packages (`openai`, the Prometheus parser)
//! that `make test-clients` installs.

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
use serde_json::Value;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};

use super::{Typist, local};

pub const TOKEN: &str = "ways-in-token-0123456789";
pub const WAIT: Duration = Duration::from_secs(60);

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub struct Running {
    pub daemon: Daemon,
    pub metrics: Arc<Metrics>,
    pub addr: std::net::SocketAddr,
    pub typist: Arc<Typist>,
    pub workspace: PathBuf,
    /// The documents sent through the gateway, as the daemon keeps them.
    pub library: Arc<hearth::documents::Library>,
    pub _home: tempfile::TempDir,
}

/// A daemon with the tools `hearth daemon` builds, the typist, and a
/// gateway on a free port that lets `http://allowed.example` in.
pub async fn gateway() -> Running {
    gateway_with("").await
}

/// [`gateway`] with more `[channels.gateway]` settings.
pub async fn gateway_with(gateway: &str) -> Running {
    gateway_serving(gateway, None).await
}

/// [`gateway_with`], serving `served` as itself beside the assistant.
pub async fn gateway_serving(
    gateway: &str,
    served: Option<Arc<dyn hearth::channels::gateway::ServedModel>>,
) -> Running {
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
    let mut channel = hearth::daemon::gateway_settings(&cfg.gateway)
        .map(GatewayChannel::new)
        .unwrap()
        .with_metrics(metrics.clone());
    if let Some(served) = served {
        channel = channel.with_served_model(served);
    }
    let channel = Arc::new(channel);
    // A Telegram channel beside it, when the settings name one (the fake's).
    let telegram: Option<Arc<dyn hearth::channels::Channel>> = cfg
        .telegram
        .bot_token
        .is_some()
        .then(|| super::telegram_bot::channel(&cfg) as Arc<dyn hearth::channels::Channel>);
    let context = hearth::cli::tools_cmd::context(&cfg, &env).unwrap();
    let tools = ToolRegistry::for_config(&cfg.agent, &context.sandbox);
    let typist = Typist::new(Duration::from_millis(15));
    let library = crate::documents::library(&cfg);
    let runtime = RuntimeBuilder::new(cfg, local(typist.clone()), context)
        .documents(library.clone())
        .tools(Arc::new(tools))
        .channel(channel.clone())
        .channels(telegram)
        .metrics(metrics.clone())
        .build()
        .unwrap();
    channel.attach_desk(Arc::new(hearth::daemon::DaemonDesk::new(
        &runtime,
        hearth::daemon::DeskParts::default(),
    )));
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
        library,
        _home: home,
    }
}

/// Opens `/ws/chat?chat=CHAT` with `headers`; the HTTP status of a refusal.
pub async fn connect(
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

pub async fn open(addr: std::net::SocketAddr, chat: &str) -> Socket {
    let bearer = format!("Bearer {TOKEN}");
    connect(addr, chat, &[("authorization", &bearer)])
        .await
        .expect("the token holder gets a socket")
        .0
}

pub async fn send(socket: &mut Socket, frame: Value) {
    socket.send(Message::text(frame.to_string())).await.unwrap();
}

/// The next JSON frame (pings are answered by the client library).
pub async fn frame(socket: &mut Socket) -> Value {
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
pub async fn turn(socket: &mut Socket) -> Vec<Value> {
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

pub fn chunks(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .filter(|f| f["type"] == "chunk")
        .map(|f| f["text"].as_str().unwrap().to_string())
        .collect()
}

/// `POST {url}/v1/message` with the token: the JSON answer.
pub async fn message(url: &str, chat: &str, text: &str) -> Value {
    reqwest::Client::new()
        .post(format!("{url}/v1/message"))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({ "text": text, "chat": chat }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Runs a script of `tests/clients/` with the pinned client packages. A
/// script that runs past its limit is killed and what it wrote to stderr
/// (its progress) is shown.
pub async fn python(script: &str, args: &[&str], stdin: &str) -> Value {
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
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut input, stdin.as_bytes())
        .await
        .unwrap();
    drop(input);
    let stdout = tokio::spawn(read_all(child.stdout.take().unwrap()));
    let stderr = tokio::spawn(read_all(child.stderr.take().unwrap()));
    let status = tokio::time::timeout(PYTHON_LIMIT, child.wait()).await;
    if status.is_err() {
        child.kill().await.unwrap();
    }
    let stderr = String::from_utf8_lossy(&stderr.await.unwrap()).into_owned();
    let status = status
        .unwrap_or_else(|_| panic!("{script} ran past {PYTHON_LIMIT:?}; it wrote: {stderr}"))
        .unwrap();
    assert!(status.success(), "{script} failed: {stderr}");
    serde_json::from_slice(&stdout.await.unwrap()).unwrap_or_else(|e| panic!("{e}: {stderr}"))
}

/// How long a client script may run: the longest drives a small model
/// through some forty requests on a busy two-core machine.
const PYTHON_LIMIT: Duration = Duration::from_secs(900);

async fn read_all(mut from: impl tokio::io::AsyncRead + Unpin) -> Vec<u8> {
    let mut all = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut from, &mut all)
        .await
        .unwrap();
    all
}

/// `/metrics` as the Prometheus client library's parser reads it:
/// `(name, labels, value)` of every sample.
/// Asked for as Prometheus asks (OpenMetrics first).
pub async fn scrape(addr: std::net::SocketAddr) -> Vec<(String, Value, f64)> {
    scrape_as(
        addr,
        Some("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
    )
    .await
}

/// `/metrics` asked for with `accept` (none: no header), checked to come in
/// that format and read by that format's parser.
pub async fn scrape_as(
    addr: std::net::SocketAddr,
    accept: Option<&str>,
) -> Vec<(String, Value, f64)> {
    let mut request = reqwest::Client::new()
        .get(format!("http://{addr}/metrics"))
        .bearer_auth(TOKEN);
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    let openmetrics = accept.is_some_and(|a| a.contains("openmetrics"));
    let (expected, parser) = if openmetrics {
        ("application/openmetrics-text", "openmetrics")
    } else {
        ("text/plain; version=0.0.4", "text")
    };
    assert!(kind.starts_with(expected), "{kind} for {accept:?}");
    let text = response.text().await.unwrap();
    let samples = python("metrics.py", &[parser], &text).await;
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

pub fn sample(samples: &[(String, Value, f64)], name: &str, labels: Value) -> f64 {
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
