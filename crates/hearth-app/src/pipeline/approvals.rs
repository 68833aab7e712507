//! The `before_tool_call` decision: a call of a tool listed in `[agent]
//! approve` runs only once the person who started the turn allows it, in
//! their own chat (`autonomy = "full"` asks nothing), and so does a
//! call of a tool that asks first (an MCP server's).
//!
//! "Always" is remembered per channel, chat, person and tool across
//! restarts ([`Grants`]); `/approvals reset` forgets a chat's grants. A
//! turn no person started (a job) is never asked about: such a call is
//! refused. Every refusal goes back to the model as the call's error, with
//! what to tell the user. Each question is also posted on the
//! [`QuestionBoard`], where the web page's owner may answer it.

use std::sync::Arc;
use std::time::Duration;

use crate::agent::ParsedToolCall;
use crate::agent::tool_loop::HookDecision;
use crate::channels::asked::QuestionBoard;
use crate::channels::{Answer, ApprovalRequest, Channel, ChannelError, ChannelMessage, Initiator};
use crate::config::AgentConfig;
use crate::history::{Grantee, Grants, HistoryError};

pub struct Approvals {
    grants: Grants,
    /// Every question open now, for the web page.
    board: Arc<QuestionBoard>,
}

fn grantee(message: &ChannelMessage) -> Grantee<'_> {
    Grantee {
        channel: &message.channel,
        chat: &message.reply_target,
        sender: &message.sender,
    }
}

impl Approvals {
    /// Keeps grants in the history database at `path`.
    pub fn open(path: &std::path::Path) -> Result<Self, HistoryError> {
        Ok(Self {
            grants: Grants::open(path)?,
            board: Arc::default(),
        })
    }

    /// The questions open now, on every channel.
    pub fn board(&self) -> &Arc<QuestionBoard> {
        &self.board
    }

    /// Forgets what the sender of `message` allowed for good in its chat.
    pub fn reset(&self, message: &ChannelMessage) -> Result<usize, HistoryError> {
        self.grants.revoke(grantee(message))
    }

    /// Whether `call`, made in `message`'s turn, may run. `asks_first`:
    /// the tool itself asks before every call (an MCP server's, unless its
    /// config says otherwise).
    pub async fn decide(
        &self,
        agent: &AgentConfig,
        channel: &Arc<dyn Channel>,
        message: &ChannelMessage,
        call: &ParsedToolCall,
        asks_first: bool,
    ) -> HookDecision {
        let full = agent.autonomy == crate::security::Autonomy::Full;
        let asks = agent.asks_before(&call.name) || (asks_first && !full);
        if !asks {
            return HookDecision::Run;
        }
        if message.initiator == Initiator::Schedule {
            return refuse(format!(
                "`{}` needs the user's approval and nobody is present in a scheduled turn",
                call.name
            ));
        }
        match self.grants.allows(grantee(message), &call.name) {
            Ok(true) => return HookDecision::Run,
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "cannot read approval grants; asking"),
        }
        let timeout = Duration::from_secs(agent.approval_timeout_secs);
        let request = ApprovalRequest::new(&call.name, &call.arguments, message, timeout);
        // Asked in the chat and posted on the board: the first answer counts.
        let mut post = self.board.post(channel.name(), &request);
        let mut asked = channel.ask_approval(&request);
        let answer = tokio::select! {
            answer = &mut asked => answer,
            answer = post.answered() => {
                tracing::info!(tool = call.name, "answered on the web page");
                // The chat's own question closes as decided, not as stopped.
                if channel.answered_elsewhere(&request.id, answer) {
                    let _ = tokio::time::timeout(Duration::from_secs(5), asked).await;
                }
                Ok(Some(answer))
            }
        };
        drop(post);
        tracing::info!(
            tool = call.name,
            chat = message.reply_target,
            answer = ?answer,
            "approval"
        );
        match answer {
            Ok(Some(Answer::Once)) => HookDecision::Run,
            Ok(Some(Answer::Always)) => {
                if let Err(e) = self.grants.grant(grantee(message), &call.name) {
                    tracing::warn!(error = %e, "cannot remember an approval; it holds for this call");
                }
                HookDecision::Run
            }
            Ok(Some(Answer::Deny)) => refuse("the user denied this call".to_string()),
            Ok(None) => refuse(format!(
                "the user did not allow this call within {} s",
                timeout.as_secs()
            )),
            Err(ChannelError::Unsupported(_)) => refuse(format!(
                "`{}` needs the user's approval and this channel cannot ask for it",
                call.name
            )),
            Err(e) => refuse(format!("the approval question could not be asked: {e}")),
        }
    }
}

fn refuse(why: String) -> HookDecision {
    HookDecision::Refuse(format!(
        "{why}. Nothing was done; tell the user you could not do it"
    ))
}
