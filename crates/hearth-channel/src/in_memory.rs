//! A channel that lives in memory: tests (and the loopback channel of the
//! daemon) inject messages and read back everything the pipeline did.
//!
//! It records sends, reactions, typing and draft edits in one ordered log,
//! can make `listen` fail a set number of times (to exercise the
//! supervisor's backoff), and can refuse sends (to exercise delivery
//! confirmation). Approval questions are answered from a script (see
//! [`InMemoryChannel::answer_approvals`]); with none it cannot ask, like a
//! channel without a person at it.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, mpsc};

use super::approval::{Answer, ApprovalRequest};
use super::{
    Channel, ChannelError, ChannelMessage, ChannelPolicy, Drafts, Intake, Presence, SendMessage,
};
use futures::future::BoxFuture;

/// One thing the pipeline did to the channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChannelEvent {
    Sent(SendMessage),
    Reaction {
        message_id: String,
        emoji: String,
    },
    Typing {
        recipient: String,
    },
    DraftStarted {
        id: String,
        text: String,
    },
    DraftUpdated {
        id: String,
        text: String,
    },
    DraftFinalized {
        id: String,
        text: String,
    },
    DraftCancelled {
        id: String,
    },
    /// An approval question, and the scripted answer it got.
    Asked {
        request: ApprovalRequest,
        answer: Option<Answer>,
    },
}

pub struct InMemoryChannel {
    name: String,
    policy: ChannelPolicy,
    drafts: bool,
    durable: bool,
    inbox_tx: mpsc::UnboundedSender<ChannelMessage>,
    inbox_rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<ChannelMessage>>,
    listen_failures_left: AtomicU32,
    listen_starts: Mutex<Vec<tokio::time::Instant>>,
    refuse_sends: AtomicBool,
    events: Mutex<Vec<ChannelEvent>>,
    changed: Notify,
    next_draft: AtomicU32,
    next_id: AtomicU32,
    /// Tells this channel's message ids from another run's.
    run: String,
    /// Answers to the next approval questions, in order (`None`: no
    /// answer in time), then `always`.
    answers: Mutex<VecDeque<Option<Answer>>>,
    always: Mutex<Option<Answer>>,
}

impl InMemoryChannel {
    pub fn new(name: impl Into<String>) -> Self {
        let (inbox_tx, inbox_rx) = mpsc::unbounded_channel();
        Self {
            name: name.into(),
            policy: ChannelPolicy::default(),
            drafts: false,
            durable: true,
            inbox_tx,
            inbox_rx: tokio::sync::Mutex::new(inbox_rx),
            listen_failures_left: AtomicU32::new(0),
            listen_starts: Mutex::default(),
            refuse_sends: AtomicBool::new(false),
            events: Mutex::default(),
            changed: Notify::new(),
            next_draft: AtomicU32::new(1),
            next_id: AtomicU32::new(1),
            run: uuid::Uuid::new_v4().simple().to_string()[..8].to_string(),
            answers: Mutex::default(),
            always: Mutex::default(),
        }
    }

    pub fn with_policy(mut self, policy: ChannelPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Its messages are not kept in the durable inbox (like the CLI's).
    pub fn ephemeral(mut self) -> Self {
        self.durable = false;
        self
    }

    /// Turns draft support on (replies stream into edited drafts).
    pub fn with_drafts(mut self) -> Self {
        self.drafts = true;
        self
    }

    /// The next `n` calls to `listen` fail at once.
    pub fn fail_listen(&self, n: u32) {
        self.listen_failures_left.store(n, Ordering::SeqCst);
    }

    /// When each `listen` call started (tokio time, so paused clocks work).
    pub fn listen_starts(&self) -> Vec<tokio::time::Instant> {
        lock(&self.listen_starts).clone()
    }

    /// Makes `send` fail from now on (or succeed again).
    pub fn refuse_sends(&self, refuse: bool) {
        self.refuse_sends.store(refuse, Ordering::SeqCst);
    }

    /// The answers the next approval questions get, in order (`None`: the
    /// question times out).
    pub fn answer_approvals(&self, answers: impl IntoIterator<Item = Option<Answer>>) {
        lock(&self.answers).extend(answers);
    }

    /// Every question without a scripted answer gets `answer`.
    pub fn always_answer(self, answer: Answer) -> Self {
        *lock(&self.always) = Some(answer);
        self
    }

    /// The approval questions asked so far.
    pub fn asked(&self) -> Vec<ApprovalRequest> {
        lock(&self.events)
            .iter()
            .filter_map(|e| match e {
                ChannelEvent::Asked { request, .. } => Some(request.clone()),
                _ => None,
            })
            .collect()
    }

    /// Queues a message as if `sender` wrote `text` in a private chat.
    pub fn inject_text(&self, sender: &str, text: &str) -> ChannelMessage {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let message = ChannelMessage {
            // Unique across channels and restarts, as a platform's ids are
            // (the inbox knows a message by its id).
            id: format!("m{id}-{}", &self.run),
            sender: sender.to_string(),
            reply_target: sender.to_string(),
            content: text.to_string(),
            channel: self.name.clone(),
            timestamp: 0,
            thread_ts: None,
            interruption_scope_id: None,
            initiator: Default::default(),
            asked: None,
            images: Vec::new(),
            audio: None,
            documents: Vec::new(),
        };
        self.inject(message.clone());
        message
    }

    /// Queues a message for the next (or current) `listen`.
    pub fn inject(&self, message: ChannelMessage) {
        let _ = self.inbox_tx.send(message);
    }

    pub fn events(&self) -> Vec<ChannelEvent> {
        lock(&self.events).clone()
    }

    /// The messages sent so far (drafts finalised count as sent).
    pub fn sent(&self) -> Vec<SendMessage> {
        lock(&self.events)
            .iter()
            .filter_map(|e| match e {
                ChannelEvent::Sent(m) => Some(m.clone()),
                _ => None,
            })
            .collect()
    }

    /// Waits until `done` holds for the event log, or `limit` passes.
    /// Returns whether it held.
    pub async fn wait_until(
        &self,
        limit: Duration,
        mut done: impl FnMut(&[ChannelEvent]) -> bool,
    ) -> bool {
        let wait = async {
            loop {
                let notified = self.changed.notified();
                if done(&lock(&self.events)) {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(limit, wait).await.is_ok()
    }

    /// Waits until `n` messages were sent to `recipient`.
    pub async fn wait_for_sent_to(&self, recipient: &str, n: usize, limit: Duration) -> bool {
        self.wait_until(limit, |events| {
            events
                .iter()
                .filter(|e| matches!(e, ChannelEvent::Sent(m) if m.recipient == recipient))
                .count()
                >= n
        })
        .await
    }

    fn record(&self, event: ChannelEvent) {
        lock(&self.events).push(event);
        self.changed.notify_waiters();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Channel for InMemoryChannel {
    fn name(&self) -> &str {
        &self.name
    }

    fn send<'a>(&'a self, message: &'a SendMessage) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            if self.refuse_sends.load(Ordering::SeqCst) {
                return Err(ChannelError::Rejected("sends are refused".into()));
            }
            self.record(ChannelEvent::Sent(message.clone()));
            Ok(())
        })
    }

    fn listen(&self, intake: Intake) -> BoxFuture<'_, Result<(), ChannelError>> {
        Box::pin(async move {
            lock(&self.listen_starts).push(tokio::time::Instant::now());
            let failing = self
                .listen_failures_left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            if failing {
                return Err(ChannelError::Network("scripted listen failure".into()));
            }
            let mut inbox = self.inbox_rx.lock().await;
            loop {
                tokio::select! {
                    message = inbox.recv() => match message {
                        Some(m) => {
                            if intake.accept(m).await.is_err() {
                                return Ok(());
                            }
                        }
                        None => return Ok(()),
                    },
                    _ = intake.closed() => return Ok(()),
                }
            }
        })
    }

    fn policy(&self) -> ChannelPolicy {
        self.policy
    }

    fn durable(&self) -> bool {
        self.durable
    }

    fn ask_approval<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<Option<Answer>, ChannelError>> {
        Box::pin(async move {
            let scripted = lock(&self.answers).pop_front();
            let answer = match scripted.or_else(|| lock(&self.always).map(Some)) {
                Some(answer) => answer,
                None => return Err(ChannelError::Unsupported("asking for approval")),
            };
            self.record(ChannelEvent::Asked {
                request: request.clone(),
                answer,
            });
            Ok(answer)
        })
    }

    fn drafts(&self) -> Option<&dyn Drafts> {
        self.drafts.then_some(self as &dyn Drafts)
    }

    fn presence(&self) -> Option<&dyn Presence> {
        Some(self)
    }
}

impl Drafts for InMemoryChannel {
    fn send_draft<'a>(
        &'a self,
        message: &'a SendMessage,
    ) -> BoxFuture<'a, Result<String, ChannelError>> {
        Box::pin(async move {
            if !self.drafts {
                return Err(ChannelError::Unsupported("drafts"));
            }
            let id = format!("d{}", self.next_draft.fetch_add(1, Ordering::SeqCst));
            self.record(ChannelEvent::DraftStarted {
                id: id.clone(),
                text: message.content.clone(),
            });
            Ok(id)
        })
    }

    fn update_draft<'a>(
        &'a self,
        _recipient: &'a str,
        draft_id: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            self.record(ChannelEvent::DraftUpdated {
                id: draft_id.to_string(),
                text: text.to_string(),
            });
            Ok(())
        })
    }

    fn finalize_draft<'a>(
        &'a self,
        _recipient: &'a str,
        draft_id: &'a str,
        message: &'a SendMessage,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            self.record(ChannelEvent::DraftFinalized {
                id: draft_id.to_string(),
                text: message.content.clone(),
            });
            self.record(ChannelEvent::Sent(message.clone()));
            Ok(())
        })
    }

    fn cancel_draft<'a>(
        &'a self,
        _recipient: &'a str,
        draft_id: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            self.record(ChannelEvent::DraftCancelled {
                id: draft_id.to_string(),
            });
            Ok(())
        })
    }
}

impl Presence for InMemoryChannel {
    fn start_typing<'a>(
        &'a self,
        recipient: &'a str,
        _thread_ts: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            self.record(ChannelEvent::Typing {
                recipient: recipient.to_string(),
            });
            Ok(())
        })
    }

    fn add_reaction<'a>(
        &'a self,
        _recipient: &'a str,
        message_id: &'a str,
        emoji: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            self.record(ChannelEvent::Reaction {
                message_id: message_id.to_string(),
                emoji: emoji.to_string(),
            });
            Ok(())
        })
    }
}
