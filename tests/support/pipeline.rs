//! Helpers for the dispatcher and pipeline tests: a runtime over a temp
//! data dir, an in-memory channel, and a provider that takes its time.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hearth::channels::InMemoryChannel;
use hearth::chat::{ChatMessage, ChatRequest, ChatStream, FinishReason, Role, StreamEvent, Usage};
use hearth::config::{Config, Environment};
use hearth::daemon::Daemon;
use hearth::dispatch::Report;
use hearth::pipeline::{ProviderSet, RuntimeBuilder, StaticProviders};
use hearth::providers::Provider;
use hearth::security::{Autonomy, SecurityPolicy};
use hearth::tools::ToolContext;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// Replies `echo: <last user message>` after `delay`, unless cancelled;
/// counts how many replies run at once.
pub struct SlowEcho {
    pub name: String,
    pub delay: Duration,
    active: Arc<AtomicUsize>,
    max: Arc<AtomicUsize>,
    requests: Mutex<Vec<ChatRequest>>,
    pub started: Arc<Notify>,
}

impl SlowEcho {
    pub fn new(name: &str, delay: Duration) -> Arc<Self> {
        Arc::new(Self {
            name: name.to_string(),
            delay,
            active: Arc::default(),
            max: Arc::default(),
            requests: Mutex::default(),
            started: Arc::new(Notify::new()),
        })
    }

    pub fn max_concurrent(&self) -> usize {
        self.max.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// The last user message of each request.
    pub fn user_turns(&self) -> Vec<String> {
        self.requests().iter().map(last_user).collect()
    }
}

/// Each message as (role, text), for comparing whole conversations.
pub fn turns(messages: &[ChatMessage]) -> Vec<(Role, &str)> {
    messages
        .iter()
        .map(|m| (m.role, m.content.as_str()))
        .collect()
}

pub fn last_user(request: &ChatRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

impl Provider for SlowEcho {
    fn name(&self) -> &str {
        &self.name
    }

    fn chat(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let text = format!("{}: {}", self.name, last_user(&request));
        self.requests.lock().unwrap().push(request);
        let now = self.active.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(now, Ordering::SeqCst);
        self.started.notify_waiters();
        let (tx, rx) = mpsc::channel(4);
        let active = self.active.clone();
        let delay = self.delay;
        tokio::spawn(async move {
            let finish = tokio::select! {
                _ = tokio::time::sleep(delay) => {
                    let _ = tx.send(StreamEvent::TextDelta(text)).await;
                    FinishReason::Stop
                }
                _ = cancel.cancelled() => FinishReason::Cancelled,
            };
            active.fetch_sub(1, Ordering::SeqCst);
            let _ = tx
                .send(StreamEvent::Done {
                    usage: Usage::default(),
                    finish,
                })
                .await;
        });
        ChatStream::new(rx)
    }
}

/// A config over a temp home (data dir and workspace inside it).
pub fn config(home: &Path) -> Config {
    Config::defaults(&Environment::with_home(home)).unwrap()
}

pub fn tool_context(config: &Config) -> ToolContext {
    std::fs::create_dir_all(&config.agent.workspace).unwrap();
    ToolContext::new(
        SecurityPolicy::new(&config.agent.workspace, Autonomy::Supervised, None).unwrap(),
        Duration::from_secs(10),
    )
}

pub fn builder(config: Config, providers: Arc<dyn ProviderSet>) -> RuntimeBuilder {
    let tools = tool_context(&config);
    RuntimeBuilder::new(config, providers, tools)
}

pub fn local(provider: Arc<dyn Provider>) -> Arc<dyn ProviderSet> {
    Arc::new(StaticProviders::new().with("local", provider))
}

/// A daemon with one in-memory channel named `mem`, and its reports.
pub fn start(
    builder: RuntimeBuilder,
    channel: Arc<InMemoryChannel>,
) -> (Daemon, mpsc::UnboundedReceiver<Report>) {
    let runtime = builder.channel(channel).build().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    (Daemon::start(runtime, Some(tx)), rx)
}

/// Reads `n` reports (fails the test after a generous wait).
pub async fn reports(rx: &mut mpsc::UnboundedReceiver<Report>, n: usize) -> Vec<Report> {
    let mut out = Vec::new();
    while out.len() < n {
        match tokio::time::timeout(Duration::from_secs(600), rx.recv()).await {
            Ok(Some(r)) => out.push(r),
            _ => panic!("only {} of {n} reports arrived: {out:?}", out.len()),
        }
    }
    out
}

pub fn texts(channel: &InMemoryChannel, to: &str) -> Vec<String> {
    channel
        .sent()
        .into_iter()
        .filter(|m| m.recipient == to)
        .map(|m| m.content)
        .collect()
}
