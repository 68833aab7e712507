//! A real daemon over the fake Bot API server, for the Telegram end-to-end
//! tests: [`Bot`] starts it and reads its reports; [`Streamer`] and
//! [`Recorder`] are providers those tests need.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hearth::channels::{Channel, TelegramChannel};
use hearth::chat::{ChatRequest, ChatStream, FinishReason, StreamEvent, Usage};
use hearth::config::{Config, Secret, StreamMode};
use hearth::daemon::Daemon;
use hearth::dispatch::Report;
use hearth::pipeline::{Outcome, ProviderSet, RuntimeBuilder};
use hearth::providers::Provider;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::pipeline::{builder, config, local};
use super::telegram_fake::{Call, FakeTelegram, Incoming, TOKEN, visible};

/// How long any single expected event may take (the machine is shared).
pub const WAIT: Duration = Duration::from_secs(60);

/// A daemon over the fake, and what it reports.
pub struct Bot {
    pub fake: FakeTelegram,
    pub daemon: Daemon,
    pub reports: mpsc::UnboundedReceiver<Report>,
    pub _home: tempfile::TempDir,
}

/// The Telegram section of the config, pointed at the fake.
pub fn telegram_config(
    cfg: &mut Config,
    fake: &FakeTelegram,
    allowed: &[&str],
    stream: StreamMode,
) {
    let t = &mut cfg.telegram;
    t.bot_token = Some(Secret::new(TOKEN));
    t.api_url = fake.url.clone();
    t.allowed_users = allowed.iter().map(|a| a.to_string()).collect();
    t.stream_mode = stream;
    t.draft_update_interval_ms = 300;
}

/// Starts a daemon whose runtime has one Telegram channel built from
/// `cfg` the way `hearth daemon` builds it (short long polls).
pub fn start(
    fake: FakeTelegram,
    home: tempfile::TempDir,
    cfg: Config,
    providers: Arc<dyn ProviderSet>,
    extra: impl FnOnce(RuntimeBuilder) -> RuntimeBuilder,
) -> Bot {
    let channel: Arc<dyn Channel> = channel(&cfg);
    let runtime = extra(builder(cfg, providers).channel(channel))
        .build()
        .expect("runtime");
    let (tx, reports) = mpsc::unbounded_channel();
    Bot {
        fake,
        daemon: Daemon::start(runtime, Some(tx)),
        reports,
        _home: home,
    }
}

/// The Telegram channel `cfg` describes, with short long polls.
pub fn channel(cfg: &Config) -> Arc<TelegramChannel> {
    let mut settings = hearth::daemon::telegram_settings(cfg).expect("telegram settings");
    settings.poll_timeout = Duration::from_secs(2);
    Arc::new(TelegramChannel::new(settings).expect("telegram channel"))
}

/// The texts the bot sent to `chat`, as the user sees them.
pub fn sent_to(fake: &FakeTelegram, chat: i64) -> Vec<String> {
    fake.ok_calls_of("sendMessage")
        .iter()
        .filter(|c| c.i64("chat_id") == Some(chat))
        .map(shown)
        .collect()
}

/// A bot with one provider, `local`.
pub async fn bot(allowed: &[&str], stream: StreamMode, provider: Arc<dyn Provider>) -> Bot {
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    telegram_config(&mut cfg, &fake, allowed, stream);
    start(fake, home, cfg, local(provider), |b| b)
}

impl Bot {
    /// The next `n` reports.
    pub async fn reports(&mut self, n: usize) -> Vec<Report> {
        let mut out = Vec::new();
        while out.len() < n {
            match tokio::time::timeout(WAIT, self.reports.recv()).await {
                Ok(Some(r)) => out.push(r),
                _ => panic!(
                    "only {} of {n} reports arrived: {out:?}\ncalls: {:?}",
                    out.len(),
                    self.methods()
                ),
            }
        }
        out
    }

    /// Sends a user message and waits for its report.
    pub async fn ask(&mut self, user: i64, text: &str) -> (String, Outcome) {
        let (_, message) = self.fake.inject(Incoming::text(user, text));
        let report = self.reports(1).await.remove(0);
        assert_eq!(report.message_id, format!("{user}:{message}"), "{text}");
        (report.message_id, report.outcome)
    }

    /// The texts the bot sent to `chat`, as the user sees them.
    pub fn sent_to(&self, chat: i64) -> Vec<String> {
        sent_to(&self.fake, chat)
    }

    pub fn methods(&self) -> Vec<String> {
        self.fake.calls().into_iter().map(|c| c.method).collect()
    }

    /// No report arrives for a while.
    pub async fn quiet(&mut self, for_: Duration) {
        if let Ok(Some(r)) = tokio::time::timeout(for_, self.reports.recv()).await {
            panic!("an unexpected report: {r:?}");
        }
    }
}

/// A sent or edited text as the user sees it.
pub fn shown(call: &Call) -> String {
    let text = call.str("text").unwrap_or_default();
    match call.str("parse_mode").as_deref() {
        Some("HTML") => visible(&text),
        _ => text,
    }
}

pub fn emoji(call: &Call) -> Option<String> {
    call.params["reaction"][0]["emoji"]
        .as_str()
        .map(str::to_string)
}

/// Streams `words` one delta at a time, `gap` apart.
pub struct Streamer {
    pub words: Vec<String>,
    pub gap: Duration,
}

impl Provider for Streamer {
    fn name(&self) -> &str {
        "streamer"
    }

    fn chat(&self, _: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let (tx, rx) = mpsc::channel(64);
        let words = self.words.clone();
        let gap = self.gap;
        tokio::spawn(async move {
            for (i, word) in words.into_iter().enumerate() {
                tokio::select! {
                    _ = tokio::time::sleep(gap) => {}
                    _ = cancel.cancelled() => return,
                }
                let delta = if i == 0 { word } else { format!(" {word}") };
                let _ = tx.send(StreamEvent::TextDelta(delta)).await;
            }
            let _ = tx
                .send(StreamEvent::Done {
                    usage: Usage::default(),
                    finish: FinishReason::Stop,
                })
                .await;
        });
        ChatStream::new(rx)
    }
}

/// Records the requests a provider is asked.
pub struct Recorder<P> {
    pub requests: Mutex<Vec<ChatRequest>>,
    pub inner: P,
}

impl<P: Provider> Provider for Recorder<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn chat(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.chat(request, cancel)
    }
}
