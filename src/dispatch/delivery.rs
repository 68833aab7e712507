//! How background jobs (the scheduler, the LMS notifier) reach a chat:
//! deliver a text and learn whether the channel took it, or run an agent
//! prompt whose reply goes to the chat like any other reply.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::mpsc;

use crate::channels::{ChannelError, ChannelMessage, SendMessage};
use crate::pipeline::Runtime;

/// The sender of prompts that jobs run (its own history key per chat).
pub const JOB_SENDER: &str = "hearth-jobs";

#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    #[error("the channel refused the message: {0}")]
    Channel(#[from] ChannelError),
    #[error("a hook cancelled the message: delivery withheld")]
    Withheld,
    #[error("the daemon is shutting down")]
    ShuttingDown,
}

/// A handle for background jobs; cheap to clone.
#[derive(Clone)]
pub struct Delivery {
    runtime: Arc<Runtime>,
    bus: mpsc::Sender<ChannelMessage>,
    ids: Arc<AtomicU64>,
}

impl Delivery {
    pub fn new(runtime: Arc<Runtime>, bus: mpsc::Sender<ChannelMessage>) -> Self {
        Self {
            runtime,
            bus,
            ids: Arc::default(),
        }
    }

    /// Sends `text` to chat `to` on `channel`; `Ok` once the channel
    /// confirmed it.
    pub async fn deliver(&self, channel: &str, to: &str, text: &str) -> Result<(), DeliveryError> {
        match self
            .runtime
            .deliver(channel, SendMessage::new(to, text))
            .await?
        {
            true => Ok(()),
            false => Err(DeliveryError::Withheld),
        }
    }

    /// Queues `prompt` as a message from [`JOB_SENDER`] in chat `to`: the
    /// agent answers it (with tools and the job conversation's history)
    /// and the reply goes to `to`. Returns once queued.
    pub async fn run_prompt(
        &self,
        channel: &str,
        to: &str,
        prompt: &str,
    ) -> Result<(), DeliveryError> {
        let n = self.ids.fetch_add(1, Ordering::SeqCst);
        let message = ChannelMessage {
            id: format!("job-{n}"),
            sender: JOB_SENDER.to_string(),
            reply_target: to.to_string(),
            content: prompt.to_string(),
            channel: channel.to_string(),
            timestamp: chrono::Utc::now().timestamp().max(0) as u64,
            thread_ts: None,
            // Jobs never interrupt each other.
            interruption_scope_id: Some(format!("job-{n}")),
        };
        self.bus
            .send(message)
            .await
            .map_err(|_| DeliveryError::ShuttingDown)
    }
}
