//! `hearth bench --parallel N`: N conversations at once, decoded together,
//! against the same N one after the other.
//!
//! Each round runs both ways on one engine with N sequences, in alternating
//! order (this machine's speed drifts, so only runs interleaved round by
//! round compare). Every conversation is new, so each prompt is read whole
//! both ways. Figures: aggregate decode tokens/s (generated tokens over the
//! wall time from the first request to the last reply) and each
//! conversation's time to first token.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use serde::Serialize;

use super::bench::{median, start, stop, timed_reply, write_json};
use crate::chat::ChatMessage;
use crate::config::Config;
use crate::engine::{Engine, EngineSettings};

const PROMPTS: [&str; 8] = [
    "Write a long story about a lighthouse keeper and a storm.",
    "Write a long story about a dragon who learns to cook.",
    "Write a long story about a girl who builds a robot.",
    "Write a long story about a sailor lost at sea.",
    "Write a long story about a village that hides a secret.",
    "Write a long story about a cat who becomes a detective.",
    "Write a long story about two friends crossing a desert.",
    "Write a long story about a musician who loses her voice.",
];

/// How much `--parallel` runs.
pub struct Shape {
    pub conversations: usize,
    pub rounds: usize,
    pub reply_tokens: u32,
}

#[derive(Debug, Serialize)]
pub struct ParallelReport {
    pub model: String,
    pub threads: i32,
    pub conversations: usize,
    pub reply_tokens: u32,
    pub rounds: Vec<Round>,
    /// Medians over the rounds.
    pub serial_tokens_per_s: f64,
    pub batched_tokens_per_s: f64,
    pub ratio: f64,
    pub serial_ttft_ms: f64,
    pub batched_ttft_ms: f64,
    /// Conversations, over all rounds, whose batched reply is the serial one
    /// character for character (greedy decoding either way).
    pub identical_replies: usize,
}

#[derive(Debug, Serialize)]
pub struct Round {
    pub serial: Run,
    pub batched: Run,
    /// Batched aggregate tokens/s over serial.
    pub ratio: f64,
    /// Per conversation: the characters the two replies share from the start
    /// (the whole reply when they are equal).
    pub common_prefix_chars: Vec<usize>,
}

#[derive(Debug, Serialize)]
pub struct Run {
    pub tokens: u32,
    pub seconds: f64,
    pub tokens_per_s: f64,
    /// Each conversation's time from the first request to its first text.
    pub ttft_ms: Vec<f64>,
    pub replies: Vec<String>,
}

pub async fn run(config: &Config, json: &Path, shape: Shape) -> anyhow::Result<ExitCode> {
    let conversations = shape.conversations;
    anyhow::ensure!(
        (1..=PROMPTS.len()).contains(&conversations),
        "--parallel takes 1 to {} conversations",
        PROMPTS.len()
    );
    let base = crate::engine_setup::engine_settings(config)?;
    let scratch = std::env::temp_dir().join(format!("hearth-bench-{}", std::process::id()));
    let engine = start(EngineSettings {
        slots: base.slots.max(conversations as u32),
        kv_dir: Some(scratch.clone()),
        ..base
    })
    .await?;
    let result = measure(&engine, &shape).await;
    stop(engine).await;
    let _ = std::fs::remove_dir_all(&scratch);
    let report = result?;
    print(&report);
    write_json(json, &serde_json::to_string_pretty(&report)?)?;
    Ok(ExitCode::SUCCESS)
}

async fn measure(engine: &Engine, shape: &Shape) -> anyhow::Result<ParallelReport> {
    let (n, rounds, tokens) = (shape.conversations, shape.rounds.max(1), shape.reply_tokens);
    let mut all = Vec::new();
    for round in 0..rounds {
        eprintln!("round {} of {rounds} ...", round + 1);
        let tag = |way: &str| format!("par-{round}-{way}");
        let (serial, batched) = if round % 2 == 0 {
            let s = serial(engine, &tag("s"), n, tokens).await?;
            (s, batched(engine, &tag("b"), n, tokens).await?)
        } else {
            let b = batched(engine, &tag("b"), n, tokens).await?;
            (serial(engine, &tag("s"), n, tokens).await?, b)
        };
        eprintln!(
            "  serial {:.1} tokens/s, batched {:.1} tokens/s",
            serial.tokens_per_s, batched.tokens_per_s
        );
        all.push(Round {
            ratio: batched.tokens_per_s / serial.tokens_per_s,
            common_prefix_chars: common_prefixes(&serial.replies, &batched.replies),
            serial,
            batched,
        });
    }
    let med = |f: &dyn Fn(&Round) -> f64| median(&mut all.iter().map(f).collect::<Vec<_>>());
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let info = engine.info();
    Ok(ParallelReport {
        model: info.path.display().to_string(),
        threads: info.threads,
        conversations: n,
        reply_tokens: tokens,
        serial_tokens_per_s: med(&|r| r.serial.tokens_per_s),
        batched_tokens_per_s: med(&|r| r.batched.tokens_per_s),
        ratio: med(&|r| r.ratio),
        serial_ttft_ms: med(&|r| mean(&r.serial.ttft_ms)),
        batched_ttft_ms: med(&|r| mean(&r.batched.ttft_ms)),
        identical_replies: all
            .iter()
            .flat_map(|r| r.serial.replies.iter().zip(&r.batched.replies))
            .filter(|(s, b)| s == b)
            .count(),
        rounds: all,
    })
}

fn common_prefixes(serial: &[String], batched: &[String]) -> Vec<usize> {
    serial
        .iter()
        .zip(batched)
        .map(|(s, b)| s.chars().zip(b.chars()).take_while(|(x, y)| x == y).count())
        .collect()
}

fn messages(i: usize) -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("You are a helpful assistant."),
        ChatMessage::user(PROMPTS[i]),
    ]
}

/// The conversations one after the other.
async fn serial(engine: &Engine, tag: &str, n: usize, max_tokens: u32) -> anyhow::Result<Run> {
    let started = Instant::now();
    let (mut tokens, mut ttft_ms, mut replies) = (0, Vec::new(), Vec::new());
    for i in 0..n {
        let before = started.elapsed().as_secs_f64() * 1e3;
        let (usage, ttft, text) =
            timed_reply(engine, &format!("{tag}-{i}"), messages(i), max_tokens).await?;
        tokens += usage.completion_tokens;
        ttft_ms.push(before + ttft);
        replies.push(text);
    }
    Ok(finish(tokens, started, ttft_ms, replies))
}

/// The conversations submitted together.
async fn batched(engine: &Engine, tag: &str, n: usize, max_tokens: u32) -> anyhow::Result<Run> {
    let started = Instant::now();
    let replies = (0..n).map(|i| {
        let key = format!("{tag}-{i}");
        async move { timed_reply(engine, &key, messages(i), max_tokens).await }
    });
    let (mut tokens, mut ttft_ms, mut texts) = (0, Vec::new(), Vec::new());
    for reply in futures::future::join_all(replies).await {
        let (usage, ttft, text) = reply?;
        tokens += usage.completion_tokens;
        ttft_ms.push(ttft);
        texts.push(text);
    }
    Ok(finish(tokens, started, ttft_ms, texts))
}

fn finish(tokens: u32, started: Instant, ttft_ms: Vec<f64>, replies: Vec<String>) -> Run {
    let seconds = started.elapsed().as_secs_f64();
    Run {
        tokens,
        seconds,
        tokens_per_s: f64::from(tokens) / seconds,
        ttft_ms,
        replies,
    }
}

fn print(r: &ParallelReport) {
    println!(
        "\n{} conversations, {} tokens each at most, {} rounds (medians)\n",
        r.conversations,
        r.reply_tokens,
        r.rounds.len()
    );
    println!("| | aggregate decode tokens/s | mean time to first token |");
    println!("|---|---|---|");
    println!(
        "| one after the other | {:.1} | {:.0} ms |",
        r.serial_tokens_per_s, r.serial_ttft_ms
    );
    println!(
        "| together (batched) | {:.1} | {:.0} ms |",
        r.batched_tokens_per_s, r.batched_ttft_ms
    );
    println!("\nbatched / serial, per round: {:.2}× (median)", r.ratio);
    println!(
        "replies identical batched and one at a time: {} of {}",
        r.identical_replies,
        r.conversations * r.rounds.len()
    );
}
