//! What hearing a voice note costs on this machine: Whisper tiny.en
//! (CTranslate2, int8, in process) on a ten-second note of real speech
//! (espeak-ng, encoded as Telegram encodes voice notes), and the time from
//! the note's arrival to the first token of SmolLM2's answer (decode, then
//! transcribe between two engine steps, then the answer's prefill); and
//! Piper's joe voice (ONNX Runtime, CPU) speaking the same passage.
//! Round by round; medians printed. Run: `cargo bench --bench voice`
//! (needs `make test-speech`).
#![allow(clippy::unwrap_used)] // a bench: an unwrap is the clearest failure

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use hearth::chat::{ChatMessage, ChatRequest, SamplingParams};
use hearth::engine::{Engine, EngineSettings};
use hearth::voice::{AudioLimits, Piper, Whisper};
use tokio_util::sync::CancellationToken;

use common::speech::{piper_voice, share_heard, speech_model, voice_note};

const ROUNDS: usize = 5;

/// About ten seconds at 130 words a minute.
const PASSAGE: &str = "Good morning. Please add milk, eggs and fresh bread to the shopping list, \
     and remind me to call the plumber about the kitchen sink before noon.";

fn main() {
    let rounds = if std::env::args().any(|a| a == "--bench") {
        ROUNDS
    } else {
        1
    };
    let dir = tempfile::tempdir().unwrap();
    let note = voice_note(dir.path(), PASSAGE);
    let engine = Engine::start(
        EngineSettings {
            share_prompts: false,
            ..common::engine_settings(common::SMOLLM2)
        },
        None,
    )
    .unwrap();
    let started = Instant::now();
    let whisper = std::sync::Arc::new(Whisper::load(&speech_model(), 0).unwrap());
    eprintln!(
        "the speech model loads in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (voice, runtime) = piper_voice();
    let piper = Piper::load(&voice, &runtime, 0).unwrap();
    let (mut factors, mut arrivals, mut seconds) = (Vec::new(), Vec::new(), 0.0);
    let (mut spoken_factors, mut spoken_seconds) = (Vec::new(), 0.0);
    for round in 0..rounds {
        // Alone: decode and transcribe.
        let pcm = hearth::voice::audio::decode(&note, &AudioLimits::default()).unwrap();
        let heard = whisper.transcribe(&pcm, None).unwrap();
        assert!(share_heard(PASSAGE, &heard.text) >= 0.8, "{}", heard.text);
        seconds = heard.audio_seconds;
        // Arrival to first token: as the pipeline does it.
        let arrived = Instant::now();
        let pcm = hearth::voice::audio::decode(&note, &AudioLimits::default()).unwrap();
        let w = whisper.clone();
        let text = rt
            .block_on(engine.exclusive(move || w.transcribe(&pcm, None)))
            .unwrap()
            .unwrap()
            .text;
        let request = ChatRequest::new(
            format!("voice-{round}"),
            vec![
                ChatMessage::system("You are a helpful assistant."),
                ChatMessage::user(text),
            ],
            SamplingParams::greedy(1),
        );
        rt.block_on(
            engine
                .submit(request, CancellationToken::new())
                .collect_with(|_| {}),
        )
        .unwrap();
        let arrival = arrived.elapsed().as_secs_f64() * 1e3;
        eprintln!(
            "round {}: {:.1} s of speech heard in {:.0} ms (real-time factor {:.3}); arrival to first token {arrival:.0} ms",
            round + 1,
            heard.audio_seconds,
            heard.elapsed.as_secs_f64() * 1e3,
            heard.real_time_factor()
        );
        factors.push(heard.real_time_factor());
        arrivals.push(arrival);
        let spoken = piper.speak(PASSAGE).unwrap();
        let ogg = spoken.voice_note().unwrap();
        assert!(ogg.starts_with(b"OggS"));
        eprintln!(
            "round {}: {:.1} s of speech made in {:.0} ms (real-time factor {:.3})",
            round + 1,
            spoken.seconds(),
            spoken.elapsed.as_secs_f64() * 1e3,
            spoken.real_time_factor()
        );
        spoken_seconds = spoken.seconds();
        spoken_factors.push(spoken.real_time_factor());
    }
    println!(
        "medians of {rounds}: speech-to-text real-time factor {:.3} on a {seconds:.1} s note; arrival to the answer's first token {:.0} ms; text-to-speech real-time factor {:.3} ({spoken_seconds:.1} s of speech)",
        median(factors),
        median(arrivals),
        median(spoken_factors)
    );
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
