//! Photos through Telegram, end to end: the fake Bot API server delivers a
//! photo to a real daemon whose model is SmolLM2 with the random test
//! projector. The photo reaches the model as its projector's tokens; a
//! second question decodes only its own text, also after the daemon and
//! its engine restart (the picture comes back from the history, its tokens
//! from the disk cache); the picture is kept in the history's private file
//! and forgotten with the conversation. Hostile pictures get a clear reply
//! while another chat is answered; a model without eyes says so.
#![allow(clippy::unwrap_used)]
// a test: an unwrap is the clearest failure
// Held across the test's awaits on purpose: it serialises the engines of
// the whole test binary, and this runtime is the test's own.
#![allow(clippy::await_holding_lock)]

use crate::common;
use crate::common::pictures::{IMAGE_TOKENS, bomb, jpeg, png, projector};
use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use hearth::chat::{ChatRequest, ChatStream, StreamEvent, Usage};
use hearth::config::{Config, StreamMode};
use hearth::pipeline::{Outcome, StaticProviders};
use hearth::providers::{LocalProvider, Provider};
use support::telegram_bot::{Bot, start, telegram_config};
use support::telegram_fake::{FakeTelegram, Incoming};
use support::{SlowEcho, config, local};
use tokio_util::sync::CancellationToken;

/// The local engine, with the usage of every request it answered.
struct Metered {
    inner: LocalProvider,
    usage: Arc<Mutex<Vec<Usage>>>,
}

impl Provider for Metered {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn chat(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let mut inner = self.inner.chat(request, cancel);
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        let usage = self.usage.clone();
        tokio::spawn(async move {
            while let Some(event) = inner.next().await {
                if let StreamEvent::Done { usage: u, .. } = &event {
                    usage.lock().unwrap().push(*u);
                }
                if tx.send(event).await.is_err() {
                    return;
                }
            }
        });
        ChatStream::new(rx)
    }

    fn supports_native_tools(&self) -> bool {
        self.inner.supports_native_tools()
    }

    fn context_window(&self) -> Option<u32> {
        self.inner.context_window()
    }

    fn sees_images(&self) -> bool {
        self.inner.sees_images()
    }
}

fn seeing_config(home: &Path, fake: &FakeTelegram) -> Config {
    let mut cfg = config(home);
    telegram_config(&mut cfg, fake, &["42", "43"], StreamMode::Off);
    cfg.model.path = common::model(common::SMOLLM2).display().to_string();
    cfg.model.mmproj = Some(projector().display().to_string());
    cfg.model.image_max_pixels = 10_000_000;
    cfg.model.context_size = 2048;
    cfg.generation.max_tokens = 12;
    cfg.generation.temperature = 0.0;
    cfg
}

/// A daemon on `home` with the seeing model, and the usage it records.
async fn seeing_bot(
    fake: FakeTelegram,
    home: tempfile::TempDir,
) -> (Bot, Arc<Metered>, Arc<Mutex<Vec<Usage>>>) {
    let cfg = seeing_config(home.path(), &fake);
    let mut settings = hearth::engine_setup::engine_settings(&cfg).expect("engine settings");
    settings.threads = common::engine_threads();
    let engine = tokio::task::spawn_blocking(move || hearth::engine::Engine::start(settings, None))
        .await
        .unwrap()
        .expect("the engine starts with its projector");
    assert!(engine.info().vision);
    let usage = Arc::new(Mutex::new(Vec::new()));
    let provider = Arc::new(Metered {
        inner: LocalProvider::new(engine),
        usage: usage.clone(),
    });
    let providers = Arc::new(StaticProviders::new().with("local", provider.clone()));
    (start(fake, home, cfg, providers, |b| b), provider, usage)
}

fn photo(user: i64, bytes: Vec<u8>, caption: &str) -> Incoming {
    let mut m = Incoming::text(user, "");
    m.text = None;
    m.photo = Some(bytes);
    m.caption = Some(caption.to_string());
    m
}

/// Sends `message`, waits for its report; the usage of its model call.
async fn turn(bot: &mut Bot, usage: &Mutex<Vec<Usage>>, message: Incoming) -> (Outcome, Usage) {
    let before = usage.lock().unwrap().len();
    bot.fake.inject(message);
    let outcome = bot.reports(1).await.remove(0).outcome;
    let after = usage.lock().unwrap().clone();
    let used = after.get(before).copied().unwrap_or_default();
    (outcome, used)
}

/// Stops the daemon and drops its engine off the async threads.
async fn stop(bot: Bot, provider: Arc<Metered>) -> (FakeTelegram, tempfile::TempDir) {
    let Bot {
        daemon,
        fake,
        _home,
        ..
    } = bot;
    daemon.stop().await;
    let _ = tokio::task::spawn_blocking(move || drop(provider)).await;
    (fake, _home)
}

/// How many pictures the history's file holds, and its mode.
fn pictures_kept(home: &Path) -> (i64, u32) {
    let path = hearth::history::HistoryStore::path_in(&config(home).data_dir);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let n = conn
        .query_row("SELECT count(*) FROM pictures", [], |r| r.get(0))
        .unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    (n, mode)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_telegram_photo_is_seen_cached_across_a_restart_and_kept_privately() {
    let _engine_turn = common::engine_lock();
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let (mut bot, provider, usage) = seeing_bot(fake, home).await;
    let question = "What is in this picture?";
    // The control: the same words without the photo, in another chat.
    let (outcome, text) = turn(&mut bot, &usage, Incoming::text(43, question)).await;
    assert_eq!(outcome, Outcome::Replied);
    let red = png(100, 80, [200, 30, 30]);
    let (outcome, first) = turn(&mut bot, &usage, photo(42, red.clone(), question)).await;
    assert_eq!(outcome, Outcome::Replied, "{:?}", bot.sent_to(42));
    assert_eq!(
        first.prompt_tokens,
        text.prompt_tokens + IMAGE_TOKENS,
        "the photo is the projector's tokens"
    );
    let (outcome, second) = turn(&mut bot, &usage, Incoming::text(42, "What colour?")).await;
    assert_eq!(outcome, Outcome::Replied);
    assert!(
        second.cached_tokens >= first.prompt_tokens,
        "the second question finds the photo cached: {first:?} then {second:?}"
    );
    assert!(second.prompt_tokens - second.cached_tokens < IMAGE_TOKENS);
    let (kept, mode) = pictures_kept(bot._home.path());
    assert_eq!(
        (kept, mode),
        (1, 0o600),
        "kept once, privately, with the history"
    );
    let workspace = config(bot._home.path()).agent.workspace;
    let in_workspace = walk(&workspace)
        .into_iter()
        .filter(|p| std::fs::read(p).is_ok_and(|b| b == red))
        .collect::<Vec<_>>();
    assert!(
        in_workspace.is_empty(),
        "never in a workspace: {in_workspace:?}"
    );

    // A restart: the history gives the photo back, the disk cache its tokens.
    let (fake, home) = stop(bot, provider).await;
    let (mut bot, provider, usage) = seeing_bot(fake, home).await;
    let (outcome, third) = turn(&mut bot, &usage, Incoming::text(42, "And its shape?")).await;
    assert_eq!(outcome, Outcome::Replied);
    assert!(
        third.cached_tokens >= second.prompt_tokens,
        "the photo and both questions come back from disk: {second:?} then {third:?}"
    );
    assert!(third.prompt_tokens - third.cached_tokens < IMAGE_TOKENS);

    // Forgetting the conversation forgets its photo.
    let (outcome, _) = turn(&mut bot, &usage, Incoming::text(42, "/new")).await;
    assert_eq!(outcome, Outcome::Command);
    assert_eq!(
        pictures_kept(bot._home.path()).0,
        0,
        "pruned with the history"
    );
    stop(bot, provider).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_photos_get_a_clear_reply_while_another_chat_is_answered() {
    let _engine_turn = common::engine_lock();
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let (mut bot, provider, usage) = seeing_bot(fake, home).await;
    let good = jpeg(64, 48, [20, 160, 40]);
    let cases: [(&str, Vec<u8>, &str); 3] = [
        ("a decompression bomb", bomb(100_000), "pixels"),
        (
            "a truncated JPEG",
            good[..good.len() * 2 / 3].to_vec(),
            "could not be read",
        ),
        (
            "a text file sent as a photo",
            b"just words".to_vec(),
            "could not be read",
        ),
    ];
    for (case, bytes, why) in cases {
        let (outcome, _) = turn(&mut bot, &usage, photo(42, bytes, "look")).await;
        assert_ne!(outcome, Outcome::Replied, "{case}");
        let said = bot.sent_to(42).pop().unwrap_or_default();
        assert!(said.contains(why), "{case}: {said}");
        // The positive control: the good photo, in another chat, is seen.
        let (outcome, seen) = turn(&mut bot, &usage, photo(43, good.clone(), "look")).await;
        assert_eq!(outcome, Outcome::Replied, "{case}: {:?}", bot.sent_to(43));
        assert!(seen.prompt_tokens > IMAGE_TOKENS, "{case}: {seen:?}");
    }
    // A file over what Telegram hands a bot is refused by hearth itself, at
    // once; the caption still reaches the model.
    let (outcome, _) = turn(&mut bot, &usage, photo(42, vec![0xff; 21 << 20], "big")).await;
    assert_eq!(outcome, Outcome::Replied);
    let said = bot.sent_to(42);
    assert!(
        said.iter().any(|s| s.contains("larger than the 20 MB")),
        "{said:?}"
    );
    // Refused pictures left the history; only chat 43's good photo is kept.
    assert_eq!(pictures_kept(bot._home.path()).0, 1);
    stop(bot, provider).await;
}

#[tokio::test]
async fn a_model_without_eyes_says_so_and_the_chat_goes_on() {
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    telegram_config(&mut cfg, &fake, &["42"], StreamMode::Off);
    let echo = SlowEcho::new("echo", std::time::Duration::from_millis(10));
    let mut bot = start(fake, home, cfg, local(echo.clone()), |b| b);
    bot.fake
        .inject(photo(42, png(10, 10, [1, 2, 3]), "what is it?"));
    bot.reports(1).await;
    let said = bot.sent_to(42).pop().unwrap_or_default();
    assert!(said.contains("cannot see images"), "{said}");
    assert!(said.contains("[model] mmproj"), "{said}");
    // The control: text is answered, and the picture is not sent again.
    let (_, outcome) = bot.ask(42, "hello").await;
    assert_eq!(outcome, Outcome::Replied);
    assert!(bot.sent_to(42).pop().unwrap().contains("hello"));
    bot.daemon.stop().await;
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|e| {
            let p = e.path();
            if p.is_dir() { walk(&p) } else { vec![p] }
        })
        .collect()
}
