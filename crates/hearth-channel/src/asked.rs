//! Every approval question open now, whatever channel asked it, so that
//! the web page can show them and its owner answer them there too. A
//! question is posted while its turn waits ([`QuestionBoard::post`]); the
//! first answer wins, from its own channel or from the board, and the post
//! is taken down when the turn stops waiting.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::approval::{Answer, ApprovalRequest};

/// A question on the board.
#[derive(Debug, Clone)]
pub struct Asked {
    /// The channel that asked it.
    pub channel: String,
    pub request: ApprovalRequest,
    /// When it was asked (Unix seconds).
    pub at: i64,
}

struct Posted {
    asked: Asked,
    answer: oneshot::Sender<Answer>,
}

#[derive(Default)]
pub struct QuestionBoard {
    open: Mutex<HashMap<String, Posted>>,
}

/// A question posted on the board: its answer, if the board gives one.
/// Dropping it takes the question down.
pub struct Post {
    board: Arc<QuestionBoard>,
    id: String,
    answer: Option<oneshot::Receiver<Answer>>,
}

impl Post {
    /// The answer given on the board; pending forever when none is.
    pub async fn answered(&mut self) -> Answer {
        match self.answer.as_mut() {
            Some(rx) => match rx.await {
                Ok(answer) => answer,
                Err(_) => std::future::pending().await,
            },
            None => std::future::pending().await,
        }
    }
}

impl Drop for Post {
    fn drop(&mut self) {
        self.board.lock().remove(&self.id);
    }
}

impl QuestionBoard {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Posted>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Posts `request`, asked on `channel`, until the returned post drops.
    pub fn post(self: &Arc<Self>, channel: &str, request: &ApprovalRequest) -> Post {
        let (tx, rx) = oneshot::channel();
        self.lock().insert(
            request.id.clone(),
            Posted {
                asked: Asked {
                    channel: channel.to_string(),
                    request: request.clone(),
                    at: chrono::Utc::now().timestamp(),
                },
                answer: tx,
            },
        );
        Post {
            board: self.clone(),
            id: request.id.clone(),
            answer: Some(rx),
        }
    }

    /// The questions open now, oldest first.
    pub fn open(&self) -> Vec<Asked> {
        let mut open: Vec<Asked> = self.lock().values().map(|p| p.asked.clone()).collect();
        open.sort_by_key(|a| a.at);
        open
    }

    /// One open question.
    pub fn get(&self, id: &str) -> Option<Asked> {
        self.lock().get(id).map(|p| p.asked.clone())
    }

    /// Answers question `id`; false when it is no longer open.
    pub fn answer(&self, id: &str, answer: Answer) -> bool {
        self.lock()
            .remove(id)
            .is_some_and(|p| p.answer.send(answer).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ChannelMessage;
    use std::time::Duration;

    fn request() -> ApprovalRequest {
        let message = ChannelMessage::now("telegram", "m1".into(), "42", "42", "hi");
        ApprovalRequest::new(
            "file_write",
            &serde_json::json!({"path": "a.txt"}),
            &message,
            Duration::from_secs(5),
        )
    }

    #[tokio::test]
    async fn a_posted_question_is_answered_once_and_taken_down_when_dropped() {
        let board = Arc::new(QuestionBoard::default());
        let asked = request();
        let mut post = board.post("telegram", &asked);
        assert_eq!(board.open().len(), 1);
        assert_eq!(board.get(&asked.id).unwrap().channel, "telegram");
        assert!(board.answer(&asked.id, Answer::Once));
        assert!(!board.answer(&asked.id, Answer::Always), "answered already");
        assert_eq!(post.answered().await, Answer::Once);
        assert!(board.open().is_empty());
        let other = request();
        let post = board.post("telegram", &other);
        drop(post);
        assert!(board.open().is_empty(), "taken down with its turn");
        assert!(!board.answer(&other.id, Answer::Once));
    }
}
