//! Voice notes heard on the box: real speech (espeak-ng, encoded with
//! opusenc as Telegram encodes voice notes) transcribed by Whisper tiny.en
//! in process, through `hearth transcribe` and through Telegram (the fake
//! Bot API, a real daemon, the real SmolLM2 model answering). Hostile
//! recordings (a text file named `.ogg`, a two-hour note, a file over the
//! size limit) get a clear answer while a good one beside them is heard.
#![allow(clippy::unwrap_used)]
// a test: an unwrap is the clearest failure
// Held across the test's awaits on purpose: it serialises the engines of
// the whole test binary, and this runtime is the test's own.
#![allow(clippy::await_holding_lock)]

use crate::common;
use crate::common::speech::{SENTENCE, share_heard, silent_note, speech_model, voice_note};
use crate::support;

use std::path::Path;
use std::sync::Arc;

use hearth::config::StreamMode;
use hearth::pipeline::{Outcome, StaticProviders};
use hearth::providers::LocalProvider;
use support::telegram_bot::{start, telegram_config};
use support::telegram_fake::{FakeTelegram, Incoming};
use support::{SlowEcho, config, local};

/// `hearth transcribe FILE` by Whisper tiny.en with `[voice]` also holding
/// `voice`.
fn transcribe(s: &common::Sandbox, voice: &str, file: &Path) -> (bool, String, String) {
    transcribe_by(s, &speech_model(), voice, file)
}

/// `hearth transcribe FILE` by the model in `model`, `[voice]` also
/// holding `voice`: whether it succeeded, its stdout and its stderr.
fn transcribe_by(
    s: &common::Sandbox,
    model: &Path,
    voice: &str,
    file: &Path,
) -> (bool, String, String) {
    let config = s.config(&format!(
        "[voice]\nmodel = \"{}\"\n{voice}",
        model.display()
    ));
    let out = s
        .hearth()
        .arg("--config")
        .arg(config)
        .arg("transcribe")
        .arg(file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    common::assert_no_panic(&stderr);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        stderr,
    )
}

#[test]
fn hearth_transcribe_hears_a_voice_note_and_refuses_what_is_not_one() {
    let s = common::Sandbox::new();
    let dir = s.path("audio");
    std::fs::create_dir_all(&dir).unwrap();
    let note = dir.join("note.ogg");
    std::fs::write(&note, voice_note(&dir, SENTENCE)).unwrap();
    let (ok, heard, stderr) = transcribe(&s, "", &note);
    assert!(ok, "{stderr}");
    assert!(share_heard(SENTENCE, &heard) >= 0.8, "heard: {heard}");
    assert!(stderr.contains("real-time factor"), "{stderr}");
    // The same words as a WAV file.
    let wav = common::speech::spoken_wav(&dir, SENTENCE);
    let (ok, heard, stderr) = transcribe(&s, "", &wav);
    assert!(
        ok && share_heard(SENTENCE, &heard) >= 0.8,
        "{heard} {stderr}"
    );
    // And as an MP3, named as if it were an OGG: the bytes decide.
    for name in ["spoken.mp3", "misnamed.ogg"] {
        let mp3 = common::speech::spoken_mp3(&dir, SENTENCE, name);
        let (ok, heard, stderr) = transcribe(&s, "", &mp3);
        assert!(
            ok && share_heard(SENTENCE, &heard) >= 0.8,
            "{name}: {heard} {stderr}"
        );
    }

    let text = dir.join("notes.ogg");
    std::fs::write(&text, "a shopping list, not a recording").unwrap();
    let (ok, _, stderr) = transcribe(&s, "", &text);
    assert!(!ok);
    assert!(stderr.contains("not OGG/Opus, WAV or MP3"), "{stderr}");

    let long = dir.join("long.ogg");
    std::fs::write(&long, silent_note(&dir, 7200)).unwrap();
    let started = std::time::Instant::now();
    let (ok, _, stderr) = transcribe(&s, "audio_max_seconds = 60\n", &long);
    assert!(!ok);
    assert!(stderr.contains("`[voice] audio_max_seconds`"), "{stderr}");
    assert!(
        started.elapsed().as_secs() < 60,
        "refused as soon as it passed the limit, not decoded whole"
    );

    let (ok, _, stderr) = transcribe(&s, "audio_max_mb = 1\n", &long);
    assert!(!ok && stderr.contains("`[voice] audio_max_mb`"), "{stderr}");
    // The positive control, with the same limits: the short note is heard.
    let (ok, heard, stderr) = transcribe(&s, "audio_max_seconds = 60\naudio_max_mb = 1\n", &note);
    assert!(
        ok && share_heard(SENTENCE, &heard) >= 0.8,
        "{heard} {stderr}"
    );
}

/// A multilingual model (Whisper base) hears the language by itself, and a
/// language no model can be asked for is refused with the ones it knows.
#[test]
fn a_multilingual_model_detects_the_language_and_a_wrong_one_is_refused() {
    let s = common::Sandbox::new();
    let dir = s.path("audio");
    std::fs::create_dir_all(&dir).unwrap();
    let german = common::speech::spoken_wav_in(
        &dir,
        "Bitte erinnere mich morgen früh daran, die Tomaten im Garten zu gießen.",
        "de",
    );
    let english = common::speech::spoken_wav(&dir, SENTENCE);
    let base = common::speech::multilingual_model();
    let run = |model: &Path, extra: &str, file: &Path| transcribe_by(&s, model, extra, file);
    let (ok, heard, stderr) = run(&base, "", &german);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("audio (de)"),
        "detected as German: {stderr}"
    );
    let heard = heard.to_lowercase();
    assert!(
        heard.contains("tomaten") && heard.contains("garten"),
        "heard: {heard}"
    );
    // Positive control: English is detected as English, and heard.
    let (ok, heard, stderr) = run(&base, "", &english);
    assert!(ok && stderr.contains("audio (en)"), "{stderr}");
    assert!(share_heard(SENTENCE, &heard) >= 0.8, "heard: {heard}");

    // A code that is no language: refused before a word is decoded.
    let (ok, heard, stderr) = run(&base, "language = \"xx\"\n", &german);
    assert!(!ok && heard.is_empty());
    assert!(
        stderr.contains("`xx`") && stderr.contains(", de, ") && stderr.contains("detected"),
        "{stderr}"
    );
    // German asked of an English-only model: refused, and why.
    let (ok, _, stderr) = run(&speech_model(), "language = \"de\"\n", &german);
    assert!(!ok && stderr.contains("English-only"), "{stderr}");
    // Configured, it is taken as said.
    let (ok, heard, stderr) = run(&base, "language = \"de\"\n", &german);
    assert!(ok && stderr.contains("audio (de)"), "{stderr}");
    assert!(heard.to_lowercase().contains("garten"), "heard: {heard}");
}

fn voice(user: i64, bytes: Vec<u8>, seconds: u32) -> Incoming {
    let mut m = Incoming::text(user, "");
    m.text = None;
    m.voice = Some((bytes, seconds));
    m
}

/// A Telegram voice note is transcribed beside the real model (between
/// two of its decode steps), shown back, and answered as the person's
/// words; the next question finds them in the history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_telegram_voice_note_is_heard_shown_and_answered_by_the_real_model() {
    let _engine_turn = common::engine_lock();
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    telegram_config(&mut cfg, &fake, &["42"], StreamMode::Off);
    cfg.model.path = common::model(common::SMOLLM2).display().to_string();
    cfg.model.context_size = 2048;
    cfg.generation.max_tokens = 12;
    cfg.generation.temperature = 0.0;
    cfg.voice.model = Some(speech_model().display().to_string());
    let mut settings = hearth::engine_setup::engine_settings(&cfg).expect("engine settings");
    settings.threads = common::engine_threads();
    let engine = tokio::task::spawn_blocking(move || hearth::engine::Engine::start(settings, None))
        .await
        .unwrap()
        .unwrap();
    let provider = Arc::new(LocalProvider::new(engine));
    let providers = Arc::new(StaticProviders::new().with("local", provider.clone()));
    let mut bot = start(fake, home, cfg, providers, |b| b);
    let dir = tempfile::tempdir().unwrap();
    bot.fake
        .inject(voice(42, voice_note(dir.path(), SENTENCE), 5));
    let outcome = bot.reports(1).await.remove(0).outcome;
    assert_eq!(outcome, Outcome::Replied, "{:?}", bot.sent_to(42));
    let sent = bot.sent_to(42);
    let shown = sent
        .iter()
        .find(|t| t.starts_with("🎤"))
        .expect("the transcript shown");
    assert!(share_heard(SENTENCE, shown) >= 0.8, "{shown}");
    assert!(sent.len() >= 2, "the transcript, then the answer: {sent:?}");
    let history = hearth::history::HistoryStore::open(&hearth::history::HistoryStore::path_in(
        &config(bot._home.path()).data_dir,
    ))
    .unwrap();
    let key = "telegram_42_42";
    let turns = history.load(key, 50).unwrap();
    assert!(
        turns
            .first()
            .is_some_and(|t| share_heard(SENTENCE, &t.content) >= 0.8),
        "the words are the person's turn: {turns:?}"
    );
    let support::telegram_bot::Bot { daemon, fake, .. } = bot;
    daemon.stop().await;
    drop(fake);
    let _ = tokio::task::spawn_blocking(move || drop(provider)).await;
}

#[tokio::test]
async fn hostile_recordings_get_a_clear_reply_while_another_chat_is_heard() {
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    telegram_config(&mut cfg, &fake, &["42", "43"], StreamMode::Off);
    cfg.voice.model = Some(speech_model().display().to_string());
    cfg.voice.max_seconds = 120;
    let echo = SlowEcho::new("echo", std::time::Duration::from_millis(10));
    let mut bot = start(fake, home, cfg, local(echo), |b| b);
    let dir = tempfile::tempdir().unwrap();
    let good = voice_note(dir.path(), SENTENCE);
    let cases: [(&str, Vec<u8>, u32, &str); 3] = [
        (
            "a text file sent as a voice note",
            b"OggS? no: a text file named voice.ogg".to_vec(),
            3,
            "could not be read",
        ),
        // Shown as code in Telegram: the backticks become formatting.
        (
            "a two-hour voice note",
            silent_note(dir.path(), 10),
            7200,
            "[voice] audio_max_seconds",
        ),
        (
            "a note that lies about its length",
            silent_note(dir.path(), 130),
            5,
            "[voice] audio_max_seconds",
        ),
    ];
    for (case, bytes, seconds, why) in cases {
        bot.fake.inject(voice(42, bytes, seconds));
        let outcome = bot.reports(1).await.remove(0).outcome;
        assert_eq!(outcome, Outcome::Failed, "{case}");
        let said = bot.sent_to(42).pop().unwrap_or_default();
        assert!(said.contains(why), "{case}: {said}");
        // The positive control: a good note in another chat is heard.
        bot.fake.inject(voice(43, good.clone(), 5));
        let outcome = bot.reports(1).await.remove(0).outcome;
        assert_eq!(outcome, Outcome::Replied, "{case}");
        let answer = bot.sent_to(43).pop().unwrap_or_default();
        assert!(share_heard(SENTENCE, &answer) >= 0.8, "{case}: {answer}");
    }
    bot.daemon.stop().await;
}

/// The words of an OGG/Opus voice note, by the test's own Whisper.
fn hear(ogg: &[u8]) -> String {
    let whisper = hearth::voice::Whisper::load(&speech_model(), 0).unwrap();
    let pcm = hearth::voice::audio::decode(ogg, &hearth::voice::AudioLimits::default()).unwrap();
    whisper.transcribe(&pcm, None).unwrap().text
}

#[test]
fn hearth_say_speaks_a_text_that_transcribes_back_and_refuses_nothing_to_say() {
    let s = common::Sandbox::new();
    let out = s.path("reply.ogg");
    let text = "Your tomatoes need water tomorrow morning, and the plumber comes at noon.";
    let config = s.config("");
    let said = s
        .hearth()
        .arg("--config")
        .arg(&config)
        .args(["say", text, "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&said.stderr);
    assert!(said.status.success(), "{stderr}");
    let ogg = std::fs::read(&out).unwrap();
    assert!(
        ogg.starts_with(b"OggS") && ogg[28..36] == *b"OpusHead",
        "an OGG/Opus file"
    );
    let heard = hear(&ogg);
    assert!(share_heard(text, &heard) >= 0.8, "heard: {heard}");
    let empty = s
        .hearth()
        .arg("--config")
        .arg(&config)
        .args(["say", "  ", "-o"])
        .arg(s.path("empty.ogg"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&empty.stderr);
    assert!(
        !empty.status.success() && stderr.contains("nothing to say"),
        "{stderr}"
    );
    common::assert_no_panic(&stderr);
    let off = s.config("[voice]\nvoice = \"\"\n");
    let none = s
        .hearth()
        .arg("--config")
        .arg(off)
        .args(["say", text, "-o"])
        .arg(s.path("off.ogg"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&none.stderr);
    assert!(
        !none.status.success() && stderr.contains("spoken replies are off"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_voice_note_is_answered_with_a_voice_note_that_says_the_reply() {
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    telegram_config(&mut cfg, &fake, &["42"], StreamMode::Off);
    cfg.voice.model = Some(speech_model().display().to_string());
    let echo = SlowEcho::new("echo", std::time::Duration::from_millis(10));
    let mut bot = start(fake, home, cfg, local(echo), |b| b);
    let dir = tempfile::tempdir().unwrap();
    bot.fake
        .inject(voice(42, voice_note(dir.path(), SENTENCE), 5));
    assert_eq!(bot.reports(1).await.remove(0).outcome, Outcome::Replied);
    let reply = bot.sent_to(42).pop().unwrap();
    let voiced: Vec<_> = bot
        .fake
        .uploads()
        .into_iter()
        .filter(|u| u.method == "sendVoice")
        .collect();
    assert_eq!(voiced.len(), 1, "one spoken reply");
    assert!(voiced[0].bytes.starts_with(b"OggS"));
    let heard = hear(&voiced[0].bytes);
    assert!(
        share_heard(&reply, &heard) >= 0.8,
        "reply: {reply}; spoken: {heard}"
    );
    // The control: a typed message gets text only (`when_spoken`).
    let (_, outcome) = bot.ask(42, "and a typed question").await;
    assert_eq!(outcome, Outcome::Replied);
    let voiced = bot
        .fake
        .uploads()
        .into_iter()
        .filter(|u| u.method == "sendVoice")
        .count();
    assert_eq!(voiced, 1, "no voice for a typed message");
    bot.daemon.stop().await;
}
