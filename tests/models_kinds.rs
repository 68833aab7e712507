//! `hearth models` for the models that are more than one GGUF file, against
//! the fake Hugging Face hub: a Whisper model comes down as its folder (its
//! weights from LFS storage, its small files kept in Git and checked by
//! their Git blob hash) and is heard from there; a vision model comes with
//! its projector, and after `models use` `hearth ask --image` reaches it as
//! image tokens. The hostile case first: a small file altered on its way.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;
use crate::common::pictures::{IMAGE_TOKENS, png, projector};
use crate::common::speech::{SENTENCE, share_heard, speech_model, spoken_wav};
use crate::support;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::Sandbox;
use support::hub_fake::FakeHub;

const WHISPER_FILES: [&str; 4] = [
    "model.bin",
    "config.json",
    "tokenizer.json",
    "vocabulary.txt",
];

/// The hub serving Whisper tiny.en's files as Systran's repository `repo`
/// holds them.
async fn whisper_hub(repo: &str) -> FakeHub {
    let source = speech_model();
    let read = |f: &str| std::fs::read(source.join(f)).unwrap();
    let hub = FakeHub::start(repo, "model.bin", read("model.bin")).await;
    for f in &WHISPER_FILES[1..] {
        hub.add_git(f, read(f));
    }
    hub
}

use support::{hearth_with as hearth, said as text};

fn pulled_whisper(s: &Sandbox) -> PathBuf {
    s.path("data/models/whisper-tiny.en")
}

/// whisper-small: a model the checkout's models folder does not hold, and
/// whose small files the catalogue does not pin (the hub's Git blob hash
/// is what checks them).
#[tokio::test(flavor = "multi_thread")]
async fn a_small_file_altered_on_its_way_is_refused_and_the_model_is_not_used_until_whole() {
    let hub = whisper_hub("Systran/faster-whisper-small").await;
    hub.behave(|b| b.corrupt_in_git = true);
    let s = Sandbox::new();
    let config = s.config(&format!("[models]\nhub_url = \"{}\"\n", hub.url));
    let out = hearth(&s, &config, &["models", "pull", "whisper-small"]).await;
    assert!(!out.status.success());
    assert!(
        text(&out).contains("arrived corrupt: its Git blob hash"),
        "{}",
        text(&out)
    );
    let dir = s.path("data/models/whisper-small");
    assert!(
        dir.join("model.bin").is_file(),
        "verified before the bad file came"
    );
    assert!(!dir.join("config.json").exists());
    assert!(
        !dir.join("config.json.part").exists(),
        "the bad bytes are deleted"
    );
    // Not whole: `use` refuses it.
    let out = hearth(&s, &config, &["models", "use", "whisper-small"]).await;
    assert!(!out.status.success());
    assert!(text(&out).contains("not every file"), "{}", text(&out));

    // Positive control: the hub mends; what was verified is not fetched again.
    hub.behave(|b| b.corrupt_in_git = false);
    let before = hub.requests().len();
    let out = hearth(&s, &config, &["models", "pull", "whisper-small"]).await;
    assert!(out.status.success(), "{}", text(&out));
    let out = hearth(&s, &config, &["models", "use", "whisper-small"]).await;
    assert!(out.status.success(), "{}", text(&out));
    let again = &hub.requests()[before..];
    assert!(
        !again.iter().any(|r| r.path.starts_with("/cdn/")),
        "model.bin was fetched again: {again:?}"
    );
    assert!(
        again
            .iter()
            .any(|r| r.method == "GET" && r.path.ends_with("/config.json"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_whisper_model_comes_down_as_its_folder_and_hears_from_there() {
    let hub = whisper_hub("Systran/faster-whisper-tiny.en").await;
    let s = Sandbox::new();
    let config = s.config(&format!(
        "# mine\n[voice]\nshow_transcript = false\n\n[models]\nhub_url = \"{}\"\n",
        hub.url
    ));
    let out = hearth(&s, &config, &["models", "pull", "whisper-tiny.en"]).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("4 files, each checksum verified"),
        "{}",
        text(&out)
    );
    let dir = pulled_whisper(&s);
    for f in WHISPER_FILES {
        assert_eq!(
            std::fs::read(dir.join(f)).unwrap(),
            std::fs::read(speech_model().join(f)).unwrap(),
            "{f}"
        );
    }
    // The small files were answered as the hub answers files kept in Git.
    let requests = hub.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.method == "HEAD" && r.path.ends_with("/tokenizer.json") && r.status == 200),
        "{requests:?}"
    );

    let out = hearth(&s, &config, &["models", "use", "whisper-tiny.en"]).await;
    assert!(out.status.success(), "{}", text(&out));
    let edited = std::fs::read_to_string(&config).unwrap();
    assert!(edited.contains("# mine") && edited.contains("show_transcript = false"));
    assert!(edited.contains("model = \"whisper-tiny.en\""), "{edited}");

    // The pulled folder itself hears a sentence.
    let audio = s.path("audio");
    std::fs::create_dir_all(&audio).unwrap();
    let wav = spoken_wav(&audio, SENTENCE);
    let own = s.config(&format!("[voice]\nmodel = \"{}\"\n", dir.display()));
    let out = hearth(&s, &own, &["transcribe", wav.to_str().unwrap()]).await;
    let heard = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{}", text(&out));
    assert!(share_heard(SENTENCE, &heard) >= 0.8, "heard: {heard}");

    // `rm` takes the whole folder, once it is not the one in use.
    let out = hearth(&s, &own, &["models", "rm", "whisper-tiny.en"]).await;
    assert!(!out.status.success(), "in use: {}", text(&out));
    assert!(dir.join("model.bin").is_file());
    let none = s.config(&format!(
        "[models]\nhub_url = \"{}\"\n[voice]\nmodel = \"\"\n",
        hub.url
    ));
    let out = hearth(&s, &none, &["models", "rm", "whisper-tiny.en"]).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(!dir.exists(), "the folder is gone");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_vision_model_comes_with_its_projector_and_sees_after_use() {
    // The tiny test pair stands in for SmolVLM's files: the hub cannot tell.
    let hub = FakeHub::start(
        "ggml-org/SmolVLM-500M-Instruct-GGUF",
        "SmolVLM-500M-Instruct-Q8_0.gguf",
        std::fs::read(common::model(common::SMOLLM2)).unwrap(),
    )
    .await;
    hub.add_lfs(
        "mmproj-SmolVLM-500M-Instruct-Q8_0.gguf",
        std::fs::read(projector()).unwrap(),
    );
    let s = Sandbox::new();
    let config = s.config(&format!(
        "[generation]\ntemperature = 0.0\nmax_tokens = 8\n\n[models]\nhub_url = \"{}\"\n",
        hub.url
    ));
    let out = hearth(&s, &config, &["models", "pull", "smolvlm-500m"]).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("2 files"), "{}", text(&out));
    let out = hearth(&s, &config, &["models", "use", "smolvlm-500m"]).await;
    assert!(out.status.success(), "{}", text(&out));
    let edited = std::fs::read_to_string(&config).unwrap();
    assert!(
        edited.contains("path = \"SmolVLM-500M-Instruct-Q8_0.gguf\"")
            && edited.contains("mmproj = \"mmproj-SmolVLM-500M-Instruct-Q8_0.gguf\""),
        "{edited}"
    );

    let photo = s.path("red.png");
    std::fs::write(&photo, png(100, 80, [200, 30, 30])).unwrap();
    let ask = |image: Option<&Path>| {
        let mut cmd = s.hearth_process();
        cmd.env("RUST_LOG", "hearth::cli::ask=info")
            .arg("--config")
            .arg(&config)
            .arg("ask");
        if let Some(image) = image {
            cmd.arg("--image").arg(image);
        }
        let out = cmd.arg("What is in this picture?").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        common::logged(&stderr, "prompt_tokens")
    };
    let (seen, words) = {
        let _turn = common::engine_lock();
        (ask(Some(&photo)), ask(None))
    };
    assert!(
        seen >= words + IMAGE_TOKENS,
        "the picture is {} tokens, not its {IMAGE_TOKENS}",
        seen - words
    );

    // Back to a text model: the projector line goes, and it says so.
    let out = hearth(&s, &config, &["models", "use", "smollm2-135m"]).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("removed [model] mmproj"),
        "{}",
        text(&out)
    );
    assert!(!std::fs::read_to_string(&config).unwrap().contains("mmproj"));
}

/// whisper-base, pinned in the catalogue: the real files pass, and a hub
/// that serves another model under its name is refused before a byte of it
/// is written.
#[tokio::test(flavor = "multi_thread")]
async fn a_pinned_model_is_checked_against_the_catalogue_not_the_hub() {
    let impostor = whisper_hub("Systran/faster-whisper-base").await;
    let s = Sandbox::new();
    let config = s.config(&format!("[models]\nhub_url = \"{}\"\n", impostor.url));
    let out = hearth(&s, &config, &["models", "pull", "whisper-base"]).await;
    assert!(!out.status.success());
    assert!(
        text(&out).contains("is not the catalogue's"),
        "{}",
        text(&out)
    );
    assert!(!s.path("data/models/whisper-base/model.bin").exists());

    let source = common::speech::multilingual_model();
    let read = |f: &str| std::fs::read(source.join(f)).unwrap();
    let real = FakeHub::start(
        "Systran/faster-whisper-base",
        "model.bin",
        read("model.bin"),
    )
    .await;
    for f in &WHISPER_FILES[1..] {
        real.add_git(f, read(f));
    }
    let config = s.config(&format!("[models]\nhub_url = \"{}\"\n", real.url));
    let out = hearth(&s, &config, &["models", "pull", "whisper-base"]).await;
    assert!(out.status.success(), "{}", text(&out));
    for f in WHISPER_FILES {
        assert_eq!(
            std::fs::read(s.path("data/models/whisper-base").join(f)).unwrap(),
            read(f),
            "{f}"
        );
    }
}

/// `hearth doctor` says which modalities the configured models give and,
/// for each one missing, the catalogue model to pull for it; the control:
/// what is configured is named as such.
#[tokio::test(flavor = "multi_thread")]
// Held across the awaits on purpose: it serialises the test binary's engines.
#[allow(clippy::await_holding_lock)]
async fn doctor_names_a_catalogue_model_for_each_missing_modality() {
    let _turn = common::engine_lock();
    let s = Sandbox::new();
    let line = |out: &Output, name: &str| {
        text(out)
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no {name} line: {}", text(out)))
            .to_string()
    };
    let model = format!(
        "[model]\npath = \"{}\"\n",
        common::model(common::SMOLLM2).display()
    );
    let none = s.config(&format!(
        "{model}mmproj = \"\"\n[voice]\nmodel = \"\"\nvoice = \"\"\n"
    ));
    let out = hearth(&s, &none, &["doctor"]).await;
    let images = line(&out, "images");
    assert!(
        images.contains("text only") && images.contains("hearth models pull"),
        "{images}"
    );
    let voice = line(&out, "voice");
    assert!(
        voice.contains("not heard") && voice.contains("not spoken"),
        "{voice}"
    );
    assert_eq!(voice.matches("hearth models pull").count(), 2, "{voice}");

    let all = s.config(&format!(
        "{model}mmproj = \"{}\"\n[voice]\nmodel = \"{}\"\n",
        projector().display(),
        speech_model().display()
    ));
    let out = hearth(&s, &all, &["doctor"]).await;
    let images = line(&out, "images");
    assert!(images.contains("seen, through the projector"), "{images}");
    let voice = line(&out, "voice");
    assert!(voice.contains("voice notes heard by"), "{voice}");
}
