//! Real speech for the voice tests: a known sentence spoken by espeak-ng
//! and encoded as Telegram encodes voice notes (OGG/Opus, mono, 48 kHz
//! inside), and how much of it a transcript holds.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The sentence the tests speak: plain words Whisper tiny.en knows.
pub const SENTENCE: &str =
    "Please remind me to water the tomato plants in the garden tomorrow morning.";

/// Whisper tiny.en in CTranslate2's format (`make test-speech`).
pub fn speech_model() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/whisper-tiny.en");
    assert!(
        path.join("model.bin").is_file(),
        "the speech model is missing: run `make test-speech`"
    );
    path
}

fn run(command: &mut Command) {
    let out = command.output().unwrap_or_else(|e| {
        panic!(
            "{command:?} did not start ({e}): run `make test-speech` for espeak-ng, opus-tools and lame"
        )
    });
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `text` spoken (130 words a minute) as a WAV file in `dir`.
pub fn spoken_wav(dir: &Path, text: &str) -> PathBuf {
    spoken_wav_in(dir, text, "en")
}

/// `text` spoken in espeak-ng's voice for `language` (`de`, …) as a WAV file.
pub fn spoken_wav_in(dir: &Path, text: &str, language: &str) -> PathBuf {
    let wav = dir.join(format!("spoken-{language}.wav"));
    run(Command::new("espeak-ng")
        .args(["-v", language, "-s", "130", "-w"])
        .arg(&wav)
        .arg(text));
    wav
}

/// Whisper base, multilingual, in CTranslate2's format (`make test-speech`
/// puts it outside `models/`, so that it is never picked by itself).
pub fn multilingual_model() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-models/whisper-base");
    assert!(
        path.join("model.bin").is_file(),
        "the multilingual speech model is missing: run `make test-speech`"
    );
    path
}

/// `text` spoken, as a Telegram voice note: OGG/Opus, mono, 48 kHz.
pub fn voice_note(dir: &Path, text: &str) -> Vec<u8> {
    let wav = spoken_wav(dir, text);
    let ogg = dir.join("voice.ogg");
    run(Command::new("opusenc")
        .args(["--quiet", "--bitrate", "32", "--downmix-mono"])
        .arg(&wav)
        .arg(&ogg));
    std::fs::read(&ogg).expect("the encoded note")
}

/// `text` spoken, as an MP3 file (LAME at 64 kbit/s), named `name` in `dir`.
pub fn spoken_mp3(dir: &Path, text: &str, name: &str) -> PathBuf {
    let wav = spoken_wav(dir, text);
    let mp3 = dir.join(name);
    run(Command::new("lame")
        .args(["--quiet", "-b", "64"])
        .arg(&wav)
        .arg(&mp3));
    mp3
}

/// A voice note of `seconds` of silence (Opus at its lowest rate).
pub fn silent_note(dir: &Path, seconds: u32) -> Vec<u8> {
    let raw = dir.join("silence.raw");
    // 8 kHz, 16 bits: 16,000 bytes a second.
    std::fs::write(&raw, vec![0u8; seconds as usize * 16_000]).expect("silence");
    let ogg = dir.join("silence.ogg");
    run(Command::new("opusenc")
        .args([
            "--quiet",
            "--raw",
            "--raw-rate",
            "8000",
            "--raw-chan",
            "1",
            "--bitrate",
            "6",
            "--comp",
            "0",
        ])
        .arg(&raw)
        .arg(&ogg));
    let _ = std::fs::remove_file(&raw);
    std::fs::read(&ogg).expect("the encoded silence")
}

/// The words of `text` that carry its meaning (lowercase, no small words).
pub fn content_words(text: &str) -> Vec<String> {
    const SMALL: &[&str] = &[
        "a", "an", "the", "to", "in", "on", "at", "of", "and", "or", "me", "is", "it", "for",
    ];
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| !w.is_empty() && !SMALL.contains(&w.as_str()))
        .collect()
}

/// The share of `expected`'s content words that `heard` holds.
pub fn share_heard(expected: &str, heard: &str) -> f64 {
    let heard = content_words(heard);
    let wanted = content_words(expected);
    let found = wanted.iter().filter(|w| heard.contains(w)).count();
    found as f64 / wanted.len().max(1) as f64
}

/// The Piper voice and ONNX Runtime's library (`make test-speech`).
pub fn piper_voice() -> (PathBuf, PathBuf) {
    let models = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models");
    let voice = models.join("piper-joe/en_US-joe-medium.onnx");
    let runtime = models.join("onnxruntime/libonnxruntime.so.1.22.1");
    assert!(
        voice.is_file() && runtime.is_file(),
        "the Piper voice or ONNX Runtime is missing: run `make test-speech`"
    );
    (voice, runtime)
}
