//! Pipeline overhead per message, without a model: messages go through the
//! bus, the dispatcher and every pipeline phase (hooks, commands, routing,
//! SQLite history, prompt, the tool loop, sanitising, sending, persisting)
//! to an in-memory channel, answered at once by a provider that does no
//! work. One message at a time is measured with the durable inbox (every
//! message recorded, `synchronous = FULL` for its arrival) and without it
//! (an ephemeral channel, as the CLI's), in alternating rounds, since this
//! machine's speed drifts. Then the idle RSS of `hearth daemon` (loopback
//! channel): without a model, and with the default model loaded when it is
//! present.
//!
//! Run: `cargo bench --bench pipeline` (figures are in the README).
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hearth::channels::InMemoryChannel;
use hearth::chat::{ChatRequest, ChatStream, FinishReason, StreamEvent, Usage};
use hearth::config::{Config, Environment};
use hearth::daemon::Daemon;
use hearth::pipeline::{RuntimeBuilder, StaticProviders};
use hearth::providers::Provider;
use hearth::security::{Autonomy, SecurityPolicy};
use hearth::tools::ToolContext;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Answers "ok" at once, forever.
struct Instantly;

impl Provider for Instantly {
    fn name(&self) -> &str {
        "instant"
    }

    fn chat(&self, _request: ChatRequest, _cancel: CancellationToken) -> ChatStream {
        let (tx, rx) = mpsc::channel(2);
        let _ = tx.try_send(StreamEvent::TextDelta("ok".into()));
        let _ = tx.try_send(StreamEvent::Done {
            usage: Usage::default(),
            finish: FinishReason::Stop,
        });
        ChatStream::new(rx)
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn start(
    home: &Path,
    durable: bool,
) -> (
    Daemon,
    Arc<InMemoryChannel>,
    mpsc::UnboundedReceiver<hearth::dispatch::Report>,
) {
    let config = Config::defaults(&Environment::with_home(home)).expect("defaults");
    std::fs::create_dir_all(&config.agent.workspace).expect("workspace");
    let tools = ToolContext::new(
        SecurityPolicy::new(&config.agent.workspace, Autonomy::Supervised, None).expect("policy"),
        Duration::from_secs(10),
    );
    let providers = Arc::new(StaticProviders::new().with("local", Arc::new(Instantly)));
    let channel = InMemoryChannel::new("mem");
    let channel = Arc::new(if durable {
        channel
    } else {
        channel.ephemeral()
    });
    let runtime = RuntimeBuilder::new(config, providers, tools)
        .channel(channel.clone())
        .build()
        .expect("runtime");
    let (tx, rx) = mpsc::unbounded_channel();
    (Daemon::start(runtime, Some(tx)), channel, rx)
}

/// One message at a time: the latency of the pipeline itself.
async fn sequential(n: usize, durable: bool) -> Vec<Duration> {
    let home = tempfile::tempdir().expect("tempdir");
    let (daemon, channel, mut reports) = start(home.path(), durable);
    let mut latencies = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        channel.inject_text(&format!("u{}", i % 20), &format!("message number {i}"));
        reports.recv().await.expect("report");
        latencies.push(t.elapsed());
    }
    daemon.stop().await;
    latencies.sort();
    latencies
}

/// `n` messages from `senders` senders queued at once: throughput, and the
/// latency from injection to outcome under load.
async fn burst(n: usize, senders: usize) -> (f64, Vec<Duration>) {
    let home = tempfile::tempdir().expect("tempdir");
    let (daemon, channel, mut reports) = start(home.path(), true);
    let t0 = Instant::now();
    let mut sent_at = HashMap::with_capacity(n);
    for i in 0..n {
        let m = channel.inject_text(&format!("s{}", i % senders), &format!("burst {i}"));
        sent_at.insert(m.id, Instant::now());
    }
    let mut latencies = Vec::with_capacity(n);
    for _ in 0..n {
        let r = reports.recv().await.expect("report");
        latencies.push(sent_at[&r.message_id].elapsed());
    }
    let rate = n as f64 / t0.elapsed().as_secs_f64();
    daemon.stop().await;
    latencies.sort();
    (rate, latencies)
}

/// Starts `hearth daemon` with the loopback channel, waits until it is
/// idle, and reads its resident set size in MiB.
fn idle_rss(model: &str) -> Option<f64> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/hearth");
    if !bin.is_file() {
        eprintln!("build first: cargo build --release");
        return None;
    }
    let home = tempfile::tempdir().ok()?;
    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        format!("[model]\npath = {model:?}\n[daemon]\nloopback_channel = true\n[log]\nlevel = \"info\"\n"),
    )
    .ok()?;
    let mut child = Command::new(bin)
        .args(["--config", config.to_str()?, "daemon"])
        .env("HOME", home.path())
        .env("HEARTH_DATA_DIR", home.path().join("data"))
        .env_remove("RUST_LOG")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .ok()?;
    let stderr = child.stderr.take()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Idle: listening, and the model loaded (or failed to).
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut listening = false;
    let mut settled = false;
    while Instant::now() < deadline && !(listening && settled) {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            listening |= line.contains("listening on");
            settled |= line.contains("engine ready")
                || line.contains("cannot load the model")
                || line.contains("model loaded");
        }
    }
    std::thread::sleep(Duration::from_secs(3));
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).ok();
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    let kb: f64 = status?
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // `cargo bench` passes --bench; under `cargo test` one smaller round of
    // each checks that the bench still runs (its figures are not reported).
    let full = std::env::args().any(|a| a == "--bench");
    let (n, rounds, burst_n, senders) = if full {
        (2_000, 5, 5_000, 1_000)
    } else {
        (300, 2, 500, 100)
    };
    let mut rates: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut all: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    for round in 0..rounds {
        for durable in [round % 2 == 0, round % 2 != 0] {
            let seq = runtime.block_on(sequential(n, durable));
            let total: Duration = seq.iter().sum();
            rates[usize::from(durable)].push(n as f64 / total.as_secs_f64());
            all[usize::from(durable)].extend(seq);
        }
    }
    for durable in [false, true] {
        let lat = &mut all[usize::from(durable)];
        lat.sort();
        let mut r = rates[usize::from(durable)].clone();
        r.sort_by(f64::total_cmp);
        println!(
            "sequential, {n} messages × {rounds} rounds, {}: median {:.0} messages/s (rounds {}), p50 {:.3} ms, p99 {:.3} ms",
            if durable { "durable inbox" } else { "no inbox" },
            r[r.len() / 2],
            r.iter()
                .map(|x| format!("{x:.0}"))
                .collect::<Vec<_>>()
                .join(", "),
            percentile(lat, 0.5).as_secs_f64() * 1e3,
            percentile(lat, 0.99).as_secs_f64() * 1e3
        );
    }
    let cost = 1.0
        - rates[1].iter().sum::<f64>()
            / rates[1].len() as f64
            / (rates[0].iter().sum::<f64>() / rates[0].len() as f64);
    println!(
        "the durable inbox costs {:.0} % of the sequential rate",
        cost * 100.0
    );
    let (rate, lat) = runtime.block_on(burst(burst_n, senders));
    println!(
        "burst, {burst_n} messages from {senders} senders: {rate:.0} messages/s, p50 {:.1} ms, p99 {:.1} ms (queueing included)",
        percentile(&lat, 0.5).as_secs_f64() * 1e3,
        percentile(&lat, 0.99).as_secs_f64() * 1e3
    );
    match idle_rss("/nonexistent/none.gguf") {
        Some(mb) => println!("idle RSS of `hearth daemon`, no model loaded: {mb:.1} MiB"),
        None => println!("idle RSS: could not measure"),
    }
    let model =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    if model.is_file() {
        match idle_rss(&model.display().to_string()) {
            Some(mb) => {
                println!("idle RSS of `hearth daemon`, SmolLM2-135M Q4_1 loaded: {mb:.1} MiB")
            }
            None => println!("idle RSS with the model: could not measure"),
        }
    }
}
