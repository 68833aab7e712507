//! The tool-call loop: ask the model, run the tools it calls, feed the
//! results back, until it answers in plain text.
//!
//! Limits: at most `max_iterations` rounds (then the user is told plainly),
//! an overall time budget, and cancellation. Tools run one at a time unless `parallel_tools`. A call
//! identical to one in the previous round is answered with a note instead
//! of running again, and the next round offers no tools, so the model must
//! answer from what it has. A `before_tool_call` hook may refuse a call. Malformed
//! or unknown calls go back to the model as error results. Before each model
//! call, [`super::context`] keeps the prompt inside the window; a context
//! overflow the provider still reports drops the oldest third of the history
//! and retries once.

use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::call_format::ToolDispatcher;
use super::context::{self, ContextLimits, ContextReport, Window};
use super::types::{ConversationMessage, ParsedReply, ParsedToolCall, ToolResultMessage};
use crate::chat::{
    ChatMessage, ChatReply, ChatRequest, FinishReason, ProviderError, SamplingParams, ToolChoice,
};
use crate::providers::Provider;
use crate::tools::{ToolContext, ToolRegistry};

/// What a `before_tool_call` hook decides.
pub enum HookDecision {
    Run,
    /// Do not run; tell the model why.
    Refuse(String),
}

/// Decides, before a call runs, whether it may: it may ask the person and
/// wait for their answer.
pub type BeforeToolCall =
    dyn Fn(&ParsedToolCall) -> futures::future::BoxFuture<'static, HookDecision> + Send + Sync;

/// Told of each call's result once it has one (run, refused or failed).
pub type AfterToolCall = dyn Fn(&ParsedToolCall, &ToolResultMessage) + Send + Sync;

pub struct LoopSettings {
    pub max_iterations: u32,
    pub timeout: Duration,
    pub sampling: SamplingParams,
    /// Tool choice of the first round (`Required` makes a model without
    /// tool training call one); later rounds are `Auto`.
    pub first_tool_choice: ToolChoice,
    pub context: ContextLimits,
    /// Run all calls of one reply at once (`parallel_tools`); otherwise
    /// one after another.
    pub parallel_tools: bool,
    /// The names of the tools this turn offers (picked by relevance);
    /// `None`: every tool of the registry.
    pub offered: Option<Vec<String>>,
}

#[derive(Debug)]
pub struct LoopOutcome {
    /// The final answer, with no tool tags.
    pub text: String,
    /// What this turn adds to the history, in order.
    pub history: Vec<ConversationMessage>,
    pub iterations: u32,
    /// The text is the model's own answer; false where hearth wrote it
    /// (the rounds ran out, or the model's last round said nothing).
    pub model_answered: bool,
    /// What context management did.
    pub context: ContextReport,
    /// When management summarised or dropped earlier turns: the history
    /// (between the system prompt and this turn) as it now stands, for the
    /// caller to store instead of the old one.
    pub rewritten_history: Option<Vec<ChatMessage>>,
}

#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("cancelled")]
    Cancelled,
    #[error("the reply took longer than {0} s")]
    TimedOut(u64),
}

/// The parts the loop works with.
pub struct ToolLoop<'a> {
    pub provider: &'a dyn Provider,
    pub dispatcher: &'a dyn ToolDispatcher,
    pub registry: &'a ToolRegistry,
    pub tools: &'a ToolContext,
    pub before_tool_call: Option<&'a BeforeToolCall>,
    pub after_tool_call: Option<&'a AfterToolCall>,
}

impl ToolLoop<'_> {
    /// Runs one user turn. `messages` is the whole prompt so far (system,
    /// history, the user's message).
    pub async fn run(
        &self,
        conversation: &str,
        messages: Vec<ChatMessage>,
        settings: &LoopSettings,
        cancel: CancellationToken,
    ) -> Result<LoopOutcome, LoopError> {
        let budget = settings.timeout;
        match tokio::time::timeout(
            budget,
            self.rounds(conversation, messages, settings, cancel),
        )
        .await
        {
            Ok(result) => result,
            Err(_) => Err(LoopError::TimedOut(budget.as_secs())),
        }
    }

    async fn rounds(
        &self,
        conversation: &str,
        messages: Vec<ChatMessage>,
        settings: &LoopSettings,
        cancel: CancellationToken,
    ) -> Result<LoopOutcome, LoopError> {
        let mut turn = Rounds {
            current: messages.len().saturating_sub(1),
            messages,
            history: Vec::new(),
            previous: Vec::new(),
            report: ContextReport::default(),
            overflow_retried: false,
            force_answer: false,
        };
        for iteration in 1..=settings.max_iterations {
            if cancel.is_cancelled() {
                return Err(LoopError::Cancelled);
            }
            self.manage(
                conversation,
                &mut turn.messages,
                &mut turn.current,
                settings,
                &mut turn.report,
                &cancel,
            )
            .await;
            let reply = self
                .ask(conversation, &mut turn, iteration, settings, &cancel)
                .await?;
            if reply.finish == FinishReason::Cancelled {
                return Err(LoopError::Cancelled);
            }
            let mut parsed = self.dispatcher.parse(&reply);
            if turn.force_answer {
                // No tools were offered: whatever call the text holds is not run.
                parsed.calls.clear();
                parsed.malformed.clear();
            }
            if parsed.calls.is_empty() && parsed.malformed.is_empty() {
                let said = !parsed.text.trim().is_empty();
                if !said {
                    let thought =
                        !reply.reasoning.trim().is_empty() || !parsed.reasoning.trim().is_empty();
                    parsed.text = fallback_answer(&turn.history, reply.finish, thought);
                }
                return Ok(turn.answered(parsed.text, iteration, said));
            }
            self.run_calls(&mut turn, parsed, settings).await;
        }
        let text = format!(
            "I stopped after {} rounds of tool calls without finishing. Tell me to continue, or narrow the request.",
            settings.max_iterations
        );
        Ok(turn.answered(text, settings.max_iterations, false))
    }

    /// One round's request to the model. A prompt over the window has its
    /// oldest third dropped and is asked once more.
    async fn ask(
        &self,
        conversation: &str,
        turn: &mut Rounds,
        iteration: u32,
        settings: &LoopSettings,
        cancel: &CancellationToken,
    ) -> Result<ChatReply, LoopError> {
        let mut prompt = turn.messages.clone();
        if turn.force_answer {
            nudge(&mut prompt);
        }
        let mut request = ChatRequest::new(conversation, prompt, settings.sampling.clone());
        request.tools = self.registry.specs();
        if let Some(offered) = &settings.offered {
            request.tools.retain(|t| offered.contains(&t.name));
        }
        request.tool_choice = match (iteration, turn.force_answer) {
            (_, true) => ToolChoice::None,
            (1, _) => settings.first_tool_choice,
            _ => ToolChoice::Auto,
        };
        match self
            .provider
            .chat(request.clone(), cancel.clone())
            .collect_with(|_| {})
            .await
        {
            Err(ProviderError::ContextOverflow { needed, limit }) if !turn.overflow_retried => {
                turn.overflow_retried = true;
                let mut window = Window {
                    messages: &mut turn.messages,
                    current: turn.current,
                };
                let dropped = context::drop_oldest_third(&mut window);
                turn.current = window.current;
                turn.report.messages_dropped += dropped;
                tracing::warn!(
                    needed,
                    limit,
                    dropped,
                    "context overflow: dropped the oldest third"
                );
                if dropped == 0 {
                    return Err(ProviderError::ContextOverflow { needed, limit }.into());
                }
                request.messages = turn.messages.clone();
                if turn.force_answer {
                    nudge(&mut request.messages);
                }
                Ok(self
                    .provider
                    .chat(request, cancel.clone())
                    .collect_with(|_| {})
                    .await?)
            }
            other => Ok(other?),
        }
    }

    /// Runs a round's calls (a call repeated from the last round is not
    /// run again, and the next round must answer in text), tells the model
    /// of the calls it wrote that could not be read, and adds the round to
    /// the prompt and the history.
    async fn run_calls(&self, turn: &mut Rounds, parsed: ParsedReply, settings: &LoopSettings) {
        let repeated: Vec<bool> = parsed
            .calls
            .iter()
            .map(|call| {
                turn.previous
                    .contains(&(call.name.clone(), call.arguments.clone()))
            })
            .collect();
        turn.force_answer |= repeated.iter().any(|&r| r);
        let run = parsed
            .calls
            .iter()
            .zip(&repeated)
            .map(|(call, &repeated)| self.answer(call, repeated));
        let mut results = Vec::new();
        if settings.parallel_tools {
            results.extend(futures::future::join_all(run).await);
        } else {
            for result in run {
                results.push(result.await);
            }
        }
        let problems: Vec<ToolResultMessage> = parsed
            .malformed
            .iter()
            .enumerate()
            .map(|(i, problem)| ToolResultMessage {
                call_id: format!("malformed_{}", i + 1),
                name: "tool_call".into(),
                // Inert: a model that quotes the hint (or its own broken
                // call) back must not write a call that fails again.
                content: crate::security::fence::defuse(&format!(
                    "Your tool call could not be read: {problem}.{}",
                    self.dispatcher.call_hint()
                )),
                is_error: true,
            })
            .collect();
        turn.previous = parsed
            .calls
            .iter()
            .map(|call| (call.name.clone(), call.arguments.clone()))
            .collect();
        turn.messages
            .push(self.dispatcher.assistant_turn(&parsed.text, &parsed.calls));
        turn.messages
            .extend(self.dispatcher.format_results(&results, &problems));
        results.extend(problems);
        turn.history.push(ConversationMessage::AssistantToolCalls {
            text: parsed.text,
            calls: parsed.calls,
            reasoning: (!parsed.reasoning.is_empty()).then_some(parsed.reasoning),
        });
        turn.history.push(ConversationMessage::ToolResults(results));
    }

    /// Keeps the prompt inside the window (see [`super::context`]). A
    /// failed summary is logged and the cheap steps stand.
    async fn manage(
        &self,
        conversation: &str,
        messages: &mut Vec<ChatMessage>,
        current: &mut usize,
        settings: &LoopSettings,
        report: &mut ContextReport,
        cancel: &CancellationToken,
    ) {
        let limits = &settings.context;
        let mut window = Window {
            messages,
            current: *current,
        };
        report.tool_results_cut +=
            context::trim_old_tool_results(&mut window, limits.old_tool_result_chars);
        report.messages_dropped += context::trim_budget(&mut window, limits.char_budget);
        match context::compress(self.provider, conversation, &mut window, limits, cancel).await {
            Ok(done) => report.compressed |= done,
            Err(e) => tracing::warn!("history compression failed, keeping the history: {e}"),
        }
        *current = window.current;
    }

    /// The result of one call: run it, or a note when it repeats the
    /// previous round.
    async fn answer(&self, call: &ParsedToolCall, repeated: bool) -> ToolResultMessage {
        if repeated {
            return ToolResultMessage {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: "This exact call was made in the previous step; use its result above instead of repeating it.".into(),
                is_error: true,
            };
        }
        self.execute(call).await
    }

    async fn execute(&self, call: &ParsedToolCall) -> ToolResultMessage {
        let refused = match self.before_tool_call {
            Some(hook) => match hook(call).await {
                HookDecision::Refuse(why) => Some(why),
                HookDecision::Run => None,
            },
            None => None,
        };
        let result = match refused {
            Some(why) => crate::tools::ToolResult::error(format!("not run: {why}")),
            None => {
                self.registry
                    .run(&call.name, call.arguments.clone(), self.tools)
                    .await
            }
        };
        let message = ToolResultMessage {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: result.content,
            is_error: result.is_error,
        };
        if let Some(after) = self.after_tool_call {
            after(call, &message);
        }
        message
    }
}

/// The history between the system prompt and the current turn, when
/// management rewrote it.
fn rewritten(
    messages: &[ChatMessage],
    current: usize,
    report: &ContextReport,
) -> Option<Vec<ChatMessage>> {
    if !report.rewrote_history() {
        return None;
    }
    let start = usize::from(
        messages
            .first()
            .is_some_and(|m| m.role == crate::chat::Role::System),
    );
    Some(messages[start..current.max(start)].to_vec())
}

/// Asks for a plain answer at the end of the last (user-role) message.
fn nudge(prompt: &mut Vec<ChatMessage>) {
    const NUDGE: &str = "Answer the question now in plain text, using the tool results above. Do not call any tool.";
    match prompt.last_mut() {
        Some(last) if last.role == crate::chat::Role::User => {
            last.content.push_str("\n\n");
            last.content.push_str(NUDGE);
        }
        _ => prompt.push(ChatMessage::user(NUDGE)),
    }
}

/// What a reasoning model that only thought is answered with: its thinking
/// is hidden, so the person would otherwise see nothing.
pub const THOUGHT_ONLY: &str = "I only thought about this and never wrote an answer (my thinking is hidden from you). Ask again, perhaps more simply; if it keeps happening, set `[generation] reasoning = \"off\"` or raise `[generation] max_tokens`.";

/// When a model says nothing after using tools, the user still gets what
/// the last successful tool returned; otherwise why there is no answer,
/// where it is known (a reasoning model that thought until the reply was
/// cut says so, with the setting that gives it room).
fn fallback_answer(history: &[ConversationMessage], finish: FinishReason, thought: bool) -> String {
    let last_ok = history.iter().rev().find_map(|m| match m {
        ConversationMessage::ToolResults(results) => results.iter().rev().find(|r| !r.is_error),
        _ => None,
    });
    match last_ok {
        Some(r) => format!("Here is what `{}` returned:\n{}", r.name, r.content),
        None => match finish {
            FinishReason::Length => "I ran out of room for this reply before I got to an answer (it went on thinking). Ask again more simply, or raise `max_tokens` in `[generation]`.".to_string(),
            FinishReason::Repetition => "My reply started repeating itself and was cut before it said anything. Please ask again.".to_string(),
            _ if thought => THOUGHT_ONLY.to_string(),
            _ => "I could not find an answer.".to_string(),
        },
    }
}

/// What a turn's rounds carry from one to the next.
struct Rounds {
    messages: Vec<ChatMessage>,
    /// Where the user's turn starts in `messages`.
    current: usize,
    history: Vec<ConversationMessage>,
    /// The calls of the last round, to see one repeated.
    previous: Vec<(String, Value)>,
    report: ContextReport,
    overflow_retried: bool,
    /// After a repeated call, the next round must answer in text.
    force_answer: bool,
}

impl Rounds {
    /// The turn ends with `text` as the answer, after `iterations` rounds.
    fn answered(mut self, text: String, iterations: u32, model_answered: bool) -> LoopOutcome {
        self.history
            .push(ConversationMessage::Chat(ChatMessage::assistant(
                text.clone(),
            )));
        LoopOutcome {
            text,
            rewritten_history: rewritten(&self.messages, self.current, &self.report),
            history: self.history,
            iterations,
            model_answered,
            context: self.report,
        }
    }
}

#[cfg(test)]
mod tests;
