//! Continuous batching on the real SmolLM2 model: conversations submitted
//! together are decoded together, and each gets exactly the reply it gets
//! alone; cancelling one leaves the others' replies as they were.
//!
//! llama.cpp allows one backend per process, so these tests take turns
//! through a lock.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;
use crate::common::engine_lock as lock;

use std::time::Instant;

use hearth::chat::{
    ChatMessage, ChatRequest, ChatStream, FinishReason, Priority, SamplingParams, StreamEvent,
};
use hearth::engine::{Engine, EngineSettings};
use tokio_util::sync::CancellationToken;

const QUESTIONS: [&str; 4] = [
    "Write a short poem about the sea.",
    "Explain in a few sentences why the sky is blue.",
    "List five fruits and say one thing about each.",
    "Tell me a short story about a dragon who learns to cook.",
];

fn engine(slots: u32) -> Engine {
    // Replies decoded together are compared token for token with replies
    // decoded alone. Conversations that copy each other's prompts read them
    // in other batches, which changes rounding: that is `[engine]
    // share_prompts`, tested on its own in tests/engine.rs.
    let settings = EngineSettings {
        slots,
        share_prompts: false,
        ..common::engine_settings(common::SMOLLM2)
    };
    Engine::start(settings, None).expect("engine starts")
}

fn request(key: &str, question: &str, max_tokens: u32) -> ChatRequest {
    ChatRequest::new(
        key,
        vec![
            ChatMessage::system("You are a helpful assistant."),
            ChatMessage::user(question),
        ],
        SamplingParams::greedy(max_tokens),
    )
}

/// A reply as its caller saw it: the text, how it ended, and when its
/// first text and its end arrived.
#[derive(Debug)]
struct Seen {
    text: String,
    finish: FinishReason,
    first: Option<Instant>,
    end: Instant,
}

/// Reads a stream to its end; `on_text` is told how many deltas came so far.
async fn watch(mut stream: ChatStream, mut on_text: impl FnMut(usize)) -> Seen {
    let (mut text, mut first, mut deltas) = (String::new(), None, 0);
    loop {
        match stream.next().await.expect("the stream ends with Done") {
            StreamEvent::TextDelta(t) => {
                first.get_or_insert_with(Instant::now);
                text.push_str(&t);
                deltas += 1;
                on_text(deltas);
            }
            StreamEvent::Done { finish, .. } => {
                return Seen {
                    text,
                    finish,
                    first,
                    end: Instant::now(),
                };
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Each question alone, one after the other.
fn serial(engine: &Engine, rt: &tokio::runtime::Runtime, max_tokens: u32) -> Vec<Seen> {
    QUESTIONS
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let stream = engine.submit(
                request(&format!("alone-{i}"), q, max_tokens),
                CancellationToken::new(),
            );
            rt.block_on(watch(stream, |_| {}))
        })
        .collect()
}

#[test]
fn four_conversations_together_get_the_replies_they_get_alone() {
    let _guard = lock();
    let engine = engine(4);
    let rt = runtime();
    let alone = serial(&engine, &rt, 48);

    let streams: Vec<ChatStream> = QUESTIONS
        .iter()
        .enumerate()
        .map(|(i, q)| {
            engine.submit(
                request(&format!("together-{i}"), q, 48),
                CancellationToken::new(),
            )
        })
        .collect();
    let together: Vec<Seen> = rt.block_on(async {
        let tasks: Vec<_> = streams
            .into_iter()
            .map(|s| tokio::spawn(watch(s, |_| {})))
            .collect();
        let mut seen = Vec::new();
        for t in tasks {
            seen.push(t.await.unwrap());
        }
        seen
    });

    for (i, (a, t)) in alone.iter().zip(&together).enumerate() {
        assert!(!a.text.trim().is_empty(), "reply {i} says something");
        assert_eq!(t.text, a.text, "reply {i} is the one it gets alone");
        assert_eq!(t.finish, a.finish);
    }
    // Decoded together, not one after the other: every reply had started
    // before any had ended.
    let first_end = together.iter().map(|s| s.end).min().unwrap();
    for (i, s) in together.iter().enumerate() {
        assert!(
            s.first.expect("text came") < first_end,
            "reply {i} started only after another had ended"
        );
    }
}

#[test]
fn cancelling_one_reply_leaves_the_others_as_they_were() {
    let _guard = lock();
    let engine = engine(4);
    let rt = runtime();
    let alone = serial(&engine, &rt, 64);

    let cancel = CancellationToken::new();
    let streams: Vec<ChatStream> = QUESTIONS
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let token = if i == 1 {
                cancel.clone()
            } else {
                CancellationToken::new()
            };
            engine.submit(request(&format!("cancel-{i}"), q, 64), token)
        })
        .collect();
    let together: Vec<Seen> = rt.block_on(async {
        let tasks: Vec<_> = streams
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                let cancel = cancel.clone();
                // Reply 1 is cancelled after its third piece of text.
                tokio::spawn(watch(s, move |deltas| {
                    if i == 1 && deltas == 3 {
                        cancel.cancel();
                    }
                }))
            })
            .collect();
        let mut seen = Vec::new();
        for t in tasks {
            seen.push(t.await.unwrap());
        }
        seen
    });

    assert_eq!(together[1].finish, FinishReason::Cancelled);
    assert!(
        together[1].text.len() < alone[1].text.len(),
        "the cancelled reply stopped early: {:?}",
        together[1].text
    );
    for i in [0, 2, 3] {
        assert_eq!(
            together[i].text, alone[i].text,
            "reply {i} is untouched by the cancel"
        );
        assert_eq!(together[i].finish, alone[i].finish);
    }
}

#[test]
fn one_conversation_twice_at_once_takes_turns_on_its_sequence() {
    let _guard = lock();
    let engine = engine(2);
    let rt = runtime();
    // Hostile to the cache: two requests for one conversation arrive
    // together (a double-sent message). They must not share a sequence
    // mid-reply; the second waits and then reuses the first's prefix.
    let a = engine.submit(request("same", QUESTIONS[0], 24), CancellationToken::new());
    let b = engine.submit(request("same", QUESTIONS[0], 24), CancellationToken::new());
    let other = engine.submit(request("other", QUESTIONS[1], 24), CancellationToken::new());
    let (a, b, other) = rt.block_on(async {
        let (a, b, other) = tokio::join!(
            a.collect_with(|_| {}),
            b.collect_with(|_| {}),
            other.collect_with(|_| {})
        );
        (a.unwrap(), b.unwrap(), other.unwrap())
    });
    // The second ran after the first, on the sequence the first left: all
    // of its prompt but the last token was there. (Its text may differ: a
    // token read alone rounds differently from one read in a prompt.)
    assert_eq!(
        b.usage.cached_tokens + 1,
        b.usage.prompt_tokens,
        "the second found the first's tokens: {:?}",
        b.usage
    );
    assert_eq!(a.usage.cached_tokens, 0, "{:?}", a.usage);
    assert!(!b.text.is_empty() && !other.text.is_empty());

    // Positive control on the one sequence: alone, the first request of a
    // fresh conversation reuses nothing.
    let fresh = rt
        .block_on(
            engine
                .submit(request("fresh", QUESTIONS[0], 24), CancellationToken::new())
                .collect_with(|_| {}),
        )
        .unwrap();
    assert_eq!(fresh.usage.cached_tokens, 0);
    assert_eq!(fresh.text, a.text);
}

#[test]
fn a_freed_sequence_goes_to_interactive_before_background() {
    let _guard = lock();
    // Both sequences busy with long replies; a background request and then
    // an interactive one wait. When one long reply is cancelled, the
    // interactive request takes its sequence; the background one waits on.
    let engine = engine(2);
    let rt = runtime();
    let long = |key: &str| engine.submit(request(key, QUESTIONS[3], 400), CancellationToken::new());
    let first_cancel = CancellationToken::new();
    let mut first = engine.submit(request("busy-1", QUESTIONS[3], 400), first_cancel.clone());
    let mut second = long("busy-2");
    rt.block_on(async {
        // Both are running before the others arrive.
        assert!(matches!(
            first.next().await,
            Some(StreamEvent::TextDelta(_))
        ));
        assert!(matches!(
            second.next().await,
            Some(StreamEvent::TextDelta(_))
        ));
    });
    let mut bg = request("bg", QUESTIONS[0], 16);
    bg.priority = Priority::Background;
    let bg = engine.submit(bg, CancellationToken::new());
    let fg = engine.submit(request("fg", QUESTIONS[0], 16), CancellationToken::new());
    first_cancel.cancel();
    rt.block_on(async {
        let (bg, fg) = tokio::join!(watch(bg, |_| {}), watch(fg, |_| {}));
        assert!(!fg.text.is_empty() && !bg.text.is_empty());
        assert!(
            fg.end < bg.first.expect("background text"),
            "the interactive reply ended before the background one began"
        );
        while first.next().await.is_some() {}
    });
    drop(second);
}
