//! Gemma 3 (sliding-window attention) on the real 270M model: a history
//! rewritten far behind the window (512 positions) keeps its prefix, and
//! the next turn reads like a fresh one.
//!
//! A sliding-window cache the size of the window reuses the cells that fall
//! out of it, so a sequence cut back that far has lost the window before
//! its new end. The engine's context keeps a full-size cache for those
//! layers (llama.cpp's default), so the prefix stays whole; were the cells
//! gone, the engine would read the prompt again rather than answer from
//! what is left (`generate.rs`).

mod common;

use hearth::chat::{ChatMessage, ChatReply, ChatRequest, SamplingParams};
use hearth::engine::{Engine, EngineSettings};
use tokio_util::sync::CancellationToken;

fn settings(kv_dir: &std::path::Path, prompt_cache: bool) -> EngineSettings {
    EngineSettings {
        chat_template: Some("gemma".into()),
        context_size: 4096,
        kv_dir: Some(kv_dir.to_path_buf()),
        prompt_cache,
        ..common::engine_settings(common::GEMMA3)
    }
}

/// A long, varied text: `n` numbered facts.
fn facts(topic: &str, n: usize) -> String {
    (1..=n)
        .map(|i| {
            format!(
                "Fact {i} about {topic}: item {i} weighs {} grams and costs {} euros.",
                i * 37 % 101,
                i * 13 % 29
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn ask(engine: &Engine, messages: &[ChatMessage]) -> ChatReply {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let request = ChatRequest::new("swa", messages.to_vec(), SamplingParams::greedy(24));
    rt.block_on(
        engine
            .submit(request, CancellationToken::new())
            .collect_with(|_| {}),
    )
    .expect("reply")
}

#[test]
fn a_rewrite_behind_the_window_keeps_its_prefix_and_reads_like_a_fresh_turn() {
    let dir = tempfile::tempdir().unwrap();
    let first = vec![
        ChatMessage::user(format!("{} Which item weighs most?", facts("apples", 60))),
        ChatMessage::assistant("Item 30."),
        ChatMessage::user(format!("{} Which item is cheapest?", facts("pears", 25))),
    ];
    // The same conversation with its second question rewritten from the
    // start: the common prefix ends about 600 tokens before the cache does.
    let mut rewritten = first.clone();
    rewritten[2] = ChatMessage::user(format!("{} Which item is cheapest?", facts("plums", 25)));

    let cached = Engine::start(settings(&dir.path().join("a"), true), None).unwrap();
    let turn1 = ask(&cached, &first);
    let turn2 = ask(&cached, &rewritten);
    cached.shutdown();
    let fresh = Engine::start(settings(&dir.path().join("b"), false), None).unwrap();
    let control = ask(&fresh, &rewritten);
    fresh.shutdown();

    let (u1, u2) = (&turn1.usage, &turn2.usage);
    let behind = u1.prompt_tokens + u1.completion_tokens - u2.cached_tokens;
    assert!(
        behind > 512 + 50,
        "the rewrite is behind the window: {u1:?} {u2:?}"
    );
    let decoded = u2.prompt_tokens - u2.cached_tokens;
    assert!(decoded * 2 < u2.prompt_tokens, "prefix kept: {u2:?}");
    // Prompts read in other batches round differently, and this model's
    // greedy text soon drifts apart; the answer itself must not.
    let answer = |t: &str| t.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
    assert_eq!(
        answer(&turn2.text),
        answer(&control.text),
        "the rewritten turn answers as a fresh one: {:?} / {:?}",
        turn2.text,
        control.text
    );
}
