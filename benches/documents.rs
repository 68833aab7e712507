//! What a document costs: a 100-page PDF read in the document sandbox
//! (poppler's `pdftotext` under hearth's OS sandbox, as the daemon runs
//! it), kept in `documents.sqlite3` (pieces and their FTS5 index), a
//! question's pieces found, and the first token of that question on
//! SmolLM2 with the pieces in the prompt. Round by round; medians printed.
//! Run: `cargo bench --bench documents` (needs `make test-documents` and
//! the test models); figures in the README and docs/DOCUMENTS.md.
#![allow(clippy::unwrap_used)] // a bench: an unwrap is the clearest failure

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use hearth::chat::{ChatMessage, ChatRequest, SamplingParams};
use hearth::documents::{Cage, CageLimits, DocumentStore, context};
use hearth::engine::Engine;
use hearth::sandbox::{Limits, Sandbox, SandboxChoice};
use tokio_util::sync::CancellationToken;

use common::documents::reader;

const ROUNDS: usize = 5;
const PAGES: usize = 100;
const QUESTION: &str = "What happens to late submissions?";
const LATE: &str = "Late submissions lose five points for each day past the deadline.";

fn main() {
    let rounds = if std::env::args().any(|a| a == "--bench") {
        ROUNDS
    } else {
        1
    };
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let sandbox = Sandbox::resolve(SandboxChoice::Auto, &work, false, Limits::default());
    let cage = Cage::new(
        work.clone(),
        PathBuf::from(env!("CARGO_BIN_EXE_hearth")),
        CageLimits::default(),
    );
    let pdf = reader(PAGES, 63, LATE);
    let engine = Engine::start(common::engine_settings(common::SMOLLM2), None).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut read, mut kept, mut found) = (Vec::new(), Vec::new(), Vec::new());
    let (mut first, mut bare) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let started = Instant::now();
        let extracted = rt
            .block_on(cage.read(&sandbox, &pdf, "reader.pdf"))
            .unwrap();
        read.push(started.elapsed().as_secs_f64());
        assert_eq!(extracted.pages.len(), PAGES);

        let store = Arc::new(
            DocumentStore::open(&dir.path().join(format!("documents-{round}.sqlite3"))).unwrap(),
        );
        let started = Instant::now();
        let (id, _) = store
            .add("me", "reader.pdf", "sent", &extracted, 1)
            .unwrap();
        kept.push(started.elapsed().as_secs_f64());

        let started = Instant::now();
        let pieces =
            context::for_turn(&store, &["me"], &[id], QUESTION, Default::default()).unwrap();
        found.push(started.elapsed().as_secs_f64());
        let block = context::block(&pieces, 6_000).unwrap();
        assert!(block.contains("page 63"), "{block}");

        // A new first line each round: no round finds the last one's
        // prompt in a cache, as a document just sent is in none.
        let prompt = format!(
            "Round {round}.\n{}\n\n{QUESTION}",
            hearth::security::fence::fence("documents", &block)
        );
        let timed = |key: String, text: String| {
            let request = ChatRequest::new(
                key,
                vec![ChatMessage::user(text)],
                SamplingParams::greedy(1),
            );
            let started = Instant::now();
            let reply = rt
                .block_on(
                    engine
                        .submit(request, CancellationToken::new())
                        .collect_with(|_| {}),
                )
                .unwrap();
            (started.elapsed().as_secs_f64(), reply)
        };
        // The same question without the document, first or second by turns.
        let alone = || {
            timed(
                format!("alone-{round}"),
                format!("Round {round}.\n{QUESTION}"),
            )
        };
        if round % 2 == 1 {
            bare.push(alone().0);
        }
        let (took, reply) = timed(format!("documents-{round}"), prompt);
        first.push(took);
        if round % 2 == 0 {
            bare.push(alone().0);
        }
        println!(
            "round {}: read {:.0} ms ({:.0} pages/s), kept {:.1} ms, pieces found {:.2} ms, first token {:.0} ms ({} prompt tokens, {} from a cache; without the document {:.0} ms)",
            round + 1,
            read[round] * 1e3,
            PAGES as f64 / read[round],
            kept[round] * 1e3,
            found[round] * 1e3,
            first[round] * 1e3,
            reply.usage.prompt_tokens,
            reply.usage.cached_tokens,
            bare[round] * 1e3
        );
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let r = median(&mut read);
    println!(
        "medians of {rounds} (contained by {:?}): a {PAGES}-page PDF read in {:.0} ms ({:.0} pages/s) and kept in {:.1} ms; its pieces for a question found in {:.2} ms; the question's first token {:.0} ms with them, {:.0} ms without",
        sandbox.containment(),
        r * 1e3,
        PAGES as f64 / r,
        median(&mut kept) * 1e3,
        median(&mut found) * 1e3,
        median(&mut first) * 1e3,
        median(&mut bare) * 1e3
    );
}
