//! The message bus: one bounded queue from every listener to the
//! dispatcher. When it is full, listeners wait (backpressure), so no
//! message is dropped.
//!
//! Listeners reach it through an [`Intake`] whose sink ([`InboxSink`])
//! records each message of a durable channel in the inbox before queueing
//! it. The record and the queueing overlap: the message is queued as soon
//! as the inbox knows it is new, and `accept` returns once the record is
//! on disk. Nothing is sent before that, since every send is recorded
//! after the arrival by the same writer.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::channels::intake::Sink;
use crate::channels::{Accepted, Channel, ChannelMessage, Closed, SendMessage};
use crate::inbox::{Inbound, Inbox, InboxError};
use crate::retry::RetryPolicy;
use futures::future::BoxFuture;

/// Messages waiting for the dispatcher, at most.
pub const BUS_CAPACITY: usize = 100;

pub fn bus() -> (mpsc::Sender<Inbound>, mpsc::Receiver<Inbound>) {
    mpsc::channel(BUS_CAPACITY)
}

/// Records messages of the durable channels, then queues them.
pub struct InboxSink {
    inbox: Arc<Inbox>,
    /// The durable channels, by name: their messages are recorded, and
    /// told when that cannot be done.
    durable: HashMap<String, Arc<dyn Channel>>,
    bus: mpsc::Sender<Inbound>,
}

/// The waits between tries to record a message whose record could not be
/// written (a full disk): from 1 s, doubling to 30 s.
const RECORD_RETRY: RetryPolicy = RetryPolicy::new(Duration::from_secs(1), Duration::from_secs(30));

/// What a sender is told, once, while their message cannot be recorded.
pub const UNRECORDED_NOTICE: &str = "⚠️ hearth cannot store your message right now: the disk where it keeps its data is full or failing. It will be answered as soon as it can be stored; nothing needs to be sent again.";

/// Why one try to record a message did not take it.
enum NotTaken {
    Closed,
    Unrecorded(InboxError),
}

impl InboxSink {
    /// `durable`: the channels whose messages are recorded.
    pub fn new(
        inbox: Arc<Inbox>,
        durable: impl IntoIterator<Item = Arc<dyn Channel>>,
        bus: mpsc::Sender<Inbound>,
    ) -> Self {
        Self {
            inbox,
            durable: durable
                .into_iter()
                .map(|c| (c.name().to_string(), c))
                .collect(),
            bus,
        }
    }

    /// Records and queues `message`. A record that cannot be written is
    /// tried again, waiting longer each time, and the sender is told once:
    /// the message is not acknowledged meanwhile (its platform keeps it,
    /// and the listener takes nothing newer), so nothing is lost or
    /// answered out of turn.
    async fn record(&self, message: ChannelMessage) -> Result<Accepted, Closed> {
        let Some(channel) = self.durable.get(&message.channel) else {
            self.bus
                .send(Inbound::unrecorded(message))
                .await
                .map_err(|_| Closed)?;
            return Ok(Accepted::Queued);
        };
        let mut retry = RECORD_RETRY.backoff();
        loop {
            let error = match self.try_record(&message).await {
                Ok(accepted) => return Ok(accepted),
                Err(NotTaken::Closed) => return Err(Closed),
                Err(NotTaken::Unrecorded(e)) => e,
            };
            let wait = retry.failed();
            tracing::error!(
                error = %error,
                wait_secs = wait.as_secs(),
                "an incoming message could not be recorded; trying again"
            );
            if retry.failures() == 1 {
                let notice = SendMessage {
                    in_reply_to: None,
                    ..SendMessage::reply_to(&message, UNRECORDED_NOTICE)
                };
                if let Err(e) = channel.send(&notice).await {
                    tracing::warn!(error = %e, "cannot tell the sender that their message waits");
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.bus.closed() => return Err(Closed),
            }
        }
    }

    /// One try: the record is written while the message is queued (a turn
    /// whose record then fails sends nothing; see [`Inbox::holds`]).
    async fn try_record(&self, message: &ChannelMessage) -> Result<Accepted, NotTaken> {
        let admission = self
            .inbox
            .admit(message)
            .await
            .map_err(NotTaken::Unrecorded)?;
        if let Some(known) = admission.known {
            tracing::info!(
                channel = message.channel,
                id = message.id,
                state = known.state.as_str(),
                "a message the inbox already holds came again; not queued twice"
            );
            return Ok(Accepted::Known { reply: known.reply });
        }
        let queued = self
            .bus
            .send(Inbound {
                message: message.clone(),
                recorded: true,
                late: false,
                spoken: false,
            })
            .await;
        match admission.synced.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(NotTaken::Unrecorded(e)),
            Err(_) => return Err(NotTaken::Closed),
        }
        if queued.is_err() {
            tracing::info!("the daemon is stopping; a recorded message waits for the next start");
        }
        Ok(Accepted::Queued)
    }
}

impl Sink for InboxSink {
    fn accept(&self, message: ChannelMessage) -> BoxFuture<'_, Result<Accepted, Closed>> {
        Box::pin(self.record(message))
    }

    fn is_closed(&self) -> bool {
        self.bus.is_closed()
    }

    fn closed(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.bus.closed())
    }
}
