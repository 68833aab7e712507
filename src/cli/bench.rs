//! `hearth bench`: how fast the engine is, and what its KV cache saves.
//!
//! One run measures, on the configured model:
//! - prompt reading and decoding speed (tokens/s, median of several runs);
//! - a multi-turn conversation (a ~2,000-token system prompt, 10 turns):
//!   per turn the prompt tokens, the tokens actually decoded and the time to
//!   first token, once with prompt reuse and once without;
//! - a restart: the first turn after restarting with a saved conversation,
//!   against a cold start with the same prompt.
//!
//! It prints a table and writes the figures as JSON.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::chat::{ChatMessage, ChatReply, ChatRequest, SamplingParams, StreamEvent, Usage};
use crate::config::Config;
use crate::engine::{Engine, EngineSettings};

/// The user turns of the multi-turn scenario.
pub const QUESTIONS: [&str; 10] = [
    "What is the capital of France?",
    "What is it famous for?",
    "Name a river that flows through it.",
    "How long is that river?",
    "Which sea does it flow into?",
    "Name another big city in the same country.",
    "What food is that city known for?",
    "Give me a short recipe for it.",
    "How long does it take to cook?",
    "Thanks! Summarise our conversation in one sentence.",
];

const REPLY_TOKENS: u32 = 48;
const SPEED_RUNS: usize = 5;

#[derive(Debug, Serialize)]
pub struct Report {
    pub model: String,
    pub threads: i32,
    pub context_per_conversation: u32,
    pub prompt_tokens_per_s: f64,
    pub decode_tokens_per_s: f64,
    pub multi_turn: Vec<TurnFigures>,
    pub turn10_ttft_ratio: f64,
    pub restart: RestartFigures,
    /// The multi-turn conversation itself, so other systems can be driven
    /// through exactly the same prompts (benches/compare.sh).
    pub scenario: Scenario,
}

#[derive(Debug, Serialize)]
pub struct Scenario {
    pub system_prompt: String,
    pub questions: Vec<String>,
    /// hearth's replies with reuse, used as the assistant turns.
    pub replies: Vec<String>,
    pub reply_tokens: u32,
}

#[derive(Debug, Serialize)]
pub struct TurnFigures {
    pub turn: usize,
    pub prompt_tokens: u32,
    pub decoded_with_reuse: u32,
    pub ttft_ms_with_reuse: f64,
    pub decoded_without_reuse: u32,
    pub ttft_ms_without_reuse: f64,
}

#[derive(Debug, Serialize)]
pub struct RestartFigures {
    pub prompt_tokens: u32,
    pub ttft_ms_after_restart: f64,
    pub decoded_after_restart: u32,
    pub ttft_ms_cold: f64,
    pub ratio: f64,
}

/// The system prompt of the multi-turn scenario: about 2,000 tokens of
/// assistant guidance, the size of a real agent's system prompt.
pub fn system_prompt() -> String {
    let rules = [
        "Answer the question that was asked, briefly and plainly, without filler.",
        "When you are not sure of a fact, say so instead of guessing a number.",
        "Prefer metric units, and give both when the user used imperial ones.",
        "Keep lists short: three to five items unless the user asks for more.",
        "Never reveal secrets such as passwords, tokens or keys, even if asked.",
        "When a question is ambiguous, answer the most likely reading and say which.",
        "Use the conversation so far: the user may refer back to earlier answers.",
        "Write dates as day month year, and times in the 24-hour clock.",
    ];
    let mut prompt = String::from(
        "You are hearth, a helpful assistant running locally on the user's computer.\n",
    );
    for section in 1..=13 {
        prompt.push_str(&format!("\nGuidelines, part {section}:\n"));
        for (i, rule) in rules.iter().enumerate() {
            prompt.push_str(&format!("{}. {rule}\n", i + 1));
        }
    }
    prompt
}

/// Prompt and decode speed alone.
#[derive(Debug, Serialize)]
pub struct SpeedReport {
    pub prompt_tokens_per_s: f64,
    pub decode_tokens_per_s: f64,
    /// The context's shape, so llama.cpp can be measured with the same one
    /// (benches/compare.sh): cells per conversation, conversations, batch.
    pub context_per_conversation: u32,
    pub slots: u32,
    pub batch_size: u32,
}

pub async fn run(config: &Config, json: &Path, speed_only: bool) -> anyhow::Result<ExitCode> {
    // Plain decoding, as llama-bench and llama-server measure it;
    // `--speculative` measures drafts.
    let base = EngineSettings {
        speculation: crate::engine::Speculation::Off,
        ..crate::engine_setup::engine_settings(config)?
    };
    if speed_only {
        let batch_size = base.batch_size;
        let scratch = std::env::temp_dir().join(format!("hearth-bench-{}", std::process::id()));
        let engine = start(EngineSettings {
            kv_dir: Some(scratch.clone()),
            ..base
        })
        .await?;
        let result = speed(&engine).await;
        let (context_per_conversation, slots) = (engine.info().n_ctx, engine.info().slots);
        stop(engine).await;
        let _ = std::fs::remove_dir_all(&scratch);
        let (prompt, decode) = result?;
        println!("prompt {prompt:.0} tokens/s, decode {decode:.1} tokens/s");
        let report = SpeedReport {
            prompt_tokens_per_s: prompt,
            decode_tokens_per_s: decode,
            context_per_conversation,
            slots,
            batch_size,
        };
        write_json(json, &serde_json::to_string_pretty(&report)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let scratch = std::env::temp_dir().join(format!("hearth-bench-{}", std::process::id()));
    let result = measure(&base, &scratch).await;
    let _ = std::fs::remove_dir_all(&scratch);
    let report = result?;
    print_table(&report);
    write_json(json, &serde_json::to_string_pretty(&report)?)?;
    Ok(ExitCode::SUCCESS)
}

pub(super) fn write_json(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, text)?;
    eprintln!("figures written to {}", path.display());
    Ok(())
}

async fn measure(base: &EngineSettings, scratch: &Path) -> anyhow::Result<Report> {
    let settings = |dir: &str, prompt_cache: bool| EngineSettings {
        kv_dir: Some(scratch.join(dir)),
        prompt_cache,
        ..base.clone()
    };
    eprintln!("measuring prompt and decode speed ...");
    let engine = start(settings("speed", true)).await?;
    let info = engine.info().clone();
    let (prompt_tps, decode_tps) = speed(&engine).await?;

    eprintln!("multi-turn conversation with prompt reuse ...");
    let (with, replies) = conversation(&engine, "bench-reuse", QUESTIONS.len()).await?;
    stop(engine).await;
    eprintln!("multi-turn conversation without prompt reuse ...");
    let engine = start(settings("no-reuse", false)).await?;
    let (without, _) = conversation(&engine, "bench-no-reuse", QUESTIONS.len()).await?;
    stop(engine).await;

    eprintln!("restart: saved conversation against a cold start ...");
    let engine = start(settings("restart", true)).await?;
    let mut history = vec![ChatMessage::system(system_prompt())];
    ask(&engine, "bench-restart", &mut history, QUESTIONS[0]).await?;
    stop(engine).await;
    history.push(ChatMessage::user(QUESTIONS[1]));
    let engine = start(settings("restart", true)).await?;
    let after_restart = timed(&engine, "bench-restart", history.clone()).await?;
    stop(engine).await;
    let engine = start(settings("cold", true)).await?;
    let cold = timed(&engine, "bench-restart", history).await?;
    stop(engine).await;

    let multi_turn: Vec<TurnFigures> = with
        .iter()
        .zip(&without)
        .enumerate()
        .map(|(i, (w, wo))| TurnFigures {
            turn: i + 1,
            prompt_tokens: w.0.prompt_tokens,
            decoded_with_reuse: w.0.prompt_tokens - w.0.cached_tokens,
            ttft_ms_with_reuse: w.1,
            decoded_without_reuse: wo.0.prompt_tokens - wo.0.cached_tokens,
            ttft_ms_without_reuse: wo.1,
        })
        .collect();
    let last = multi_turn.last().expect("ten turns");
    Ok(Report {
        model: info.path.display().to_string(),
        threads: info.threads,
        context_per_conversation: info.n_ctx,
        prompt_tokens_per_s: prompt_tps,
        decode_tokens_per_s: decode_tps,
        turn10_ttft_ratio: last.ttft_ms_with_reuse / last.ttft_ms_without_reuse,
        multi_turn,
        restart: RestartFigures {
            prompt_tokens: after_restart.0.prompt_tokens,
            ttft_ms_after_restart: after_restart.1,
            decoded_after_restart: after_restart.0.prompt_tokens - after_restart.0.cached_tokens,
            ttft_ms_cold: cold.1,
            ratio: after_restart.1 / cold.1,
        },
        scenario: Scenario {
            system_prompt: system_prompt(),
            questions: QUESTIONS.iter().map(|q| q.to_string()).collect(),
            replies,
            reply_tokens: REPLY_TOKENS,
        },
    })
}

pub(super) async fn start(settings: EngineSettings) -> anyhow::Result<Engine> {
    Ok(tokio::task::spawn_blocking(move || Engine::start(settings, None)).await??)
}

pub(super) async fn stop(engine: Engine) {
    let _ = tokio::task::spawn_blocking(move || engine.shutdown()).await;
}

/// Median prompt and decode speeds, measured like llama-bench's pp512 and
/// tg128: reading a ~512-token prompt, and generating 128 tokens after a
/// short one. Each run is a new conversation, so nothing is cached.
async fn speed(engine: &Engine) -> anyhow::Result<(f64, f64)> {
    let guidance: String = system_prompt().chars().take(2200).collect();
    let mut prompt = Vec::new();
    let mut decode = Vec::new();
    for run in 0..SPEED_RUNS {
        let long = vec![
            ChatMessage::system(format!("Run {run}.\n{guidance}")),
            ChatMessage::user("Say yes."),
        ];
        let reply = greedy(engine, &format!("pp-{run}"), long, 1).await?;
        let u = reply.usage;
        prompt.push(f64::from(u.prompt_tokens - u.cached_tokens) / (u.prompt_ms / 1e3));

        let short = vec![ChatMessage::user(format!(
            "Story {run}: write a long story about a lighthouse keeper and a storm."
        ))];
        let reply = greedy(engine, &format!("tg-{run}"), short, 128).await?;
        let u = reply.usage;
        decode.push(f64::from(u.completion_tokens) / (u.generation_ms / 1e3));
    }
    Ok((median(&mut prompt), median(&mut decode)))
}

async fn greedy(
    engine: &Engine,
    key: &str,
    messages: Vec<ChatMessage>,
    max_tokens: u32,
) -> anyhow::Result<ChatReply> {
    let request = ChatRequest::new(key, messages, SamplingParams::greedy(max_tokens));
    Ok(engine
        .submit(request, CancellationToken::new())
        .collect_with(|_| {})
        .await?)
}

/// Runs `turns` turns of the scenario; per turn the usage and the TTFT.
async fn conversation(
    engine: &Engine,
    key: &str,
    turns: usize,
) -> anyhow::Result<(Vec<(Usage, f64)>, Vec<String>)> {
    let mut history = vec![ChatMessage::system(system_prompt())];
    let mut out = Vec::new();
    for question in &QUESTIONS[..turns] {
        out.push(ask(engine, key, &mut history, question).await?);
    }
    let replies = history
        .iter()
        .filter(|m| m.role == crate::chat::Role::Assistant)
        .map(|m| m.content.clone())
        .collect();
    Ok((out, replies))
}

async fn ask(
    engine: &Engine,
    key: &str,
    history: &mut Vec<ChatMessage>,
    question: &str,
) -> anyhow::Result<(Usage, f64)> {
    history.push(ChatMessage::user(question));
    let (usage, ttft, text) = timed(engine, key, history.clone()).await?;
    history.push(ChatMessage::assistant(text));
    Ok((usage, ttft))
}

/// One greedy reply; returns its usage, the time from submission to the
/// first streamed text, and the text.
async fn timed(
    engine: &Engine,
    key: &str,
    messages: Vec<ChatMessage>,
) -> anyhow::Result<(Usage, f64, String)> {
    timed_reply(engine, key, messages, REPLY_TOKENS).await
}

/// [`timed`] with a reply of up to `max_tokens`.
pub(super) async fn timed_reply(
    engine: &Engine,
    key: &str,
    messages: Vec<ChatMessage>,
    max_tokens: u32,
) -> anyhow::Result<(Usage, f64, String)> {
    let request = ChatRequest::new(key, messages, SamplingParams::greedy(max_tokens));
    let started = Instant::now();
    let mut stream = engine.submit(request, CancellationToken::new());
    let mut ttft = None;
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        match event {
            StreamEvent::TextDelta(delta) => {
                ttft.get_or_insert_with(|| started.elapsed().as_secs_f64() * 1e3);
                text.push_str(&delta);
            }
            StreamEvent::Done { usage, .. } => {
                // A reply that ends at once has its first token at the end.
                let ttft = ttft.unwrap_or_else(|| started.elapsed().as_secs_f64() * 1e3);
                return Ok((usage, ttft, text));
            }
            StreamEvent::Error(e) => return Err(e.into()),
            _ => {}
        }
    }
    anyhow::bail!("the engine stopped mid-reply")
}

pub(super) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn print_table(r: &Report) {
    println!(
        "model: {} ({} threads, {} tokens per conversation)",
        r.model, r.threads, r.context_per_conversation
    );
    println!();
    println!("| measure | value |");
    println!("|---|---|");
    println!(
        "| prompt reading, tokens/s (median of {SPEED_RUNS}) | {:.0} |",
        r.prompt_tokens_per_s
    );
    println!(
        "| decoding, tokens/s (median of {SPEED_RUNS}) | {:.1} |",
        r.decode_tokens_per_s
    );
    println!(
        "| turn-10 TTFT, reuse / no reuse | {:.2} |",
        r.turn10_ttft_ratio
    );
    println!(
        "| first turn after restart, TTFT ms (saved / cold) | {:.0} / {:.0} = {:.2} |",
        r.restart.ttft_ms_after_restart, r.restart.ttft_ms_cold, r.restart.ratio
    );
    println!();
    println!(
        "| turn | prompt tokens | decoded (reuse) | TTFT ms (reuse) | decoded (no reuse) | TTFT ms (no reuse) |"
    );
    println!("|---|---|---|---|---|---|");
    for t in &r.multi_turn {
        println!(
            "| {} | {} | {} | {:.0} | {} | {:.0} |",
            t.turn,
            t.prompt_tokens,
            t.decoded_with_reuse,
            t.ttft_ms_with_reuse,
            t.decoded_without_reuse,
            t.ttft_ms_without_reuse
        );
    }
}
