//! Gemma 3 (sliding-window attention) on the real 270M model: a history
//! rewritten far behind the window (512 positions) keeps its prefix, and
//! the next turn reads like a fresh one — with the full-size window cache,
//! and with only the window kept, through a saved checkpoint.
//!
//! A sliding-window cache the size of the window reuses the cells that fall
//! out of it, so a sequence cut back that far has lost the window before
//! its new end. By default the context keeps a full-size cache for those
//! layers (llama.cpp's default), so the prefix stays whole. With
//! `swa_full = false` the engine saves the window every 256 prompt tokens
//! and goes back to the latest one before the rewrite; with no checkpoint
//! it reads the prompt again rather than answer from what is left.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;
use crate::common::engine_lock as lock;

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

/// Only the window is kept, with `checkpoints` saved windows per
/// conversation.
fn window_only(kv_dir: &std::path::Path, checkpoints: u32) -> EngineSettings {
    EngineSettings {
        swa_full: false,
        swa_checkpoints: checkpoints,
        mmproj: None,
        image_limits: Default::default(),
        ..settings(kv_dir, true)
    }
}

/// The conversation and its rewrite: the second question rewritten from
/// its start, about 600 tokens before the end of the cache.
fn scenario() -> (Vec<ChatMessage>, Vec<ChatMessage>) {
    let first = vec![
        ChatMessage::user(format!("{} Which item weighs most?", facts("apples", 60))),
        ChatMessage::assistant("Item 30."),
        ChatMessage::user(format!("{} Which item is cheapest?", facts("pears", 25))),
    ];
    let mut rewritten = first.clone();
    rewritten[2] = ChatMessage::user(format!("{} Which item is cheapest?", facts("plums", 25)));
    (first, rewritten)
}

/// The first two words: prompts read in other batches round differently,
/// and this model's greedy text soon drifts apart; the answer must not.
fn answer(text: &str) -> String {
    text.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
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
    let _guard = lock();
    let dir = tempfile::tempdir().unwrap();
    let (first, rewritten) = scenario();

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
    assert_eq!(
        answer(&turn2.text),
        answer(&control.text),
        "the rewritten turn answers as a fresh one: {:?} / {:?}",
        turn2.text,
        control.text
    );
}

#[test]
fn with_only_the_window_kept_a_checkpoint_brings_back_the_prefix() {
    let _guard = lock();
    let dir = tempfile::tempdir().unwrap();
    let (first, rewritten) = scenario();
    let fresh = Engine::start(settings(&dir.path().join("fresh"), false), None).unwrap();
    let control = ask(&fresh, &rewritten);
    fresh.shutdown();

    // Checkpoints on: the next turn goes back to the latest saved window
    // before the rewrite and reads only what follows it.
    let engine = Engine::start(window_only(&dir.path().join("a"), 8), None).unwrap();
    let turn1 = ask(&engine, &first);
    let turn2 = ask(&engine, &rewritten);
    engine.shutdown();
    let (u1, u2) = (&turn1.usage, &turn2.usage);
    assert!(
        u1.prompt_tokens + u1.completion_tokens > u2.cached_tokens + 512,
        "the turn went back behind the window: {u1:?} {u2:?}"
    );
    let decoded = u2.prompt_tokens - u2.cached_tokens;
    assert!(
        decoded * 2 < u2.prompt_tokens,
        "fewer than half of the prompt's tokens decoded: {u2:?}"
    );
    assert_eq!(
        answer(&turn2.text),
        answer(&control.text),
        "the restored turn answers as a fresh one: {:?} / {:?}",
        turn2.text,
        control.text
    );

    // Control: without checkpoints the window before the rewrite is gone,
    // and the whole prompt is read again (not answered from what is left).
    let engine = Engine::start(window_only(&dir.path().join("b"), 0), None).unwrap();
    ask(&engine, &first);
    let reread = ask(&engine, &rewritten);
    engine.shutdown();
    assert_eq!(reread.usage.cached_tokens, 0, "{:?}", reread.usage);
    assert_eq!(answer(&reread.text), answer(&control.text));
}
