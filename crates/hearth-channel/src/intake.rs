//! Where a listener hands the messages it receives.
//!
//! [`Intake::accept`] returns once the message is safe: recorded in the
//! durable inbox (where the daemon keeps one) and queued for the
//! dispatcher. Only then may the listener acknowledge it to its platform
//! (Telegram: raise the update offset). A message the inbox already holds
//! (a platform offering it again after a crash) is not queued twice.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::ChannelMessage;
use futures::future::BoxFuture;

/// What became of an accepted message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accepted {
    /// Recorded (if the channel is durable) and queued.
    Queued,
    /// Recorded earlier under the same channel and id: not queued again.
    /// `reply` is the recorded reply once there is one.
    Known { reply: Option<String> },
}

/// The daemon is stopping: nothing more is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the daemon is stopping")]
pub struct Closed;

/// What an [`Intake`] hands messages to.
pub trait Sink: Send + Sync {
    fn accept(&self, message: ChannelMessage) -> BoxFuture<'_, Result<Accepted, Closed>>;
    fn is_closed(&self) -> bool;
    /// Resolves once the sink takes nothing more.
    fn closed(&self) -> BoxFuture<'_, ()>;
}

/// A listener's handle on the dispatcher's bus; cheap to clone.
#[derive(Clone)]
pub struct Intake(Arc<dyn Sink>);

impl Intake {
    pub fn new(sink: Arc<dyn Sink>) -> Self {
        Self(sink)
    }

    /// A plain queue of `capacity` with no inbox behind it (tests, tools).
    pub fn queue(capacity: usize) -> (Self, mpsc::Receiver<ChannelMessage>) {
        let (tx, rx) = mpsc::channel(capacity);
        (Self(Arc::new(Queue(tx))), rx)
    }

    /// Records and queues `message`; see the module docs.
    pub async fn accept(&self, message: ChannelMessage) -> Result<Accepted, Closed> {
        self.0.accept(message).await
    }

    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }

    pub async fn closed(&self) {
        self.0.closed().await
    }
}

struct Queue(mpsc::Sender<ChannelMessage>);

impl Sink for Queue {
    fn accept(&self, message: ChannelMessage) -> BoxFuture<'_, Result<Accepted, Closed>> {
        Box::pin(async move {
            self.0.send(message).await.map_err(|_| Closed)?;
            Ok(Accepted::Queued)
        })
    }

    fn is_closed(&self) -> bool {
        self.0.is_closed()
    }

    fn closed(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.0.closed())
    }
}
