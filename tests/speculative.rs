//! Speculative decoding on the real SmolLM2 (and Gemma 3 for a window
//! model): drafts are checked by the model's own picks, kept only where
//! they match, and what is rejected leaves the KV cache.
//!
//! Greedy replies with drafts are compared with replies without by the
//! characters they share: a draft puts several tokens of one sequence in a
//! batch, and llama.cpp's CPU kernels round such a batch otherwise than a
//! single token, so a near tie may go the other way after a while. (The
//! same happens when every draft is rejected, so it is the batch shape,
//! not the keeping of drafts.)
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;
use crate::common::engine_lock as lock;

use hearth::chat::{ChatMessage, ChatRequest, FinishReason, SamplingParams, StreamEvent, Usage};
use hearth::engine::{Engine, EngineError, EngineSettings, Speculation};
use tokio_util::sync::CancellationToken;

const FILE: &str = "[server]\nhost = \"0.0.0.0\"\nport = 8080\nworkers = 4\ntimeout_seconds = 30\n\n[database]\nurl = \"postgres://app@localhost/app\"\npool_size = 10\n\n[logging]\nlevel = \"info\"\nformat = \"json\"\n";

fn settings(speculation: Speculation) -> EngineSettings {
    EngineSettings {
        speculation,
        ..common::engine_settings(common::SMOLLM2)
    }
}

fn quoting() -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("You are a helpful assistant."),
        ChatMessage::user(format!(
            "The `read_file` tool returned:\n\n{FILE}\nCopy the file exactly, then say which port it uses."
        )),
    ]
}

/// A greedy reply's text, usage and finish.
fn reply(engine: &Engine, key: &str, messages: Vec<ChatMessage>, tokens: u32) -> (String, Usage) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let request = ChatRequest::new(key, messages, SamplingParams::greedy(tokens));
    let mut stream = engine.submit(request, CancellationToken::new());
    let mut text = String::new();
    rt.block_on(async {
        loop {
            match stream.next().await.expect("the stream ends with Done") {
                StreamEvent::TextDelta(t) => text.push_str(&t),
                StreamEvent::Done { usage, finish } => {
                    assert!(
                        matches!(
                            finish,
                            FinishReason::Stop | FinishReason::Length | FinishReason::Repetition
                        ),
                        "{finish:?}"
                    );
                    return (text, usage);
                }
                StreamEvent::Error(e) => panic!("the reply failed: {e}\n{text}"),
                _ => {}
            }
        }
    })
}

fn shared(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

#[test]
fn a_quoted_file_is_drafted_from_the_prompt_and_the_reply_is_the_models() {
    let _guard = lock();
    let plain = {
        let engine = Engine::start(settings(Speculation::Off), None).unwrap();
        reply(&engine, "quote", quoting(), 96)
    };
    let drafted = {
        let engine = Engine::start(settings(Speculation::Lookup), None).unwrap();
        assert!(
            engine.info().drafting.starts_with("prompt lookup"),
            "{}",
            engine.info().drafting
        );
        reply(&engine, "quote", quoting(), 96)
    };
    let (p, d) = (&plain.1, &drafted.1);
    eprintln!(
        "drafted {} accepted {}, {} of {} characters shared\nplain: {}\ndrafted: {}",
        d.drafted_tokens,
        d.accepted_tokens,
        shared(&plain.0, &drafted.0),
        plain.0.chars().count(),
        plain.0,
        drafted.0
    );
    // Positive control: without drafts, nothing is drafted.
    assert_eq!((p.drafted_tokens, p.accepted_tokens), (0, 0));
    assert!(
        d.accepted_tokens > 0,
        "the copy of the file is drafted and kept: {d:?}"
    );
    assert!(d.accepted_tokens <= d.drafted_tokens);
    assert!(
        shared(&plain.0, &drafted.0) >= 40,
        "the reply is the model's own, not the draft's:\n{}\n---\n{}",
        plain.0,
        drafted.0
    );
}

#[test]
fn rejected_drafts_leave_nothing_behind_over_several_turns() {
    let _guard = lock();
    let engine = Engine::start(settings(Speculation::Lookup), None).unwrap();
    let mut messages = quoting();
    let (mut drafted, mut accepted) = (0, 0);
    let questions = [
        "Now copy only the [database] section.",
        "Which settings did you leave out? List them.",
        "Copy the [logging] section again.",
    ];
    let mut previous_prompt = 0;
    for (turn, question) in std::iter::once(None)
        .chain(questions.iter().map(Some))
        .enumerate()
    {
        if let Some(q) = question {
            messages.push(ChatMessage::user(*q));
        }
        let (text, usage) = reply(&engine, "turns", messages.clone(), 64);
        eprintln!("turn {turn}: {usage:?}\n{text}");
        assert!(!text.trim().is_empty(), "turn {turn} says something");
        if turn > 0 {
            // The sequence held exactly the last turn: its whole prompt is
            // found again (a rejected draft left behind would be attended
            // to, and hearth checks the KV cache ends where the tokens do).
            assert!(
                usage.cached_tokens as usize > previous_prompt,
                "turn {turn} reuses the previous turn: {usage:?}"
            );
        }
        previous_prompt = usage.prompt_tokens as usize;
        drafted += usage.drafted_tokens;
        accepted += usage.accepted_tokens;
        messages.push(ChatMessage::assistant(text));
    }
    eprintln!("over four turns: drafted {drafted}, accepted {accepted}");
    assert!(accepted > 0, "some drafts were kept");
    assert!(drafted > accepted, "some drafts were rejected and dropped");
}

#[test]
fn a_draft_model_with_the_same_vocabulary_drafts_and_another_is_refused() {
    let _guard = lock();
    // The model as its own draft: plumbing, not speed (the same cost).
    let same = Speculation::Model(common::model(common::SMOLLM2));
    let engine = Engine::start(settings(same), None).unwrap();
    assert!(
        engine.info().drafting.starts_with("draft model"),
        "{}",
        engine.info().drafting
    );
    let (text, usage) = reply(&engine, "draft", quoting(), 48);
    eprintln!("draft model: {usage:?}\n{text}");
    assert!(!text.trim().is_empty());
    assert!(
        usage.accepted_tokens * 10 >= usage.drafted_tokens * 7 && usage.drafted_tokens > 0,
        "a model agrees with itself on most drafts: {usage:?}"
    );
    drop(engine);

    // Gemma's vocabulary is not SmolLM2's: refused at start, by name.
    let other = Speculation::Model(common::model(common::GEMMA3));
    let Err(err) = Engine::start(settings(other), None) else {
        panic!("another vocabulary is refused")
    };
    assert!(matches!(err, EngineError::DraftModel { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("vocabulary") && text.contains("draft_model"),
        "{text}"
    );

    // Not a model at all.
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.gguf");
    std::fs::write(&junk, b"GGUF but not really").unwrap();
    let Err(err) = Engine::start(settings(Speculation::Model(junk)), None) else {
        panic!("a file that is no model is refused")
    };
    assert!(matches!(err, EngineError::DraftModel { .. }), "{err:?}");
}

#[test]
fn a_window_model_drafts_only_when_it_keeps_every_position() {
    let _guard = lock();
    let gemma = |swa_full: bool| EngineSettings {
        swa_full,
        // A base model: it has no chat template of its own.
        chat_template: Some("gemma".into()),
        speculation: Speculation::Lookup,
        ..common::engine_settings(common::GEMMA3)
    };
    let engine = Engine::start(gemma(false), None).unwrap();
    assert_eq!(
        engine.info().drafting,
        "off",
        "a window-size cache cannot drop drafts"
    );
    drop(engine);
    let engine = Engine::start(gemma(true), None).unwrap();
    assert!(engine.info().drafting.starts_with("prompt lookup"));
    let (text, usage) = reply(&engine, "gemma", quoting(), 48);
    eprintln!("gemma: {usage:?}\n{text}");
    assert!(usage.completion_tokens > 0);
}
