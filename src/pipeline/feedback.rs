//! What the user sees while a reply is being made: "typing…" refreshed
//! every 4 s, the reply streaming into a draft where the channel supports
//! it, and `show_tool_calls` notices.
//!
//! The provider is wrapped ([`Tee`]) so text deltas reach the draft as they
//! arrive; tool notices come from the loop's `before_tool_call` hook. Both
//! feed one task per message, which owns every channel call.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::sanitize;
use crate::channels::{Channel, ChannelMessage, SendMessage};
use crate::chat::{ChatRequest, ChatStream, StreamEvent};
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
            while let Some(event) = upstream.next().await {
                match &event {
                    StreamEvent::TextDelta(text) => {
                        if !first_text.swap(true, Ordering::Relaxed) {
                            metrics.first_token(began.elapsed().as_secs_f64());
                        }
                        let _ = progress.send(Progress::Text(text.clone()));
                    }
                    StreamEvent::Done { usage, .. } => metrics.usage(usage),
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
    stop: CancellationToken,
    task: tokio::task::JoinHandle<Option<String>>,
}

impl Feedback {
    /// Starts typing, drafts (when the channel streams them) and notices.
    /// A draft's id is recorded in `record`'s inbox entry, so that a
    /// restart can remove a half-written draft.
    pub fn start(
        channel: Arc<dyn Channel>,
        message: &ChannelMessage,
        mut progress: mpsc::UnboundedReceiver<Progress>,
        record: Option<(Arc<Inbox>, ChannelMessage)>,
    ) -> Self {
        let stop = CancellationToken::new();
        let policy = channel.policy();
        let drafts = policy.stream_drafts && channel.supports_drafts();
        let recipient = message.reply_target.clone();
        let thread = message.thread_ts.clone();
        let message_id = message.id.clone();
        let done = stop.clone();
        let task = tokio::spawn(async move {
            let mut draft: Option<String> = None;
            let mut text = String::new();
            let mut shown = String::new();
            // Typing first, whatever else is ready: a quick reply must not
            // race it away (`select!` picks among ready branches at random).
            let _ = channel.start_typing(&recipient, thread.as_deref()).await;
            let mut typing = tokio::time::interval_at(
                tokio::time::Instant::now() + TYPING_REFRESH,
                TYPING_REFRESH,
            );
            loop {
                tokio::select! {
                    _ = done.cancelled() => break,
                    _ = typing.tick() => {
                        let _ = channel.start_typing(&recipient, thread.as_deref()).await;
                    }
                    event = progress.recv() => match event {
                        None => break,
                        Some(Progress::RoundStarted) => text.clear(),
                        Some(Progress::Tool { name, arguments }) if policy.show_tool_calls => {
                            let mut notice = SendMessage::new(recipient.clone(), format!("🔧 {name}…"));
                            notice.thread_ts = thread.clone();
                            notice.in_reply_to = Some(message_id.clone());
                            let _ = channel.tool_notice(&notice, &name, &arguments).await;
                        }
                        Some(Progress::ToolDone { name, ok, output }) if policy.show_tool_calls => {
                            channel.tool_finished(&message_id, &name, ok, &output).await;
                        }
                        Some(Progress::Tool { .. } | Progress::ToolDone { .. }) => {}
                        Some(Progress::Text(delta)) if drafts => {
                            text.push_str(&delta);
                            let visible = sanitize::draft(&text);
                            if visible.is_empty() || visible == shown {
                                continue;
                            }
                            match &draft {
                                None => {
                                    let mut first = SendMessage::new(recipient.clone(), visible.clone());
                                    first.thread_ts = thread.clone();
                                    first.in_reply_to = Some(message_id.clone());
                                    if let Ok(id) = channel.send_draft(&first).await {
                                        if let Some((inbox, message)) = &record {
                                            inbox.draft(message, &id);
                                        }
                                        draft = Some(id);
                                    }
                                }
                                Some(id) => {
                                    let _ = channel.update_draft(&recipient, id, &visible).await;
                                }
                            }
                            shown = visible;
                        }
                        Some(Progress::Text(_)) => {}
                    }
                }
            }
            let _ = channel.stop_typing(&recipient).await;
            draft
        });
        Self { stop, task }
    }

    /// Stops typing and notices; returns the draft's id, if one was posted.
    pub async fn finish(self) -> Option<String> {
        self.stop.cancel();
        self.task.await.ok().flatten()
    }
}
