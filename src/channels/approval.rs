//! Asking a person whether a tool call may run: the question, the answers,
//! and the table of questions waiting for an answer that every asking
//! channel (Telegram's buttons, the terminal's y/N, the gateway's follow-up
//! request) shares.
//!
//! A question that gets no answer in time, or whose asker gave up (the
//! turn was stopped), counts as Deny; an answer to a question nobody waits
//! for any more is reported as expired, never applied to another.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

/// The longest arguments shown in a question, in characters.
const SHOWN_ARGUMENTS: usize = 600;

/// What the person answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Run this call.
    Once,
    /// Run this call, and calls of this tool in this chat from now on.
    Always,
    /// Do not run it.
    Deny,
}

impl Answer {
    /// The word channels put in their buttons' data and the gateway reads.
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Once => "once",
            Answer::Always => "always",
            Answer::Deny => "deny",
        }
    }

    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "once" => Some(Answer::Once),
            "always" => Some(Answer::Always),
            "deny" => Some(Answer::Deny),
            _ => None,
        }
    }

    /// How the decision reads once made.
    pub fn verdict(self) -> &'static str {
        match self {
            Answer::Once => "allowed once",
            Answer::Always => "always allowed in this chat",
            Answer::Deny => "denied",
        }
    }
}

/// One question: may this call run?
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    /// Unique and unguessable: answers name it.
    pub id: String,
    pub tool: String,
    /// The call's arguments as JSON, cut to a readable length.
    pub arguments: String,
    /// The chat to ask in (the turn's reply target) and its thread.
    pub recipient: String,
    pub thread_ts: Option<String>,
    /// Who started the turn: the only one whose answer counts.
    pub sender: String,
    /// The message whose turn made the call.
    pub message_id: String,
    /// How long the question stays open.
    pub timeout: Duration,
}

impl ApprovalRequest {
    pub fn new(
        tool: &str,
        arguments: &serde_json::Value,
        message: &super::ChannelMessage,
        timeout: Duration,
    ) -> Self {
        let mut shown = arguments.to_string();
        if shown.chars().count() > SHOWN_ARGUMENTS {
            shown = shown.chars().take(SHOWN_ARGUMENTS).collect::<String>() + "…";
        }
        Self {
            id: uuid::Uuid::new_v4().simple().to_string(),
            tool: tool.to_string(),
            arguments: shown,
            recipient: message.reply_target.clone(),
            thread_ts: message.thread_ts.clone(),
            sender: message.sender.clone(),
            message_id: message.id.clone(),
            timeout,
        }
    }

    /// The question as one line of plain text.
    pub fn question(&self) -> String {
        format!("Allow `{}` with {}?", self.tool, self.arguments)
    }
}

/// What became of an answer handed to [`Questions::answer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivered {
    /// The waiting turn has it.
    Taken,
    /// Nobody waits for this question (answered, timed out, or stopped).
    Expired,
    /// Someone other than the turn's sender answered; the question stays open.
    NotYours,
}

struct Open {
    sender: String,
    answer: oneshot::Sender<Answer>,
}

/// The questions waiting for an answer, by id.
#[derive(Clone, Default)]
pub struct Questions {
    open: Arc<Mutex<HashMap<String, Open>>>,
}

impl Questions {
    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<String, Open>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens `request`; the ticket waits for its answer.
    pub fn ask(&self, request: &ApprovalRequest) -> Ticket {
        let (answer, rx) = oneshot::channel();
        self.open().insert(
            request.id.clone(),
            Open {
                sender: request.sender.clone(),
                answer,
            },
        );
        Ticket {
            questions: self.clone(),
            id: request.id.clone(),
            rx: Some(rx),
            timeout: request.timeout,
        }
    }

    /// `sender`'s answer to question `id`.
    pub fn answer(&self, id: &str, sender: &str, answer: Answer) -> Delivered {
        let mut open = self.open();
        match open.get(id) {
            None => Delivered::Expired,
            Some(o) if o.sender != sender => Delivered::NotYours,
            Some(_) => match open.remove(id).map(|o| o.answer.send(answer)) {
                Some(Ok(())) => Delivered::Taken,
                _ => Delivered::Expired,
            },
        }
    }

    /// Whether question `id` is still open.
    pub fn is_open(&self, id: &str) -> bool {
        self.open().contains_key(id)
    }
}

/// An open question. Dropping it closes the question.
pub struct Ticket {
    questions: Questions,
    id: String,
    rx: Option<oneshot::Receiver<Answer>>,
    timeout: Duration,
}

impl Ticket {
    /// The answer, or `None` when none came within the timeout.
    pub async fn wait(mut self) -> Option<Answer> {
        let rx = self.rx.take()?;
        match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(answer)) => Some(answer),
            _ => None,
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.questions.open().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(sender: &str, timeout: Duration) -> ApprovalRequest {
        let message = crate::channels::ChannelMessage {
            id: "m1".into(),
            sender: sender.into(),
            reply_target: "chat".into(),
            content: String::new(),
            channel: "test".into(),
            timestamp: 0,
            thread_ts: None,
            interruption_scope_id: None,
            initiator: Default::default(),
        };
        ApprovalRequest::new(
            "shell",
            &serde_json::json!({"command": "x".repeat(2_000)}),
            &message,
            timeout,
        )
    }

    #[tokio::test]
    async fn only_the_sender_answers_and_only_once() {
        let questions = Questions::default();
        let r = request("ada", Duration::from_secs(5));
        assert!(r.arguments.chars().count() <= SHOWN_ARGUMENTS + 1);
        let ticket = questions.ask(&r);
        assert_eq!(
            questions.answer(&r.id, "eve", Answer::Once),
            Delivered::NotYours
        );
        assert_eq!(
            questions.answer(&r.id, "ada", Answer::Always),
            Delivered::Taken
        );
        assert_eq!(
            questions.answer(&r.id, "ada", Answer::Once),
            Delivered::Expired
        );
        assert_eq!(ticket.wait().await, Some(Answer::Always));
    }

    #[tokio::test(start_paused = true)]
    async fn no_answer_in_time_is_none_and_closes_the_question() {
        let questions = Questions::default();
        let r = request("ada", Duration::from_secs(30));
        let ticket = questions.ask(&r);
        assert!(questions.is_open(&r.id));
        assert_eq!(ticket.wait().await, None);
        assert!(!questions.is_open(&r.id));
        assert_eq!(
            questions.answer(&r.id, "ada", Answer::Once),
            Delivered::Expired
        );
    }

    #[test]
    fn a_dropped_ticket_closes_its_question() {
        let questions = Questions::default();
        let r = request("ada", Duration::from_secs(30));
        drop(questions.ask(&r));
        assert_eq!(
            questions.answer(&r.id, "ada", Answer::Once),
            Delivered::Expired
        );
    }
}
