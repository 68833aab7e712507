//! Messages in and out of a channel.

/// One incoming message, as every channel reports it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChannelMessage {
    /// The platform's id for this message (unique within the channel).
    pub id: String,
    /// Who wrote it (a stable user id, not a display name).
    pub sender: String,
    /// Where the reply goes: the chat, which for a private chat may equal `sender`.
    pub reply_target: String,
    /// The text as the person wrote it (a caption, for a photo).
    pub content: String,
    /// The channel's name (`"telegram"`, `"cli"`, ...).
    pub channel: String,
    /// Seconds since the Unix epoch.
    pub timestamp: u64,
    /// A thread or forum topic, when the platform has them.
    pub thread_ts: Option<String>,
    /// Messages with the same sender and scope interrupt each other.
    pub interruption_scope_id: Option<String>,
    /// Who started this turn: the sender, or a job on their behalf.
    pub initiator: Initiator,
    /// What an API client asked of this turn beyond its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<Box<TurnRequest>>,
    /// Pictures sent with it, in order. Only a channel sets them, from what
    /// its platform delivered as pictures: never from anything in a text.
    /// Recorded with the message until its turn is over.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "hearth_core::chat::image::as_base64"
    )]
    pub images: Vec<hearth_core::chat::Image>,
    /// A voice note or audio file sent with it, to be transcribed and
    /// answered as the person's words. Set only by a channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<hearth_core::chat::Audio>,
    /// Documents sent with it, to be read in the document cage. Set only
    /// by a channel, from what its platform delivered as files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub documents: Vec<hearth_core::chat::Attachment>,
}

/// What an API client asked of one turn of the assistant: its own system
/// message, and sampling for each model call of the turn. Unset fields
/// keep `[generation]`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TurnRequest {
    /// The client's system message, added after hearth's own prompt.
    pub instructions: Option<String>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub seed: Option<u32>,
    #[serde(default)]
    pub stop: Vec<String>,
    pub frequency_penalty: Option<f32>,
    pub presence_penalty: Option<f32>,
}

impl TurnRequest {
    /// `base` with what the client asked for.
    pub fn sampling(
        &self,
        base: &hearth_core::chat::SamplingParams,
    ) -> hearth_core::chat::SamplingParams {
        let mut s = base.clone();
        s.max_tokens = self.max_tokens.unwrap_or(s.max_tokens);
        s.temperature = self.temperature.unwrap_or(s.temperature);
        s.top_p = self.top_p.unwrap_or(s.top_p);
        if self.seed.is_some() {
            s.seed = self.seed;
        }
        s.stop.extend(self.stop.iter().cloned());
        s.frequency_penalty = self.frequency_penalty.unwrap_or(s.frequency_penalty);
        s.presence_penalty = self.presence_penalty.unwrap_or(s.presence_penalty);
        s
    }
}

impl ChannelMessage {
    /// What `sender` wrote in chat `reply_target` of `channel` just now,
    /// outside any thread.
    pub fn now(channel: &str, id: String, sender: &str, reply_target: &str, content: &str) -> Self {
        Self {
            id,
            sender: sender.to_string(),
            reply_target: reply_target.to_string(),
            content: content.to_string(),
            channel: channel.to_string(),
            timestamp: chrono::Utc::now().timestamp().max(0) as u64,
            thread_ts: None,
            interruption_scope_id: None,
            initiator: Initiator::Person,
            asked: None,
            images: Vec::new(),
            audio: None,
            documents: Vec::new(),
        }
    }
}

/// Who started a message's turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Initiator {
    /// The sender wrote it.
    #[default]
    Person,
    /// A job the sender set fired it: it runs in their scope, but only tools
    /// that change nothing may run, and it is neither remembered nor kept
    /// in their own conversation.
    Schedule,
}

/// One outgoing message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SendMessage {
    pub content: String,
    /// The chat (a `ChannelMessage::reply_target`).
    pub recipient: String,
    /// A subject line, for channels that have one (mail); others ignore it.
    pub subject: Option<String>,
    /// Reply into this thread or topic.
    pub thread_ts: Option<String>,
    /// The id of the message this answers, for channels that pair replies
    /// with requests (the HTTP gateway); `None` for unprompted messages.
    pub in_reply_to: Option<String>,
}

impl SendMessage {
    pub fn new(recipient: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            recipient: recipient.into(),
            ..Self::default()
        }
    }

    /// A reply to `message`, in its chat and thread.
    pub fn reply_to(message: &ChannelMessage, content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            recipient: message.reply_target.clone(),
            subject: None,
            thread_ts: message.thread_ts.clone(),
            in_reply_to: Some(message.id.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_record_written_before_turn_requests_still_reads() {
        let mut m = ChannelMessage::now("gateway", "1".into(), "a", "a", "hi");
        let old = serde_json::to_string(&m).unwrap();
        assert!(
            !old.contains("asked"),
            "nothing is written when nothing was asked"
        );
        assert_eq!(serde_json::from_str::<ChannelMessage>(&old).unwrap(), m);
        m.asked = Some(Box::new(TurnRequest {
            max_tokens: Some(5),
            instructions: Some("be brief".into()),
            ..TurnRequest::default()
        }));
        let new = serde_json::to_string(&m).unwrap();
        assert_eq!(serde_json::from_str::<ChannelMessage>(&new).unwrap(), m);
    }

    #[test]
    fn a_turn_request_overrides_only_what_it_sets() {
        let base = hearth_core::chat::SamplingParams::greedy(100);
        let asked = TurnRequest {
            max_tokens: Some(5),
            stop: vec!["END".into()],
            ..TurnRequest::default()
        };
        let s = asked.sampling(&base);
        assert_eq!((s.max_tokens, s.stop.clone()), (5, vec!["END".to_string()]));
        assert_eq!(s.temperature, base.temperature);
        assert_eq!(TurnRequest::default().sampling(&base), base);
    }
}
