//! Prompt and decode speed of the local engine on the default model.
//!
//! `make bench` (or `cargo bench --bench generate`) loads the model once and
//! measures, over several runs, how fast a long prompt is read (tokens/s)
//! and how fast a reply is generated (tokens/s), plus the time to first token
//! of a follow-up turn that reuses the cached prompt. Medians are printed as
//! a table. Run under `cargo test` it only checks that it builds.

use std::time::Instant;

use hearth::config::{Config, Environment};
use hearth::engine::{Engine, EngineSettings};
use hearth::providers::{ChatMessage, ChatRequest, SamplingParams};
use tokio_util::sync::CancellationToken;

const RUNS: usize = 5;

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("generate bench: skipped (run it with `make bench`)");
        return;
    }
    let config = Config::defaults(&Environment::from_process()).expect("default config");
    let settings = EngineSettings::from_config(&config).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let started = Instant::now();
    let engine = Engine::start(settings, None).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let load_s = started.elapsed().as_secs_f64();
    let info = engine.info().clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();

    // A long system prompt (~600 tokens) so prompt reading is measurable.
    let system = "You are a helpful assistant running locally. ".repeat(60);
    let mut prompt_rates = Vec::new();
    let mut decode_rates = Vec::new();
    let mut followup_ttft = Vec::new();
    let mut prompt_tokens = 0;
    for run in 0..RUNS {
        // A different first user message each run defeats the prompt cache.
        let first = vec![
            ChatMessage::system(format!("Run {run}. {system}")),
            ChatMessage::user("Write a short story about a lighthouse keeper."),
        ];
        let (usage, reply) = runtime.block_on(ask(&engine, first.clone(), 128));
        prompt_tokens = usage.prompt_tokens;
        prompt_rates.push(usage.prompt_tokens as f64 / (usage.prompt_ms / 1e3));
        decode_rates.push(usage.completion_tokens as f64 / (usage.generation_ms / 1e3));
        let mut second = first;
        second.push(ChatMessage::assistant(reply));
        second.push(ChatMessage::user("Give it a title."));
        let (usage, _) = runtime.block_on(ask(&engine, second, 1));
        followup_ttft.push(usage.prompt_ms);
    }
    println!(
        "model: {} ({} threads, context {})",
        info.path.display(),
        info.threads,
        info.n_ctx
    );
    println!("load: {load_s:.2} s");
    println!("| measure | median | runs |");
    println!("|---|---|---|");
    println!(
        "| prompt ({prompt_tokens} tokens), tokens/s | {:.0} | {RUNS} |",
        median(&mut prompt_rates)
    );
    println!(
        "| decode (up to 128 tokens), tokens/s | {:.1} | {RUNS} |",
        median(&mut decode_rates)
    );
    println!(
        "| follow-up turn, time to first token, ms | {:.0} | {RUNS} |",
        median(&mut followup_ttft)
    );
}

async fn ask(
    engine: &Engine,
    messages: Vec<ChatMessage>,
    max_tokens: u32,
) -> (hearth::providers::Usage, String) {
    let request = ChatRequest::new("bench", messages, SamplingParams::greedy(max_tokens));
    let reply = engine
        .submit(request, CancellationToken::new())
        .collect_with(|_| {})
        .await
        .expect("generation");
    (reply.usage, reply.text)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
