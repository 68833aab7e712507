//! `hearth bench --memory`: memory by meaning, measured.
//!
//! - Retrieval: the paraphrase set in `benches/data/memory_paraphrases.json`
//!   (each question asks for one memory in other words; a distractor shares
//!   its words), recalled by words only and by words and meaning: top-1
//!   and mean reciprocal rank (over the first 10).
//! - Cost: milliseconds to embed a memory, the embedding model's resident
//!   memory, the database's bytes per memory with and without vectors.
//! - Scale: recall latency with 10,000 memories in one scope.
//! - The chat beside it: decode speed with memory off and with memory on
//!   (each turn's question embedded, the indexer working through a backlog
//!   whenever the engine is idle), interleaved round by round
//!   ([`super::bench_memory_decode`]).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::memory::{Category, MemoryStore, meaning};

const SET: &str = include_str!("../../benches/data/memory_paraphrases.json");
const SCOPE: &str = "bench";
/// Memories in the scale test's scope.
pub(super) const MANY: usize = 10_000;
/// Ranks looked at for the reciprocal rank.
const DEPTH: usize = 10;

#[derive(Deserialize)]
struct Set {
    pairs: Vec<Pair>,
}

#[derive(Deserialize)]
struct Pair {
    memory: String,
    question: String,
    distractor: String,
}

/// Where one way of recalling put the right memories.
#[derive(Debug, Default, Serialize)]
pub struct Quality {
    pub questions: usize,
    pub first: usize,
    pub found: usize,
    pub mrr: f64,
}

#[derive(Debug, Serialize)]
struct Report {
    model: String,
    dimensions: usize,
    by_words: Quality,
    hybrid: Quality,
    embed_ms_per_memory: f64,
    model_resident_mb: f64,
    db_bytes_per_memory_without_vectors: f64,
    db_bytes_per_memory_with_vectors: f64,
    recall_ms_at_10000_median: f64,
    recall_ms_at_10000_p95: f64,
    decode: super::bench_memory_decode::Decode,
}

pub async fn run(config: &Config, rounds: usize, json: &Path) -> anyhow::Result<ExitCode> {
    let before = resident_mb();
    let c = config.clone();
    let Some(model) = tokio::task::spawn_blocking(move || meaning::start(&c)).await?? else {
        anyhow::bail!(
            "no embedding model to measure; fix: set [memory] embedding_model, or fetch the test model with `make test-embedding`"
        );
    };
    let model_resident_mb = resident_mb() - before;
    let info = model.info().clone();
    eprintln!(
        "embedding model {} ({} dimensions)",
        info.name, info.dimensions
    );
    let scratch = Scratch::new("hearth-bench-memory")?;
    let m = model.clone();
    let dir = scratch.0.clone();
    let (by_words, hybrid, embed_ms) =
        tokio::task::spawn_blocking(move || retrieval(&dir, m)).await??;
    print_quality("words only", &by_words);
    print_quality("words and meaning", &hybrid);
    let m = model.clone();
    let dir = scratch.0.clone();
    let scale = tokio::task::spawn_blocking(move || scale(&dir, m)).await??;
    println!(
        "cost: {embed_ms:.1} ms to embed a memory; the model takes {model_resident_mb:.0} MB; {:.0} bytes a memory without vectors, {:.0} with",
        scale.bytes_without, scale.bytes_with
    );
    println!(
        "recall among {MANY} memories: {:.1} ms median, {:.1} ms p95",
        scale.median_ms, scale.p95_ms
    );
    let decode = super::bench_memory_decode::run(config, model.clone(), rounds).await?;
    let report = Report {
        model: info.name,
        dimensions: info.dimensions,
        by_words,
        hybrid,
        embed_ms_per_memory: embed_ms,
        model_resident_mb,
        db_bytes_per_memory_without_vectors: scale.bytes_without,
        db_bytes_per_memory_with_vectors: scale.bytes_with,
        recall_ms_at_10000_median: scale.median_ms,
        recall_ms_at_10000_p95: scale.p95_ms,
        decode,
    };
    super::bench::write_json(json, &serde_json::to_string_pretty(&report)?)?;
    Ok(ExitCode::SUCCESS)
}

fn print_quality(way: &str, q: &Quality) {
    println!(
        "{way:<18} right memory first for {}/{} ({:.0} %), found in the first {DEPTH} for {}, MRR {:.2}",
        q.first,
        q.questions,
        100.0 * q.first as f64 / q.questions.max(1) as f64,
        q.found,
        q.mrr
    );
}

/// The paraphrase set recalled both ways; and the milliseconds a memory
/// took to embed.
fn retrieval(
    dir: &Path,
    model: Arc<crate::engine::EmbeddingModel>,
) -> anyhow::Result<(Quality, Quality, f64)> {
    let set: Set = serde_json::from_str(SET)?;
    let path = dir.join("paraphrases.sqlite3");
    let words = MemoryStore::open(&path)?;
    for (i, p) in set.pairs.iter().enumerate() {
        words.store(SCOPE, &format!("right-{i}"), &p.memory, Category::Core)?;
        words.store(
            SCOPE,
            &format!("distractor-{i}"),
            &p.distractor,
            Category::Core,
        )?;
    }
    let hybrid = MemoryStore::open(&path)?.with_meaning(model);
    let started = Instant::now();
    let embedded = hybrid.embed_missing(None, usize::MAX)?;
    let embed_ms = started.elapsed().as_secs_f64() * 1e3 / embedded.max(1) as f64;
    let score = |store: &MemoryStore| -> anyhow::Result<Quality> {
        let mut q = Quality {
            questions: set.pairs.len(),
            ..Quality::default()
        };
        for (i, p) in set.pairs.iter().enumerate() {
            let right = format!("right-{i}");
            let found = store.recall(&p.question, DEPTH, SCOPE)?;
            if let Some(rank) = found.iter().position(|r| r.entry.key == right) {
                q.found += 1;
                q.first += usize::from(rank == 0);
                q.mrr += 1.0 / (rank + 1) as f64;
            }
        }
        q.mrr /= q.questions.max(1) as f64;
        Ok(q)
    };
    Ok((score(&words)?, score(&hybrid)?, embed_ms))
}

struct Scale {
    bytes_without: f64,
    bytes_with: f64,
    median_ms: f64,
    p95_ms: f64,
}

/// [`MANY`] memories in one scope: their bytes before and after their
/// vectors, and how long recall takes among them.
fn scale(dir: &Path, model: Arc<crate::engine::EmbeddingModel>) -> anyhow::Result<Scale> {
    let path = dir.join("many.sqlite3");
    let store = MemoryStore::open(&path)?;
    for i in 0..MANY {
        store.store("many", &format!("m{i}"), &sentence(i), Category::Core)?;
    }
    let bytes = |p: &Path| -> anyhow::Result<f64> {
        let conn = rusqlite::Connection::open(p)?;
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); VACUUM;")?;
        Ok(std::fs::metadata(p)?.len() as f64 / MANY as f64)
    };
    let bytes_without = bytes(&path)?;
    let store = store.with_meaning(model);
    let started = Instant::now();
    store.embed_missing(None, usize::MAX)?;
    eprintln!(
        "embedded {MANY} memories in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let bytes_with = bytes(&path)?;
    let mut times = Vec::new();
    for q in QUESTIONS.iter().cycle().take(40) {
        let started = Instant::now();
        store.recall(q, 5, "many")?;
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let median_ms = super::bench::median(&mut times);
    let p95_ms = times[times.len() * 95 / 100];
    Ok(Scale {
        bytes_without,
        bytes_with,
        median_ms,
        p95_ms,
    })
}

const QUESTIONS: [&str; 4] = [
    "when is the meeting with the plumber?",
    "what did I say about my sister's garden?",
    "which medicine do I take at night?",
    "where do I keep the spare charger?",
];

/// The `i`th of [`MANY`] plausible, different memories.
fn sentence(i: usize) -> String {
    const WHO: [&str; 10] = [
        "my sister",
        "the plumber",
        "my neighbour",
        "the dentist",
        "my boss",
        "our cat",
        "the landlord",
        "my friend Ana",
        "the school",
        "my doctor",
    ];
    const WHAT: [&str; 10] = [
        "is coming on",
        "asked me to call on",
        "moved the appointment to",
        "sent the bill on",
        "needs the keys back by",
        "has a birthday on",
        "will be away until",
        "wants an answer by",
        "changed the plan for",
        "reminded me about",
    ];
    const WHEN: [&str; 10] = [
        "Monday",
        "Tuesday morning",
        "the 3rd",
        "next Friday",
        "the weekend",
        "1 May",
        "the end of the month",
        "Thursday at 6",
        "Christmas",
        "the 21st",
    ];
    const WHY: [&str; 10] = [
        "about the garden",
        "because of the leak",
        "for the school trip",
        "about the invoice",
        "for the holiday",
        "about the car",
        "for the party",
        "about the rent",
        "because of the exam",
        "for the checkup",
    ];
    format!(
        "{} {} {} {} (note {i})",
        WHO[i % 10],
        WHAT[(i / 10) % 10],
        WHEN[(i / 100) % 10],
        WHY[(i / 1000) % 10]
    )
}

/// A private folder of this process's, removed when dropped.
pub(super) struct Scratch(pub std::path::PathBuf);

impl Scratch {
    pub(super) fn new(name: &str) -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        crate::file_modes::make_private_dir(&dir)?;
        Ok(Self(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// This process's resident memory, in MB (0 where /proc cannot say).
pub(super) fn resident_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}
