//! What a picture costs on SmolLM2 with the random test projector (64
//! image tokens from a 64×64 ViT of one block): the time to the first token
//! of a question with a picture against the same question without, in new
//! conversations, and of a second question about the picture (found in the
//! cache). Round by round, interleaved (this machine's speed drifts);
//! medians are printed. The projector is tiny, so these figures show the
//! plumbing's cost, not a real vision model's. Run: `cargo bench --bench
//! images` (needs `make test-projector`).
#![allow(clippy::unwrap_used)] // a bench: an unwrap is the clearest failure

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use hearth::chat::{ChatMessage, ChatRequest, Image, SamplingParams};
use hearth::engine::{Engine, EngineSettings};
use tokio_util::sync::CancellationToken;

use common::pictures::{IMAGE_TOKENS, jpeg, projector};

const ROUNDS: usize = 7;

fn main() {
    let rounds = if std::env::args().any(|a| a == "--bench") {
        ROUNDS
    } else {
        1
    };
    let engine = Engine::start(
        EngineSettings {
            mmproj: Some(projector()),
            share_prompts: false,
            slots: 4,
            context_size: 4096,
            ..common::engine_settings(common::SMOLLM2)
        },
        None,
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let timed = |key: String, messages: Vec<ChatMessage>| {
        let started = Instant::now();
        let request = ChatRequest::new(key, messages, SamplingParams::greedy(1));
        let reply = rt
            .block_on(
                engine
                    .submit(request, CancellationToken::new())
                    .collect_with(|_| {}),
            )
            .unwrap();
        (started.elapsed().as_secs_f64() * 1e3, reply.usage)
    };
    let question = "What is in this picture?";
    let (mut text, mut picture, mut again) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        // A new colour each round: no picture is ever found cached by chance.
        let shade = (round * 30) as u8;
        let photo = Image::new(jpeg(640, 480, [200, shade, 30]));
        let with = ChatMessage {
            images: vec![photo],
            ..ChatMessage::user(question)
        };
        let (t_text, _) = timed(format!("text-{round}"), vec![ChatMessage::user(question)]);
        let (t_pic, usage) = timed(format!("pic-{round}"), vec![with.clone()]);
        assert_eq!(usage.cached_tokens, 0);
        let follow = vec![
            with,
            ChatMessage::assistant("A picture."),
            ChatMessage::user("What colour is it?"),
        ];
        let (t_again, usage) = timed(format!("pic-{round}"), follow);
        assert!(usage.cached_tokens > IMAGE_TOKENS, "{usage:?}");
        eprintln!(
            "round {}: text {t_text:.1} ms, with a picture {t_pic:.1} ms, a second question {t_again:.1} ms",
            round + 1
        );
        text.push(t_text);
        picture.push(t_pic);
        again.push(t_again);
    }
    let (text, picture, again) = (median(text), median(picture), median(again));
    println!(
        "time to first token, medians of {rounds}: a question {text:.1} ms; with a picture {picture:.1} ms (the picture: {:.1} ms); a second question about it {again:.1} ms",
        picture - text
    );
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
