//! ACP, the Agent Client Protocol, over stdio: an editor runs `hearth acp`
//! and uses hearth as its agent.
//!
//! The editor (the client) sends JSON-RPC 2.0 lines on stdin: `initialize`,
//! `session/new` (a new conversation), `session/prompt` (a user message),
//! and the `session/cancel` notification. hearth answers on stdout, and
//! streams each reply as `session/update` notifications
//! (`agent_message_chunk`, and `tool_call` / `tool_call_update` as tools
//! run) before it answers the prompt with its `stopReason`: `end_turn`, or
//! `cancelled` after `session/cancel`. A tool call that needs approval is
//! asked with `session/request_permission`. Protocol version 1; sessions
//! are not loaded again (`loadSession: false`), and the session's `cwd` is
//! not where tools run: hearth's own workspace is.
//!
//! Messages go through the same dispatcher and pipeline as every channel's
//! (history per session, commands, memory, tools).

mod calls;
mod methods;
mod rpc;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};
use tokio_util::sync::CancellationToken;

use hearth_channel::approval::{Answer, ApprovalRequest};
use hearth_channel::{
    Channel, ChannelError, ChannelMessage, ChannelPolicy, Intake, ReplyEvent, ReplyStream,
    SendMessage,
};
use rpc::{Incoming, Peer};

pub const NAME: &str = "acp";
/// The protocol version spoken.
const PROTOCOL_VERSION: u64 = 1;
/// Everyone at the other end of stdio is one person: the editor's user.
const SENDER: &str = "editor";
/// How the ids of the `/stop` messages a cancel sends begin.
const STOP_ID: &str = "acp-stop-";

/// A prompt being answered.
struct Turn {
    /// The `session/prompt` request to answer.
    request: Value,
    session: String,
    /// Whether any of the reply's text was streamed.
    streamed: bool,
    /// Tool calls reported running: (call id, tool).
    running: Vec<(String, String)>,
    /// Calls the editor allowed that have not started yet: (tool, call id),
    /// so the call that runs keeps the id its question had.
    approved: Vec<(String, String)>,
    cancelled: bool,
}

#[derive(Default)]
struct State {
    sessions: HashSet<String>,
    /// By message id.
    turns: HashMap<String, Turn>,
    next_call: u64,
}

pub struct AcpChannel {
    peer: Arc<Peer>,
    input: Mutex<Option<Box<dyn AsyncBufRead + Send + Unpin>>>,
    state: Mutex<State>,
    /// The client closed its end.
    ended: CancellationToken,
    changed: tokio::sync::Notify,
}

impl AcpChannel {
    /// A channel reading `input` and writing `output` (stdin and stdout).
    pub fn new(
        input: Box<dyn AsyncBufRead + Send + Unpin>,
        output: Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
    ) -> Self {
        Self {
            peer: Arc::new(Peer::new(output)),
            input: Mutex::new(Some(input)),
            state: Mutex::default(),
            ended: CancellationToken::new(),
            changed: tokio::sync::Notify::new(),
        }
    }

    /// A new `toolCallId`, unique in this run.
    fn next_call_id(&self) -> String {
        let mut state = self.state();
        state.next_call += 1;
        format!("call_{}", state.next_call)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Resolves once the client has closed its end and every prompt it
    /// sent is answered.
    pub async fn finished(&self) {
        loop {
            let changed = self.changed.notified();
            if self.ended.is_cancelled() && self.state().turns.is_empty() {
                return;
            }
            tokio::select! {
                _ = changed => {}
                _ = self.ended.cancelled(), if !self.ended.is_cancelled() => {}
            }
        }
    }

    /// Tells the session of `message_id` about `update`, after closing the
    /// tool calls still shown running (something came after them).
    async fn update(&self, message_id: &str, update: impl FnOnce(&mut Turn) -> Option<Value>) {
        let (session, finished, update) = {
            let mut state = self.state();
            let Some(turn) = state.turns.get_mut(message_id) else {
                return;
            };
            let Some(update) = update(turn) else { return };
            (
                turn.session.clone(),
                std::mem::take(&mut turn.running),
                update,
            )
        };
        for (call, _) in finished {
            self.session_update(&session, calls::update(&call, "completed", None))
                .await;
        }
        self.session_update(&session, update).await;
    }

    async fn session_update(&self, session: &str, update: Value) {
        self.peer
            .notify(
                "session/update",
                json!({ "sessionId": session, "update": update }),
            )
            .await;
    }

    /// Streams `piece` of the turn's text.
    async fn text(&self, message_id: &str, piece: &str) {
        self.update(message_id, |turn| {
            turn.streamed = true;
            Some(chunk(piece.to_string()))
        })
        .await;
    }

    /// Shows the call of `tool` serving `id` as running; a call the editor
    /// allowed keeps its question's id.
    async fn tool_started(&self, id: &str, tool: &str, arguments: &Value) {
        let approved = self.state().turns.get_mut(id).and_then(|turn| {
            let at = turn.approved.iter().position(|(t, _)| t == tool)?;
            Some(turn.approved.remove(at).1)
        });
        let (call, update) = match approved {
            Some(call) => {
                let update = calls::update(&call, "in_progress", None);
                (call, update)
            }
            None => {
                let call = self.next_call_id();
                let update = calls::started(&call, tool, arguments, "in_progress");
                (call, update)
            }
        };
        self.update(id, |_| Some(update)).await;
        if let Some(turn) = self.state().turns.get_mut(id) {
            turn.running.push((call, tool.to_string()));
        }
    }

    /// Shows the call of `tool` serving `message_id` as ended, with its output.
    async fn tool_finished(&self, message_id: &str, tool: &str, ok: bool, output: &str) {
        let found = self.state().turns.get_mut(message_id).and_then(|turn| {
            let at = turn.running.iter().position(|(_, t)| t == tool)?;
            Some((turn.session.clone(), turn.running.remove(at).0))
        });
        if let Some((session, call)) = found {
            let status = if ok { "completed" } else { "failed" };
            self.session_update(&session, calls::update(&call, status, Some(output)))
                .await;
        }
    }

    /// Ends the turn of `message_id`: its text if none streamed (the
    /// stream's last piece completed it otherwise), then the answer to its
    /// prompt.
    async fn end(&self, message_id: &str, text: Option<&str>) {
        let streamed = self
            .state()
            .turns
            .get(message_id)
            .is_some_and(|t| t.streamed);
        if let Some(text) = text
            && !streamed
            && !text.is_empty()
        {
            self.text(message_id, text).await;
        }
        let turn = self.state().turns.remove(message_id);
        self.changed.notify_waiters();
        if let Some(turn) = turn {
            for (call, _) in turn.running {
                self.session_update(&turn.session, calls::update(&call, "completed", None))
                    .await;
            }
            let reason = if turn.cancelled || text.is_none() {
                "cancelled"
            } else {
                "end_turn"
            };
            self.peer
                .answer(turn.request, json!({ "stopReason": reason }))
                .await;
        }
    }
}

fn chunk(text: String) -> Value {
    json!({ "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": text } })
}

impl Channel for AcpChannel {
    fn name(&self) -> &str {
        NAME
    }

    fn durable(&self) -> bool {
        // The editor's session ends with this process.
        false
    }

    fn send<'a>(&'a self, message: &'a SendMessage) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            let id = message.in_reply_to.as_deref().unwrap_or("");
            if self.state().turns.contains_key(id) {
                self.end(id, Some(&message.content)).await;
            } else if !id.starts_with(STOP_ID) && self.state().sessions.contains(&message.recipient)
            {
                // Unprompted (a reminder): a message of its own in the session.
                self.session_update(&message.recipient, chunk(message.content.clone()))
                    .await;
            }
            Ok(())
        })
    }

    fn listen(&self, intake: Intake) -> BoxFuture<'_, Result<(), ChannelError>> {
        Box::pin(async move {
            let Some(mut input) = self.input.lock().unwrap_or_else(|e| e.into_inner()).take()
            else {
                self.ended.cancelled().await;
                return Ok(());
            };
            let mut line = String::new();
            loop {
                line.clear();
                match input.read_line(&mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) if line.trim().is_empty() => continue,
                    Ok(_) => {}
                }
                match Incoming::parse(line.trim()) {
                    Incoming::Call { id, method, params } => {
                        self.call(&intake, id, &method, params).await
                    }
                    Incoming::Answer { id, result } => {
                        if !self.peer.answered(&id, result) {
                            tracing::debug!(%id, "an ACP answer to no open request");
                        }
                    }
                    Incoming::Bad { id, code, message } => {
                        self.peer.fail(id, code, &message).await;
                    }
                }
            }
            self.peer.close();
            self.ended.cancel();
            Ok(())
        })
    }

    fn unanswered<'a>(&'a self, message: &'a ChannelMessage) -> BoxFuture<'a, ()> {
        Box::pin(self.end(&message.id, None))
    }

    fn ask_approval<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<Option<Answer>, ChannelError>> {
        Box::pin(async move {
            let Some(session) = self
                .state()
                .turns
                .get(&request.message_id)
                .map(|t| t.session.clone())
            else {
                return Err(ChannelError::Rejected(
                    "the prompt is no longer being answered".into(),
                ));
            };
            // The call is shown first, pending; the question and the run
            // that may follow speak of the same id.
            let call = self.next_call_id();
            let pending = calls::started(&call, &request.tool, &request.raw_arguments, "pending");
            self.session_update(&session, pending).await;
            let mut tool_call =
                calls::call(&call, &request.tool, &request.raw_arguments, "pending");
            tool_call["title"] = json!(request.question());
            let params = json!({
                "sessionId": session,
                "toolCall": tool_call,
                "options": [
                    { "optionId": "once", "name": "Allow once", "kind": "allow_once" },
                    { "optionId": "always", "name": "Always allow in this chat", "kind": "allow_always" },
                    { "optionId": "deny", "name": "Deny", "kind": "reject_once" },
                ],
            });
            let asked = self.peer.request("session/request_permission", params);
            let Ok(answer) = tokio::time::timeout(request.timeout, asked).await else {
                let expired = calls::update(
                    &call,
                    "failed",
                    Some("no answer in time: the call did not run"),
                );
                self.session_update(&session, expired).await;
                return Ok(None);
            };
            let chosen = answer
                .and_then(Result::ok)
                .filter(|r| {
                    r.pointer("/outcome/outcome").and_then(Value::as_str) == Some("selected")
                })
                .and_then(|r| {
                    r.pointer("/outcome/optionId")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                });
            // Cancelled, refused or gone: the call does not run.
            let answer = chosen
                .as_deref()
                .and_then(Answer::parse)
                .unwrap_or(Answer::Deny);
            if answer == Answer::Deny {
                let denied = calls::update(&call, "failed", Some("denied: the call did not run"));
                self.session_update(&session, denied).await;
            } else if let Some(turn) = self.state().turns.get_mut(&request.message_id) {
                turn.approved.push((request.tool.clone(), call));
            }
            Ok(Some(answer))
        })
    }

    fn policy(&self) -> ChannelPolicy {
        ChannelPolicy {
            interrupt_on_new_message: false,
            show_tool_calls: true,
            stream_replies: true,
            one_credential: false,
        }
    }

    fn stream(&self) -> Option<&dyn ReplyStream> {
        Some(self)
    }
}

/// The reply as session updates: text chunks, and tool calls that run and
/// end (what the model thinks is not shown).
impl ReplyStream for AcpChannel {
    fn event<'a>(&'a self, message_id: &'a str, event: &'a ReplyEvent) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            match event {
                ReplyEvent::Text(piece) => self.text(message_id, piece).await,
                ReplyEvent::Reasoning | ReplyEvent::Round { .. } => {}
                ReplyEvent::ToolStarted { name, arguments } => {
                    self.tool_started(message_id, name, arguments).await;
                }
                ReplyEvent::ToolFinished { name, ok, output } => {
                    self.tool_finished(message_id, name, *ok, output).await;
                }
            }
        })
    }
}
