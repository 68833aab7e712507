//! The chat beside memory by meaning: decode speed with memory off and
//! with memory on, interleaved round by round (the order alternating), on
//! the configured chat model. Memory on means what a turn costs with it:
//! the question embedded and recalled before the reply, and the indexer
//! working through a backlog of unembedded memories whenever the engine is
//! idle (it waits while a reply decodes).

use std::sync::Arc;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::chat::{ChatMessage, ChatRequest, SamplingParams};
use crate::config::Config;
use crate::engine::{EmbeddingModel, Engine, EngineSettings, Speculation};
use crate::memory::{Category, MemoryStore, indexer};

/// Tokens per measured reply.
const REPLY_TOKENS: u32 = 96;
/// Unembedded memories added before each "on" round.
const BACKLOG: usize = 200;

#[derive(Debug, Default, Serialize)]
pub struct Decode {
    pub model: String,
    pub rounds: usize,
    /// Tokens per second, one figure per round.
    pub off: Vec<f64>,
    pub on: Vec<f64>,
    pub off_median: f64,
    pub on_median: f64,
}

pub async fn run(
    config: &Config,
    model: Arc<EmbeddingModel>,
    rounds: usize,
) -> anyhow::Result<Decode> {
    let scratch = super::bench_memory::Scratch::new("hearth-bench-memory-decode")?;
    let engine = super::bench::start(EngineSettings {
        speculation: Speculation::Off,
        kv_dir: Some(scratch.0.join("kv")),
        ..crate::engine_setup::engine_settings(config)?
    })
    .await?;
    let store = Arc::new(MemoryStore::open(&scratch.0.join("memory.sqlite3"))?.with_meaning(model));
    let waiting = engine.waiting();
    let stop = CancellationToken::new();
    tokio::spawn(indexer::run(
        store.clone(),
        Arc::new(move || waiting.idle()),
        stop.clone(),
    ));
    let mut d = Decode {
        model: engine.info().path.display().to_string(),
        rounds,
        ..Decode::default()
    };
    for round in 0..rounds {
        let on_first = round % 2 == 1;
        for on in [on_first, !on_first] {
            let speed = turn(&engine, &store, on, round).await?;
            if on {
                d.on.push(speed);
            } else {
                d.off.push(speed);
            }
        }
        eprintln!(
            "round {}: memory off {:.1} tokens/s, on {:.1}",
            round + 1,
            d.off[round],
            d.on[round]
        );
    }
    stop.cancel();
    super::bench::stop(engine).await;
    d.off_median = super::bench::median(&mut d.off.clone());
    d.on_median = super::bench::median(&mut d.on.clone());
    println!(
        "decode beside memory ({} rounds, interleaved): off {:.1} tokens/s, on {:.1} (median)",
        rounds, d.off_median, d.on_median
    );
    Ok(d)
}

/// One reply's decode speed; with memory on, its question recalled first
/// and a backlog left for the indexer.
async fn turn(
    engine: &Engine,
    store: &Arc<MemoryStore>,
    on: bool,
    round: usize,
) -> anyhow::Result<f64> {
    let question = format!("Story {round}: write a long story about a lighthouse keeper.");
    let mut messages = Vec::new();
    if on {
        let s = store.clone();
        let q = question.clone();
        let context = tokio::task::spawn_blocking(move || {
            for i in 0..BACKLOG {
                let text = format!("round {round} note {i}: the lighthouse lamp was checked");
                s.store("bench", &format!("r{round}-{i}"), &text, Category::Core)?;
            }
            s.recall(&q, 4, "bench")
        })
        .await??;
        let lines: Vec<String> = context.iter().map(|r| r.entry.content.clone()).collect();
        messages.push(ChatMessage::system(format!(
            "Remembered:\n{}",
            lines.join("\n")
        )));
    }
    messages.push(ChatMessage::user(question));
    let key = format!("{}-{round}", if on { "on" } else { "off" });
    let request = ChatRequest::new(key, messages, SamplingParams::greedy(REPLY_TOKENS));
    let reply = engine
        .submit(request, CancellationToken::new())
        .collect_with(|_| {})
        .await?;
    let u = reply.usage;
    Ok(f64::from(u.completion_tokens) / (u.generation_ms / 1e3))
}
