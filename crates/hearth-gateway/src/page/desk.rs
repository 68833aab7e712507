//! What the web page shows besides a live chat, as the gateway needs it:
//! the conversations kept, one conversation's messages, the state of
//! the box, memories and documents. The daemon implements it over its stores once they are open
//! ([`super::super::GatewayChannel::attach_desk`]); until then the page's
//! JSON endpoints answer 503.

use serde::Serialize;

/// A gateway conversation as the page lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conversation {
    /// The chat name (`?chat=` of `/ws/chat`).
    pub chat: String,
    /// The first thing the person wrote in it, shortened.
    pub title: String,
    pub messages: usize,
    /// When it last changed (Unix seconds).
    pub updated: i64,
}

/// One message of a conversation, as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shown {
    /// `user`, `assistant` or `tool`.
    pub role: String,
    pub text: String,
    /// Pictures the message showed (still kept with it).
    pub pictures: usize,
}

/// What the page may do to a scheduled job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobAction {
    Pause,
    Resume,
    Delete,
}

impl JobAction {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pause" => Some(Self::Pause),
            "resume" => Some(Self::Resume),
            "delete" => Some(Self::Delete),
            _ => None,
        }
    }
}

/// A memory entry as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Remembered {
    /// Whose memory it is (a person, a group chat, `local`).
    pub scope: String,
    pub key: String,
    pub category: String,
    pub content: String,
    /// Unix seconds.
    pub updated: i64,
}

/// A document hearth keeps, as the page lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeptDocument {
    pub id: i64,
    /// Whose it is (a person, a group chat, `local`).
    pub scope: String,
    pub name: String,
    pub kind: String,
    pub pages: usize,
    /// How it came: sent, added at the command line, or fetched from an
    /// LMS source (`lms:<source>`).
    pub source: String,
    /// Unix seconds.
    pub added: i64,
}

/// An approval question the page's owner may answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Question {
    pub id: String,
    /// The channel and chat it was asked in, and who started the turn.
    pub channel: String,
    pub chat: String,
    pub sender: String,
    pub tool: String,
    /// The arguments as a person reads them (what decides the risk first).
    pub arguments: String,
    /// Unix seconds.
    pub asked_at: i64,
    pub expires_at: i64,
}

/// Why the desk could not answer.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DeskError(pub String);

/// What the page reads.
pub trait Desk: Send + Sync {
    /// The gateway's conversations, the most recent first.
    fn conversations(&self) -> Result<Vec<Conversation>, DeskError>;

    /// The messages kept of gateway chat `chat`, oldest first.
    fn messages(&self, chat: &str) -> Result<Vec<Shown>, DeskError>;

    /// The state of the box: model, engine, queue, services.
    fn overview(&self) -> serde_json::Value;

    /// Pauses, resumes or deletes scheduled job `id`; false when there is
    /// no such job.
    fn job(&self, id: i64, action: JobAction) -> Result<bool, DeskError>;

    /// Memory entries whose text holds `query` (all when empty), newest first.
    fn memories(&self, query: &str) -> Result<Vec<Remembered>, DeskError>;

    /// Deletes one memory entry; false when there was none.
    fn forget(&self, scope: &str, key: &str) -> Result<bool, DeskError>;

    /// The documents kept, everyone's, newest first.
    fn documents(&self) -> Result<Vec<KeptDocument>, DeskError>;

    /// Deletes document `id` of `scope`; false when there was none.
    fn forget_document(&self, scope: &str, id: i64) -> Result<bool, DeskError>;

    /// The approval questions open now that the page's owner may answer:
    /// the gateway's, and those of `[channels.gateway] owner` elsewhere.
    fn questions(&self) -> Vec<Question>;

    /// Answers question `id`; false when it is not open, or not the owner's.
    fn answer(&self, id: &str, answer: hearth_channel::Answer) -> bool;

    /// Today's morning brief as it stands now, `None` when there is
    /// nothing to tell or no brief on this box.
    fn brief(&self) -> futures::future::BoxFuture<'_, Result<Option<String>, DeskError>> {
        Box::pin(async { Ok(None) })
    }
}
