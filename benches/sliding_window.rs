//! Gemma 3 270M (sliding window of 512) after a history rewrite about 600
//! tokens back: how many prompt tokens the next turn decodes, its time to
//! first token, and the process's memory, three ways:
//! - `full`: the full-size window cache (the default, `swa_full = true`);
//! - `window`: only the window kept, with checkpoints (`swa_full = false`);
//! - `window-no-checkpoints`: only the window, nothing saved (the prompt is
//!   read again), for reference.
//!
//! Each way runs in a child process of its own, so its memory is its own,
//! round by round in rotating order (this machine's speed drifts). Medians
//! are printed. Run: `cargo bench --bench sliding_window` (needs
//! `make test-models`).
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

#[path = "../tests/common/mod.rs"]
mod common;

use std::process::Command;
use std::time::Instant;

use hearth::chat::{ChatMessage, ChatRequest, SamplingParams, StreamEvent};
use hearth::engine::{Engine, EngineSettings};
use tokio_util::sync::CancellationToken;

const ROUNDS: usize = 5;
const WAYS: [&str; 3] = ["full", "window", "window-no-checkpoints"];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(&args[i + 1]);
        return;
    }
    // `cargo bench` passes --bench; under `cargo test` one round checks
    // that the bench still runs.
    let rounds = if args.iter().any(|a| a == "--bench") {
        ROUNDS
    } else {
        1
    };
    let me = std::env::current_exe().expect("own path");
    let mut figures: Vec<Vec<[f64; 4]>> = vec![Vec::new(); WAYS.len()];
    for round in 0..rounds {
        for k in 0..WAYS.len() {
            let way = (round + k) % WAYS.len();
            let out = Command::new(&me)
                .args(["--child", WAYS[way]])
                .output()
                .expect("child runs");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let line = String::from_utf8_lossy(&out.stdout);
            let v: Vec<f64> = line
                .split_whitespace()
                .map(|x| x.parse().expect("figures"))
                .collect();
            eprintln!("round {} {}: {line}", round + 1, WAYS[way].trim());
            figures[way].push([v[0], v[1], v[2], v[3]]);
        }
    }
    println!("\nGemma 3 270M, a rewrite ~600 tokens back, {rounds} rounds (medians)\n");
    println!("| window cache | prompt tokens | decoded | time to first token | process memory |");
    println!("|---|---|---|---|---|");
    for (way, runs) in WAYS.iter().zip(&figures) {
        let med = |i: usize| {
            let mut v: Vec<f64> = runs.iter().map(|r| r[i]).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        println!(
            "| {way} | {:.0} | {:.0} | {:.0} ms | {:.0} MiB |",
            med(0),
            med(1),
            med(2),
            med(3)
        );
    }
}

/// One way: prints prompt tokens, decoded tokens, TTFT (ms) of the turn
/// after the rewrite, and the resident memory (MiB) after it.
fn child(way: &str) {
    let kv = std::env::temp_dir().join(format!("hearth-swa-bench-{}", std::process::id()));
    let settings = EngineSettings {
        chat_template: Some("gemma".into()),
        context_size: 4096,
        kv_dir: Some(kv.clone()),
        swa_full: way == "full",
        swa_checkpoints: if way == "window" { 8 } else { 0 },
        mmproj: None,
        image_limits: Default::default(),
        ..common::engine_settings(common::GEMMA3)
    };
    let engine = Engine::start(settings, None).expect("engine starts");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let list = |topic: &str, n: usize| -> String {
        (1..=n)
            .map(|i| {
                format!(
                    "Note {i} on {topic}: shelf {} holds {} boxes.",
                    i % 7,
                    i * 3
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let first = vec![
        ChatMessage::user(format!("{} Which shelf is fullest?", list("books", 70))),
        ChatMessage::assistant("Shelf 3."),
        ChatMessage::user(format!("{} Which shelf is emptiest?", list("tools", 45))),
    ];
    let mut rewritten = first.clone();
    rewritten[2] = ChatMessage::user(format!("{} Which shelf is emptiest?", list("toys", 45)));
    let mut last = None;
    for messages in [first, rewritten] {
        let request = ChatRequest::new("swa", messages, SamplingParams::greedy(16));
        let started = Instant::now();
        let mut stream = engine.submit(request, CancellationToken::new());
        let mut ttft = None;
        rt.block_on(async {
            while let Some(event) = stream.next().await {
                match event {
                    StreamEvent::TextDelta(_) => {
                        ttft.get_or_insert_with(|| started.elapsed().as_secs_f64() * 1e3);
                    }
                    StreamEvent::Done { usage, .. } => {
                        let ttft = ttft.unwrap_or(started.elapsed().as_secs_f64() * 1e3);
                        last = Some((usage, ttft));
                    }
                    StreamEvent::Error(e) => panic!("{e}"),
                    _ => {}
                }
            }
        });
    }
    let (usage, ttft) = last.expect("a reply");
    let rss_kib: f64 = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    engine.shutdown();
    let _ = std::fs::remove_dir_all(&kv);
    println!(
        "{} {} {ttft:.1} {:.1}",
        usage.prompt_tokens,
        usage.prompt_tokens - usage.cached_tokens,
        rss_kib / 1024.0
    );
}
