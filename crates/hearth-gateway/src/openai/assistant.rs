//! The assistant (`model: "hearth"`): hearth's agent with its tools,
//! memory and history. hearth keeps each conversation itself: a request
//! names it with the `X-Hearth-Chat` header, Open WebUI's
//! `X-OpenWebUI-Chat-Id`, or the `user` field (in that order; none is the
//! chat `default`), and only the last `user` message of `messages` is
//! read, since hearth has the history. The client's system message is
//! added to hearth's own prompt for this turn; the sampling fields apply
//! to every model call of the turn. Client tools and `response_format`
//! are refused here: they are the served model's (see [`super::direct`]).
//! A tool call that needs approval is denied: these clients cannot answer
//! a question. A client that hangs up stops its turn, as `/stop` would.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use tokio::sync::mpsc;

use super::super::http::{App, Pending, name};
use super::super::{Event, Shared};
use super::error::ApiError;
use super::fields::Sampling;
use super::turn::{Finish, Out, Turn};
use hearth_channel::Accepted;
use hearth_channel::TurnRequest;
use hearth_channel::approval::{Answer, ApprovalRequest};
use hearth_core::chat::{Attachment, ChatMessage, FinishReason, ReplyFormat, Role, Usage};

/// The name the assistant is asked for by.
pub const MODEL: &str = "hearth";
/// What the assistant takes of a request.
pub struct ForAssistant {
    pub messages: Vec<ChatMessage>,
    pub sampling: Sampling,
    pub user: Option<String>,
    /// The `file` parts of `messages`, by message index.
    pub documents: Vec<(usize, Attachment)>,
}

impl ForAssistant {
    /// Refuses what only the served model does.
    pub fn check(tools: bool, format: &ReplyFormat, served: Option<&str>) -> Result<(), ApiError> {
        let there = match served {
            Some(name) => {
                format!("ask for model `{name}`, which serves your own tools and formats")
            }
            None => "no model is served as itself on this gateway".to_string(),
        };
        if tools {
            return Err(ApiError::unsupported(
                "tools",
                &format!("the assistant `{MODEL}` runs hearth's own tools; {there}"),
            ));
        }
        if *format != ReplyFormat::Text {
            return Err(ApiError::unsupported(
                "response_format",
                &format!("the assistant `{MODEL}` answers in text; {there}"),
            ));
        }
        Ok(())
    }
}

/// Puts the request's message on the bus; its reply comes as a turn.
pub async fn start(app: &App, headers: &HeaderMap, asked: ForAssistant) -> Result<Turn, ApiError> {
    // The assistant keeps its own history: only the newest user message
    // is new, with its pictures.
    let at = asked.messages.iter().rposition(|m| m.role == Role::User);
    let newest = at.map(|i| &asked.messages[i]);
    let images = newest.map(|m| m.images.clone()).unwrap_or_default();
    let documents: Vec<Attachment> = (asked.documents.into_iter())
        .filter(|(i, _)| Some(*i) == at)
        .map(|(_, d)| d)
        .collect();
    let text = newest
        .map(|m| m.content.trim().to_string())
        .unwrap_or_default();
    if text.is_empty() && images.is_empty() && documents.is_empty() {
        return Err(ApiError::field(
            "messages",
            "`messages` has no user message with text, a picture or a file",
        ));
    }
    let given = super::named_chat(headers)
        .map(str::to_string)
        .or(asked.user);
    let chat = name(given, "default", "user").map_err(|why| ApiError::field("user", why))?;
    let instructions: Vec<&str> = asked
        .messages
        .iter()
        .filter(|m| m.role == Role::System && !m.content.trim().is_empty())
        .map(|m| m.content.as_str())
        .collect();
    let s = &asked.sampling;
    let request = TurnRequest {
        instructions: (!instructions.is_empty()).then(|| instructions.join("\n\n")),
        max_tokens: s.max_tokens,
        temperature: s.temperature,
        top_p: s.top_p,
        seed: s.seed,
        stop: s.stop.clone(),
        frequency_penalty: s.frequency_penalty,
        presence_penalty: s.presence_penalty,
    };
    let text = super::super::sent_documents(&text, &documents);
    let (mut message, events) = app.shared.admit(&chat, &text, None);
    if request != TurnRequest::default() {
        message.asked = Some(Box::new(request));
    }
    message.images = images;
    message.documents = documents;
    let id = message.id.clone();
    match app.bus.accept(message).await {
        Ok(Accepted::Queued) => {}
        Ok(Accepted::Known { .. }) | Err(_) => {
            app.shared.forget(&id);
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "hearth is shutting down",
            ));
        }
    }
    let pending = Pending {
        shared: app.shared.clone(),
        id,
        parked: false,
    };
    let (tx, rx) = mpsc::channel(64);
    let follow = Follow {
        app: app.clone(),
        chat,
        wait: app.shared.reply_timeout,
    };
    tokio::spawn(follow.run(events, pending, tx));
    Ok(rx)
}

/// What one event of a turn means for its client.
enum Step {
    Skip,
    Send(Out),
    /// The last of the turn.
    End(Vec<Out>),
}

/// What a turn has told its client so far.
#[derive(Default)]
struct Tally {
    usage: Usage,
    finish: Option<FinishReason>,
    streamed: bool,
}

impl Tally {
    fn step(&mut self, event: Option<Event>, shared: &Arc<Shared>) -> Step {
        match event {
            Some(Event::Text(piece)) => {
                self.streamed = true;
                Step::Send(Out::Text(piece))
            }
            Some(Event::Round { usage, finish }) => {
                add(&mut self.usage, &usage);
                self.finish = Some(finish);
                Step::Skip
            }
            Some(Event::Question(q)) => {
                deny(shared, &q);
                Step::Skip
            }
            Some(Event::Reasoning | Event::Tool(_)) => Step::Skip,
            // A reply that did not stream (a notice, a command's answer)
            // goes out whole; one that did has had its last piece.
            Some(Event::Reply(text)) => self.end(text, self.finish.unwrap_or(FinishReason::Stop)),
            Some(Event::Stopped) => self.end("(stopped)".into(), FinishReason::Stop),
            None => Step::End(vec![Out::Failed(ApiError::new(
                StatusCode::BAD_GATEWAY,
                "the message ended without a reply",
            ))]),
        }
    }

    fn end(&self, text: String, finish: FinishReason) -> Step {
        let mut outs = Vec::new();
        if !self.streamed && !text.is_empty() {
            outs.push(Out::Text(text));
        }
        outs.push(Out::Done {
            usage: self.usage,
            finish: Finish::of(finish, false),
        });
        Step::End(outs)
    }
}

/// Carries one message's events to its client.
struct Follow {
    app: App,
    chat: String,
    wait: Duration,
}

impl Follow {
    async fn run(
        self,
        mut events: mpsc::UnboundedReceiver<Event>,
        pending: Pending,
        tx: mpsc::Sender<Out>,
    ) {
        let deadline = tokio::time::Instant::now() + self.wait;
        let mut tally = Tally::default();
        loop {
            let event = tokio::select! {
                e = events.recv() => e,
                _ = tx.closed() => return self.stop(pending).await,
                _ = tokio::time::sleep_until(deadline) => {
                    let _ = tx.send(Out::Failed(ApiError::new(StatusCode::GATEWAY_TIMEOUT, format!(
                        "no reply within {} s (`[channels.gateway] reply_timeout_secs`); the turn was stopped",
                        self.wait.as_secs()
                    )))).await;
                    return self.stop(pending).await;
                }
            };
            match tally.step(event, &self.app.shared) {
                Step::Skip => {}
                Step::Send(out) => {
                    if tx.send(out).await.is_err() {
                        return self.stop(pending).await;
                    }
                }
                Step::End(outs) => {
                    for out in outs {
                        if tx.send(out).await.is_err() {
                            break;
                        }
                    }
                    return;
                }
            }
        }
    }

    /// The client is gone: its turn stops, as `/stop` in its chat would.
    async fn stop(self, pending: Pending) {
        drop(pending);
        tracing::info!(
            chat = self.chat,
            "an OpenAI client hung up or timed out; stopping its turn"
        );
        let (message, mut events) = self.app.shared.admit(&self.chat, "/stop", None);
        let id = message.id.clone();
        if self.app.bus.accept(message).await.is_ok() {
            // The command's own answer is nobody's to read.
            let _ = tokio::time::timeout(Duration::from_secs(30), events.recv()).await;
        }
        self.app.shared.forget(&id);
    }
}

fn add(total: &mut Usage, round: &Usage) {
    total.prompt_tokens += round.prompt_tokens;
    total.cached_tokens += super::turn::own_cached(round);
    total.completion_tokens += round.completion_tokens;
}

/// Denies a call these clients cannot be asked about.
fn deny(shared: &Arc<Shared>, q: &ApprovalRequest) {
    tracing::info!(
        tool = q.tool,
        "denied a call that needs approval: OpenAI clients cannot answer"
    );
    shared.questions.answer(&q.id, &q.sender, Answer::Deny);
}
