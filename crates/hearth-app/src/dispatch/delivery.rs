//! How background jobs (the scheduler, the LMS notifier) reach a chat:
//! deliver a text and learn whether the channel took it, or run an agent
//! prompt whose reply goes to the chat like any other reply.

use std::sync::Arc;

use crate::channels::{ChannelError, ChannelMessage, Initiator, Intake, SendMessage};
use crate::pipeline::Runtime;

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
    bus: Intake,
}

impl Delivery {
    pub fn new(runtime: Arc<Runtime>, bus: Intake) -> Self {
        Self { runtime, bus }
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

    /// Queues `prompt` as a message from `owner` in chat `to`, started by
    /// a job ([`Initiator::Schedule`]): the agent answers it with the
    /// owner's memory and workspace, reading tools only, and the reply goes
    /// to `to`. Returns once recorded in the inbox (when the channel keeps
    /// one) and queued.
    pub async fn run_prompt(&self, job: PromptJob<'_>) -> Result<(), DeliveryError> {
        // Unique across restarts: memories and records use message ids.
        let id = format!("job-{}-{}", job.id, uuid::Uuid::new_v4().simple());
        let message = ChannelMessage {
            thread_ts: job.thread.map(str::to_string),
            // Jobs never interrupt each other, nor their owner's replies.
            interruption_scope_id: Some(id.clone()),
            initiator: Initiator::Schedule,
            ..ChannelMessage::now(job.channel, id, job.owner, job.to, job.prompt)
        };
        self.bus
            .accept(message)
            .await
            .map(|_| ())
            .map_err(|_| DeliveryError::ShuttingDown)
    }
}

/// A job's prompt to run: which job, for whom, where.
pub struct PromptJob<'a> {
    pub id: i64,
    pub channel: &'a str,
    pub to: &'a str,
    pub thread: Option<&'a str>,
    pub owner: &'a str,
    pub prompt: &'a str,
}
