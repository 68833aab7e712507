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

use std::collections::HashSet;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::channels::intake::Sink;
use crate::channels::{Accepted, ChannelMessage, Closed};
use crate::inbox::{Inbound, Inbox};
use futures::future::BoxFuture;

/// Messages waiting for the dispatcher, at most.
pub const BUS_CAPACITY: usize = 100;

pub fn bus() -> (mpsc::Sender<Inbound>, mpsc::Receiver<Inbound>) {
    mpsc::channel(BUS_CAPACITY)
}

/// Records messages of the durable channels, then queues them.
pub struct InboxSink {
    inbox: Arc<Inbox>,
    durable: HashSet<String>,
    bus: mpsc::Sender<Inbound>,
}

impl InboxSink {
    /// `durable`: the names of the channels whose messages are recorded.
    pub fn new(inbox: Arc<Inbox>, durable: HashSet<String>, bus: mpsc::Sender<Inbound>) -> Self {
        Self {
            inbox,
            durable,
            bus,
        }
    }

    async fn record(&self, message: ChannelMessage) -> Result<Accepted, Closed> {
        if !self.durable.contains(&message.channel) {
            self.bus
                .send(Inbound::unrecorded(message))
                .await
                .map_err(|_| Closed)?;
            return Ok(Accepted::Queued);
        }
        let admission = self.inbox.admit(&message).await.map_err(|e| {
            tracing::error!(error = %e, "cannot record an incoming message; it is not acknowledged");
            Closed
        })?;
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
                message,
                recorded: true,
                late: false,
                spoken: false,
            })
            .await;
        match admission.synced.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::error!(error = %e, "an incoming message could not be recorded");
                return Err(Closed);
            }
            Err(_) => return Err(Closed),
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
