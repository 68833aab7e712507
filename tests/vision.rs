//! Images through the engine, on SmolLM2 with a projector of random weights
//! (`make test-projector`; no vision GGUF can be downloaded here). It
//! proves the plumbing: a picture becomes its projector's tokens, a second
//! question about it decodes only the new text, also after the engine
//! restarted from its disk cache; a different picture is never taken for a
//! cached one; hostile images are refused with a reason while the engine
//! keeps answering. It cannot prove that a model understands a picture.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;
use crate::common::engine_lock as lock;
use crate::common::pictures::{IMAGE_TOKENS, bomb, jpeg, png, projector};

use std::path::{Path, PathBuf};

use hearth::chat::{
    CacheOrigin, ChatMessage, ChatReply, ChatRequest, Image, ProviderError, SamplingParams,
};
use hearth::engine::{Engine, EngineSettings, ImageLimits};
use tokio_util::sync::CancellationToken;

fn settings(kv_dir: &Path, mmproj: Option<PathBuf>, limits: ImageLimits) -> EngineSettings {
    EngineSettings {
        kv_dir: Some(kv_dir.to_path_buf()),
        disk_cache_bytes: 1 << 30,
        mmproj,
        image_limits: limits,
        ..common::engine_settings(common::SMOLLM2)
    }
}

fn ask(engine: &Engine, key: &str, messages: Vec<ChatMessage>) -> Result<ChatReply, ProviderError> {
    let request = ChatRequest::new(key, messages, SamplingParams::greedy(16));
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(
            engine
                .submit(request, CancellationToken::new())
                .collect_with(|_| {}),
        )
}

fn with_images(text: &str, images: &[&[u8]]) -> ChatMessage {
    ChatMessage {
        images: images.iter().map(|b| Image::new(b.to_vec())).collect(),
        ..ChatMessage::user(text)
    }
}

#[test]
fn a_picture_is_its_projectors_tokens_and_stays_cached_across_a_restart() {
    let _turn = lock();
    let kv = tempfile::tempdir().unwrap();
    let red = png(100, 80, [200, 30, 30]);
    let blue = png(100, 80, [30, 30, 200]);
    let system = ChatMessage::system("You are a helpful assistant.");
    let question = "What is in this picture?";
    let engine = Engine::start(
        settings(kv.path(), Some(projector()), ImageLimits::default()),
        None,
    )
    .unwrap();
    assert!(engine.info().vision);
    // The control: the same question without the picture.
    let text = ask(
        &engine,
        "text",
        vec![system.clone(), ChatMessage::user(question)],
    )
    .unwrap();
    let mut history = vec![system.clone(), with_images(question, &[&red])];
    let first = ask(&engine, "photo", history.clone()).unwrap();
    assert_eq!(
        first.usage.prompt_tokens,
        text.usage.prompt_tokens + IMAGE_TOKENS,
        "the picture is the projector's {IMAGE_TOKENS} tokens: {:?} vs {:?}",
        first.usage,
        text.usage
    );
    // A second question about it: only the new text is decoded.
    history.push(ChatMessage::assistant(first.text.trim()));
    history.push(ChatMessage::user("What colour is it?"));
    let second = ask(&engine, "photo", history.clone()).unwrap();
    assert!(
        second.usage.cached_tokens >= first.usage.prompt_tokens,
        "the picture and the first question come from the cache: {:?}",
        second.usage
    );
    assert!(second.usage.prompt_tokens - second.usage.cached_tokens < IMAGE_TOKENS);
    // A different picture in the same place is decoded, never taken from
    // the cache (the shared prefix stops before it).
    let other = ask(
        &engine,
        "photo-blue",
        vec![system.clone(), with_images(question, &[&blue])],
    )
    .unwrap();
    assert!(
        other.usage.prompt_tokens - other.usage.cached_tokens >= IMAGE_TOKENS,
        "{:?}",
        other.usage
    );
    drop(engine);
    // After a restart the conversation comes back from disk, picture included.
    let engine = Engine::start(
        settings(kv.path(), Some(projector()), ImageLimits::default()),
        None,
    )
    .unwrap();
    history.push(ChatMessage::assistant(second.text.trim()));
    history.push(ChatMessage::user("And its shape?"));
    let third = ask(&engine, "photo", history).unwrap();
    came_back(&third, CacheOrigin::Disk, second.usage.prompt_tokens);
}

/// `reply`'s conversation came back from `origin` holding at least `held`
/// tokens (its picture among them).
fn came_back(reply: &ChatReply, origin: CacheOrigin, held: u32) {
    assert_eq!(reply.usage.cache_origin, origin, "{:?}", reply.usage);
    assert!(reply.usage.cached_tokens >= held, "{:?}", reply.usage);
}

#[test]
fn hostile_images_are_refused_with_a_reason_and_the_engine_answers_on() {
    let _turn = lock();
    let kv = tempfile::tempdir().unwrap();
    let limits = ImageLimits {
        max_bytes: 1 << 20,
        max_pixels: 10_000_000,
        per_message: 2,
    };
    let engine = Engine::start(settings(kv.path(), Some(projector()), limits), None).unwrap();
    let red = png(100, 80, [200, 30, 30]);
    let bomb = bomb(100_000);
    let mut big = png(4, 4, [0, 0, 0]);
    big.resize(2 << 20, 0);
    let truncated = red[..red.len() / 2].to_vec();
    let jpeg = jpeg(64, 48, [20, 160, 40]);
    let truncated_jpeg = jpeg[..jpeg.len() * 2 / 3].to_vec();
    let text_file = b"OggS this is a text file named voice.ogg".to_vec();
    let cases: [(&str, Vec<&[u8]>, &str); 6] = [
        ("bomb", vec![&bomb], "pixels"),
        ("big", vec![&big], "bytes"),
        ("truncated", vec![&truncated], "could not be read"),
        ("truncated jpeg", vec![&truncated_jpeg], "could not be read"),
        ("not an image", vec![&text_file], "not a PNG"),
        ("three", vec![&red, &red, &red], "images in one message"),
    ];
    for (i, (name, images, why)) in cases.into_iter().enumerate() {
        let key = format!("hostile-{i}");
        let refused = ask(&engine, &key, vec![with_images("What is this?", &images)]);
        match refused {
            Err(ProviderError::InvalidRequest(message)) => {
                assert!(message.contains(why), "{name}: {message}")
            }
            other => panic!("{name}: {other:?}"),
        }
        // The positive control, in the same conversation: a good picture
        // (a whole JPEG beside the truncated one).
        let control: &[u8] = if name == "truncated jpeg" {
            &jpeg
        } else {
            &red
        };
        let good = ask(
            &engine,
            &key,
            vec![with_images("What is this?", &[control])],
        )
        .unwrap();
        assert!(
            good.usage.prompt_tokens > IMAGE_TOKENS,
            "{name}: {:?}",
            good.usage
        );
    }
    drop(engine);
    // A model without a projector says so.
    let engine = Engine::start(settings(kv.path(), None, limits), None).unwrap();
    assert!(!engine.info().vision);
    match ask(
        &engine,
        "blind",
        vec![with_images("What is this?", &[&red])],
    ) {
        Err(ProviderError::InvalidRequest(m)) => assert!(m.contains("cannot see images"), "{m}"),
        other => panic!("{other:?}"),
    }
    ask(&engine, "blind", vec![ChatMessage::user("Hello")]).unwrap();
}

#[test]
fn hearth_ask_takes_an_image_and_a_blind_model_or_a_missing_file_says_why() {
    let _turn = lock();
    let s = common::Sandbox::new();
    let photo = s.path("red.png");
    std::fs::write(&photo, png(100, 80, [200, 30, 30])).unwrap();
    let model = common::model(common::SMOLLM2);
    let ask = |mmproj: &str, image: &Path| {
        let config = s.config(&format!(
            "[model]\npath = \"{}\"\nmmproj = \"{mmproj}\"\n[generation]\ntemperature = 0.0\nmax_tokens = 8\n",
            model.display()
        ));
        s.hearth()
            .arg("--config")
            .arg(config)
            .args(["ask", "--image"])
            .arg(image)
            .arg("What is in this picture?")
            .output()
            .unwrap()
    };
    let seen = ask(&projector().display().to_string(), &photo);
    let stderr = String::from_utf8_lossy(&seen.stderr);
    assert!(seen.status.success(), "{stderr}");
    assert!(!seen.stdout.is_empty(), "a reply: {stderr}");
    common::assert_no_panic(&stderr);
    let blind = ask("", &photo);
    let stderr = String::from_utf8_lossy(&blind.stderr);
    assert!(!blind.status.success());
    assert!(stderr.contains("cannot see images"), "{stderr}");
    common::assert_no_panic(&stderr);
    let missing = ask(&projector().display().to_string(), &s.path("nowhere.png"));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success());
    assert!(stderr.contains("cannot read the image"), "{stderr}");
}

#[test]
fn a_picture_evicted_to_ram_comes_back_without_being_decoded_again() {
    let _turn = lock();
    let kv = tempfile::tempdir().unwrap();
    // One slot: a second conversation moves the first out to RAM.
    let engine = Engine::start(
        EngineSettings {
            slots: 1,
            share_prompts: false,
            ..settings(kv.path(), Some(projector()), ImageLimits::default())
        },
        None,
    )
    .unwrap();
    let red = png(100, 80, [200, 30, 30]);
    let mut history = vec![with_images("What is in this picture?", &[&red])];
    let first = ask(&engine, "photo", history.clone()).unwrap();
    ask(&engine, "other", vec![ChatMessage::user("Hello there.")]).unwrap();
    history.push(ChatMessage::assistant(first.text.trim()));
    history.push(ChatMessage::user("What colour is it?"));
    let back = ask(&engine, "photo", history).unwrap();
    came_back(&back, CacheOrigin::Ram, first.usage.prompt_tokens);
}

/// `hearth ask --image` in a named session: the picture is its projector's
/// tokens, and a second `hearth ask` in the same session (a new process:
/// the engine restarted) reads only its own text, the picture coming back
/// from the history and its tokens from the disk cache.
#[test]
fn hearth_ask_keeps_a_picture_across_invocations_of_a_session() {
    let _turn = lock();
    let s = common::Sandbox::new();
    let photo = s.path("green.png");
    std::fs::write(&photo, png(90, 70, [30, 200, 30])).unwrap();
    let config = s.config(&format!(
        "[model]\npath = \"{}\"\nmmproj = \"{}\"\n[generation]\ntemperature = 0.0\nmax_tokens = 8\n",
        common::model(common::SMOLLM2).display(),
        projector().display()
    ));
    let ask = |session: &str, image: Option<&Path>, question: &str| -> (u32, u32) {
        let mut command = s.hearth();
        command
            .env("RUST_LOG", "hearth::cli::ask=info")
            .arg("--config")
            .arg(&config)
            .args(["ask", "--session", session]);
        if let Some(image) = image {
            command.arg("--image").arg(image);
        }
        let out = command.arg(question).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        (
            common::logged(&stderr, "prompt_tokens"),
            common::logged(&stderr, "cached_tokens"),
        )
    };
    let question = "What is in this picture?";
    let (text, _) = ask("words", None, question);
    let (first, _) = ask("photo", Some(&photo), question);
    assert_eq!(
        first,
        text + IMAGE_TOKENS,
        "the picture is the projector's tokens"
    );
    let (second, cached) = ask("photo", None, "What colour is it?");
    assert!(
        cached >= first,
        "the picture came back from disk: {cached} of {second}"
    );
    assert!(second - cached < IMAGE_TOKENS);
}

/// `/image PATH question` in `hearth chat` shows the model the picture;
/// a missing file is said so and the chat goes on; the history keeps the
/// picture in its private file.
#[test]
fn hearth_chat_takes_a_picture_with_slash_image() {
    let _turn = lock();
    let s = common::Sandbox::new();
    let photo = s.path("blue.png");
    std::fs::write(&photo, png(60, 40, [30, 30, 200])).unwrap();
    let config = s.config(&format!(
        "[model]\npath = \"{}\"\nmmproj = \"{}\"\n[generation]\ntemperature = 0.0\nmax_tokens = 8\n",
        common::model(common::SMOLLM2).display(),
        projector().display()
    ));
    let lines = format!(
        "/image {} What is in this picture?\n/image {}\nhello\n",
        photo.display(),
        s.path("nowhere.png").display()
    );
    let out = s
        .hearth()
        .arg("--config")
        .arg(&config)
        .arg("chat")
        .write_stdin(lines)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    common::assert_no_panic(&stderr);
    assert!(stdout.contains("cannot read the image"), "{stdout}");
    let history = rusqlite::Connection::open(s.path("data/history.sqlite3")).unwrap();
    let pictures: i64 = history
        .query_row("SELECT count(*) FROM pictures", [], |r| r.get(0))
        .unwrap();
    let turns: i64 = history
        .query_row(
            "SELECT count(*) FROM messages WHERE role = 'user' AND images IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!((pictures, turns), (1, 1), "{stdout}");
    let replies: i64 = history
        .query_row(
            "SELECT count(*) FROM messages WHERE role = 'assistant'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        replies, 2,
        "the picture and `hello` were answered: {stdout}"
    );
}

/// `/image` in `hearth chat` on a model without eyes: the refusal is said
/// once (it was the reply and a log line too); the chat goes on.
#[test]
fn a_picture_in_the_chat_of_a_blind_model_is_refused_once() {
    use std::io::Write;
    let _turn = lock();
    let s = common::Sandbox::new();
    let photo = s.path("red.png");
    std::fs::write(&photo, png(100, 80, [200, 30, 30])).unwrap();
    let config = s.config(&format!(
        "[model]\npath = \"{}\"\n[generation]\ntemperature = 0.0\nmax_tokens = 8\n",
        common::model(common::SMOLLM2).display()
    ));
    let mut child = s
        .hearth_process()
        .arg("--config")
        .arg(config)
        .arg("chat")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let input = format!("/image {} What is this?\nSay hi.\n/quit\n", photo.display());
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let both = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    common::assert_no_panic(&both);
    assert!(out.status.success(), "{both}");
    assert_eq!(both.matches("cannot see images").count(), 1, "{both}");
}
