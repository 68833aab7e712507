//! What the user sees while a reply is being made, through whatever the
//! channel offers: "typing…" refreshed every 4 s ([`Presence`]); the reply
//! as typed events to a client that streams ([`ReplyStream`]), or in a
//! draft edited in place ([`Drafts`]); tool notices.
//!
//! The provider is wrapped ([`Tee`]) so text reaches the task as it
//! arrives; tool notices come from the loop's tool-call hooks. Both feed one
//! task per message, which owns every channel call.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::visible::Visible;
use crate::channels::{Channel, ChannelMessage, ReplyEvent, SendMessage};
use crate::chat::{ChatRequest, ChatStream, FinishReason, StreamEvent, Usage};
use crate::inbox::Inbox;
use crate::metrics::Metrics;
use crate::providers::Provider;

/// How often "typing…" is refreshed (platforms expire it after ~5 s).
pub const TYPING_REFRESH: Duration = Duration::from_secs(4);

/// Something that happened while the reply was being made.
#[derive(Debug)]
pub enum Progress {
    /// A model round began: the draft restarts from empty.
    RoundStarted,
    Text(String),
    /// The round's first reasoning (what the model thinks is not shown).
    Reasoning,
    /// A tool is about to run with these arguments.
    Tool {
        name: String,
        arguments: serde_json::Value,
    },
    /// A tool call ended: its result, or why it did not run.
    ToolDone {
        name: String,
        ok: bool,
        output: String,
    },
    /// A model round ended: what it cost and why it ended.
    Round {
        usage: Usage,
        finish: FinishReason,
    },
    /// The reply is made: its text, when there is one to show.
    End(Option<String>),
}

/// A provider whose text also goes to a progress channel, and whose
/// replies are counted: the message's first text, token counts and speed.
pub struct Tee {
    pub inner: Arc<dyn Provider>,
    pub progress: mpsc::UnboundedSender<Progress>,
    pub metrics: Arc<Metrics>,
    /// When the message was taken up.
    pub began: Instant,
    /// Whether the message's first text was counted.
    pub first_text: Arc<AtomicBool>,
}

impl Tee {
    pub fn new(
        inner: Arc<dyn Provider>,
        progress: mpsc::UnboundedSender<Progress>,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            inner,
            progress,
            metrics,
            began: Instant::now(),
            first_text: Arc::default(),
        }
    }
}

impl Provider for Tee {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn supports_native_tools(&self) -> bool {
        self.inner.supports_native_tools()
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.inner.count_tokens(text)
    }

    fn context_window(&self) -> Option<u32> {
        self.inner.context_window()
    }

    fn sees_images(&self) -> bool {
        self.inner.sees_images()
    }

    fn exclusive(
        &self,
        work: crate::providers::Work,
    ) -> futures::future::BoxFuture<'static, Result<(), crate::chat::ProviderError>> {
        self.inner.exclusive(work)
    }

    fn chat(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        if request.internal {
            // History compression: nothing the user should see.
            return self.inner.chat(request, cancel);
        }
        let mut upstream = self.inner.chat(request, cancel);
        let progress = self.progress.clone();
        let _ = progress.send(Progress::RoundStarted);
        let (tx, rx) = mpsc::channel(64);
        let (metrics, began, first_text) =
            (self.metrics.clone(), self.began, self.first_text.clone());
        tokio::spawn(async move {
            let mut reasoning = false;
            while let Some(event) = upstream.next().await {
                match &event {
                    StreamEvent::ReasoningDelta(_) if !reasoning => {
                        reasoning = true;
                        let _ = progress.send(Progress::Reasoning);
                    }
                    StreamEvent::TextDelta(text) => {
                        if !first_text.swap(true, Ordering::Relaxed) {
                            metrics.first_token(began.elapsed().as_secs_f64());
                        }
                        let _ = progress.send(Progress::Text(text.clone()));
                    }
                    StreamEvent::Done { usage, finish } => {
                        metrics.usage(usage);
                        tracing::debug!(
                            prompt_tokens = usage.prompt_tokens,
                            cached_tokens = usage.cached_tokens,
                            completion_tokens = usage.completion_tokens,
                            "a model round ended"
                        );
                        let _ = progress.send(Progress::Round {
                            usage: *usage,
                            finish: *finish,
                        });
                    }
                    _ => {}
                }
                if tx.send(event).await.is_err() {
                    return;
                }
            }
        });
        ChatStream::new(rx)
    }
}

/// The live feedback of one message, running until [`Feedback::finish`].
pub struct Feedback {
    progress: mpsc::UnboundedSender<Progress>,
    task: tokio::task::JoinHandle<Option<String>>,
}

impl Feedback {
    /// Starts typing, the streamed reply and notices, as the channel
    /// offers them. A draft's id is recorded in `record`'s inbox entry, so
    /// that a restart can remove a half-written draft.
    pub fn start(
        channel: Arc<dyn Channel>,
        message: &ChannelMessage,
        record: Option<(Arc<Inbox>, ChannelMessage)>,
    ) -> Self {
        let (progress, events) = mpsc::unbounded_channel();
        let show = Show {
            channel,
            message: message.clone(),
            record,
            visible: Visible::default(),
            draft: None,
        };
        let task = tokio::spawn(show.run(events));
        Self { progress, task }
    }

    /// Where the reply's progress goes.
    pub fn progress(&self) -> mpsc::UnboundedSender<Progress> {
        self.progress.clone()
    }

    /// Ends typing and notices once everything sent before was shown;
    /// `reply`: the reply's text, whose last piece a stream then gets.
    /// Returns the draft's id, if one was posted.
    pub async fn finish(self, reply: Option<&str>) -> Option<String> {
        let _ = self.progress.send(Progress::End(reply.map(str::to_string)));
        self.task.await.ok().flatten()
    }
}

/// The task that shows one reply's progress on its channel.
struct Show {
    channel: Arc<dyn Channel>,
    message: ChannelMessage,
    record: Option<(Arc<Inbox>, ChannelMessage)>,
    visible: Visible,
    /// The draft's id, once one was posted.
    draft: Option<String>,
}

impl Show {
    async fn run(mut self, mut events: mpsc::UnboundedReceiver<Progress>) -> Option<String> {
        let presence = self.channel.clone();
        let presence = presence.presence();
        let (recipient, thread) = (
            self.message.reply_target.clone(),
            self.message.thread_ts.clone(),
        );
        // Typing first, whatever else is ready: a quick reply must not
        // race it away (`select!` picks among ready branches at random).
        if let Some(p) = presence {
            let _ = p.start_typing(&recipient, thread.as_deref()).await;
        }
        let mut typing =
            tokio::time::interval_at(tokio::time::Instant::now() + TYPING_REFRESH, TYPING_REFRESH);
        loop {
            tokio::select! {
                _ = typing.tick(), if presence.is_some() => {
                    if let Some(p) = presence {
                        let _ = p.start_typing(&recipient, thread.as_deref()).await;
                    }
                }
                event = events.recv() => match event {
                    None | Some(Progress::End(None)) => break,
                    Some(Progress::End(Some(reply))) => {
                        if let Some(rest) = self.visible.rest(&reply) {
                            self.stream(ReplyEvent::Text(rest)).await;
                        }
                        break;
                    }
                    Some(event) => self.show(event).await,
                }
            }
        }
        if let Some(p) = presence {
            let _ = p.stop_typing(&recipient).await;
        }
        self.draft
    }

    /// Whether the reply streams to this channel as events.
    fn streams(&self) -> bool {
        self.channel.policy().stream_replies && self.channel.stream().is_some()
    }

    async fn stream(&self, event: ReplyEvent) {
        if let Some(stream) = self.channel.stream().filter(|_| self.streams()) {
            stream.event(&self.message.id, &event).await;
        }
    }

    async fn show(&mut self, event: Progress) {
        let policy = self.channel.policy();
        match event {
            Progress::RoundStarted => self.visible.round(),
            Progress::Text(delta) => {
                let before = self.visible.text().to_string();
                let piece = self.visible.push(&delta);
                if self.streams() {
                    if let Some(piece) = piece {
                        self.stream(ReplyEvent::Text(piece)).await;
                    }
                } else if policy.stream_replies && self.visible.text() != before {
                    self.draft().await;
                }
            }
            Progress::Reasoning => self.stream(ReplyEvent::Reasoning).await,
            Progress::Round { usage, finish } => {
                self.stream(ReplyEvent::Round { usage, finish }).await
            }
            Progress::Tool { name, arguments } if policy.show_tool_calls => {
                if self.streams() {
                    self.stream(ReplyEvent::ToolStarted { name, arguments })
                        .await;
                } else {
                    let notice = SendMessage::reply_to(&self.message, format!("🔧 {name}…"));
                    let _ = self.channel.send(&notice).await;
                }
            }
            Progress::ToolDone { name, ok, output } if policy.show_tool_calls => {
                self.stream(ReplyEvent::ToolFinished { name, ok, output })
                    .await;
            }
            Progress::Tool { .. } | Progress::ToolDone { .. } | Progress::End(_) => {}
        }
    }

    /// Shows the round's text in the draft, posting it first if need be.
    async fn draft(&mut self) {
        let Some(drafts) = self.channel.drafts() else {
            return;
        };
        let text = self.visible.text().to_string();
        if text.is_empty() {
            return;
        }
        match &self.draft {
            None => {
                let first = SendMessage::reply_to(&self.message, text);
                if let Ok(id) = drafts.send_draft(&first).await {
                    if let Some((inbox, message)) = &self.record {
                        inbox.draft(message, &id);
                    }
                    self.draft = Some(id);
                }
            }
            Some(id) => {
                let _ = drafts
                    .update_draft(&self.message.reply_target, id, &text)
                    .await;
            }
        }
    }
}
