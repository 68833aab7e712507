//! Heartbeat checks: the standing instructions of `HEARTBEAT.md` in the
//! workspace of the person the LMS tells ("if a deadline is within 24 h
//! and I haven't submitted, remind me"), run at `[heartbeat] every_mins`
//! on the local model at background priority.
//!
//! A run is one agent turn with the read-only tools only (the tool context
//! is read-only, so a tool that changes anything is refused by the
//! registry, not merely not offered), at most `max_rounds` model rounds of
//! `max_tokens` each within `timeout`, and no history: nothing of one run
//! feeds the next, so it cannot loop. It answers the person only when the
//! model itself says something needs them (anything but the word
//! `NOTHING`; never hearth's own words where the rounds ran out or the
//! model said nothing), and never the same message twice in a row: not the
//! same words, and within a day not a message about the same course items
//! in the same state in other words ("due in 19 hours" after "due in 20
//! hours"). The last message sent and the items it named are kept in
//! `<data dir>/heartbeat.json`, across restarts.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use crate::agent::call_format;
use crate::agent::context::ContextLimits;
use crate::agent::tool_loop::{LoopSettings, ToolLoop};
use crate::chat::{ChatMessage, SamplingParams, ToolChoice};
use crate::config::{Config, HeartbeatConfig, LmsTarget};
use crate::providers::Provider;
use crate::tools::{ToolContext, ToolOrigin, ToolRegistry};

/// The file of standing instructions, in the person's workspace.
pub const FILE: &str = "HEARTBEAT.md";
/// What the model answers when nothing needs the person.
pub const NOTHING: &str = "NOTHING";
/// The most of the file read.
const MOST: usize = 8 * 1024;
/// How long a message about the same items in the same state is a repeat.
const SAME_ITEMS_FOR: chrono::Duration = chrono::Duration::hours(24);

const SYSTEM: &str = "You run the person's standing checks on a schedule. Their instructions follow. Use the tools to look up what the instructions depend on (due dates and whether work is handed in: lms_upcoming; what changed: lms_recent). If something needs the person now, reply with the short message to send them, and nothing else. If nothing needs them, reply with exactly NOTHING.";

/// What one run came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Beat {
    /// No `HEARTBEAT.md`, or an empty one.
    NoInstructions,
    /// The model found nothing that needs the person.
    Quiet,
    /// The same message as the last one sent: not sent again.
    Repeat,
    /// The message to send.
    Send(String),
}

#[derive(Debug, thiserror::Error)]
pub enum HeartbeatError {
    #[error("the heartbeat's workspace: {0}")]
    Workspace(String),
    #[error("the heartbeat's turn: {0}")]
    Turn(String),
    #[error("the heartbeat's record {path}: {source}")]
    Record {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub struct Heartbeat {
    provider: Arc<dyn Provider>,
    tools: Arc<ToolRegistry>,
    context: ToolContext,
    person: LmsTarget,
    config: HeartbeatConfig,
    sampling: SamplingParams,
    dispatcher: crate::config::DispatcherChoice,
    time_zone: chrono_tz::Tz,
    record: PathBuf,
    /// The LMS's items, to tell what a message is about.
    items: Option<Arc<crate::lms::SeenStore>>,
}

/// The last message sent, as `heartbeat.json` keeps it.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Record {
    last: Option<String>,
    #[serde(default)]
    sent_at: i64,
    /// The keys of the course items it named ([`crate::lms::named_in`]).
    #[serde(default)]
    about: Vec<String>,
}

impl Heartbeat {
    /// The heartbeat of `person` (the LMS's `deliver`), with `tools` read
    /// only in `context` narrowed to the person's workspace.
    pub fn new(
        config: &Config,
        person: LmsTarget,
        provider: Arc<dyn Provider>,
        tools: Arc<ToolRegistry>,
        context: ToolContext,
    ) -> Result<Self, HeartbeatError> {
        let origin = ToolOrigin {
            channel: person.channel.clone(),
            reply_target: person.to.clone(),
            sender: person.to.clone(),
            thread_ts: None,
            one_credential: false,
        };
        let context = context
            .with_origin(Some(origin))
            .map_err(|e| HeartbeatError::Workspace(e.to_string()))?
            .read_only();
        let mut sampling = SamplingParams::from(&config.generation);
        sampling.max_tokens = sampling.max_tokens.min(config.heartbeat.max_tokens);
        Ok(Self {
            provider: Arc::new(AtBackground(provider)),
            tools,
            context,
            person,
            config: config.heartbeat.clone(),
            sampling,
            dispatcher: config.agent.tool_dispatcher,
            time_zone: config.lms.time_zone,
            record: config.data_dir.join("heartbeat.json"),
            items: None,
        })
    }

    /// Tells what a message is about by the course items of `store` it
    /// names, so the same reminder in other words is not sent again.
    pub fn about(mut self, store: Arc<crate::lms::SeenStore>) -> Self {
        self.items = Some(store);
        self
    }

    /// The keys of the course items `text` names at `now`: none without
    /// the LMS's store, or where it cannot be read (said in the log).
    fn named(&self, text: &str, now: DateTime<Utc>) -> Vec<String> {
        let Some(store) = &self.items else {
            return Vec::new();
        };
        crate::lms::named_items(store, text, now).unwrap_or_else(|e| {
            tracing::warn!("the heartbeat cannot tell which course items its message names: {e}");
            Vec::new()
        })
    }

    /// The instructions, if the person wrote any.
    fn instructions(&self) -> Option<String> {
        let path = self.context.policy.workspace().join(FILE);
        let text = std::fs::read(&path).ok()?;
        let text = String::from_utf8_lossy(&text[..text.len().min(MOST)]).into_owned();
        Some(text).filter(|t| !t.trim().is_empty())
    }

    /// One run at `now`: what it found, not yet sent.
    pub async fn run_once(&self, now: DateTime<Utc>) -> Result<Beat, HeartbeatError> {
        let Some(instructions) = self.instructions() else {
            return Ok(Beat::NoInstructions);
        };
        let local = now.with_timezone(&self.time_zone);
        let messages = vec![
            ChatMessage::system(SYSTEM),
            ChatMessage::user(format!(
                "Now: {}.\n\nInstructions ({FILE}):\n{instructions}",
                local.format("%A %-d %B %Y %H:%M %Z")
            )),
        ];
        let dispatcher =
            call_format::choose(self.dispatcher, self.provider.supports_native_tools());
        let tool_loop = ToolLoop {
            provider: self.provider.as_ref(),
            dispatcher: dispatcher.as_ref(),
            registry: &self.tools,
            tools: &self.context,
            before_tool_call: None,
            after_tool_call: None,
        };
        let settings = LoopSettings {
            max_iterations: self.config.max_rounds,
            timeout: self.config.timeout,
            sampling: self.sampling.clone(),
            first_tool_choice: ToolChoice::Auto,
            context: ContextLimits::default(),
            parallel_tools: false,
            offered: Some(
                self.tools
                    .read_only_specs()
                    .into_iter()
                    .map(|s| s.name)
                    .collect(),
            ),
        };
        let key = format!("heartbeat_{}_{}", self.person.channel, self.person.to);
        let done = tool_loop
            .run(&key, messages, &settings, CancellationToken::new())
            .await
            .map_err(|e| HeartbeatError::Turn(e.to_string()))?;
        let text = crate::pipeline::sanitize::reply(&done.text);
        let text = text.trim();
        if !done.model_answered
            || text.is_empty()
            || text.trim_matches(|c: char| !c.is_alphanumeric()) == NOTHING
        {
            return Ok(Beat::Quiet);
        }
        if self.repeats(text, now)? {
            return Ok(Beat::Repeat);
        }
        Ok(Beat::Send(text.to_string()))
    }

    /// Whether `text` at `now` would repeat the last message sent: the
    /// same words, or within [`SAME_ITEMS_FOR`] the same course items in
    /// the same state.
    fn repeats(&self, text: &str, now: DateTime<Utc>) -> Result<bool, HeartbeatError> {
        let last = self.last()?;
        let Some(words) = last.last.as_deref() else {
            return Ok(false);
        };
        if same(words) == same(text) {
            return Ok(true);
        }
        let recent = now.timestamp() - last.sent_at < SAME_ITEMS_FOR.num_seconds();
        Ok(recent && !last.about.is_empty() && self.named(text, now) == last.about)
    }

    /// The last message sent; an unreadable record counts as none.
    fn last(&self) -> Result<Record, HeartbeatError> {
        match std::fs::read(&self.record) {
            Ok(bytes) => Ok(serde_json::from_slice(&bytes).unwrap_or_default()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Record::default()),
            Err(source) => Err(self.record_error(source)),
        }
    }

    /// Records `text` as sent at `now`, with the course items it names.
    pub fn sent(&self, text: &str, now: DateTime<Utc>) -> Result<(), HeartbeatError> {
        let record = Record {
            last: Some(text.to_string()),
            sent_at: now.timestamp(),
            about: self.named(text, now),
        };
        let body =
            serde_json::to_vec(&record).map_err(|e| self.record_error(std::io::Error::other(e)))?;
        crate::file_modes::replace_file(&self.record, &body, 0o600)
            .map_err(|e| self.record_error(e))
    }

    fn record_error(&self, source: std::io::Error) -> HeartbeatError {
        HeartbeatError::Record {
            path: self.record.clone(),
            source,
        }
    }

    /// The person's workspace, where `HEARTBEAT.md` is read.
    pub fn workspace(&self) -> &Path {
        self.context.policy.workspace()
    }

    /// How long between runs.
    pub fn every(&self) -> std::time::Duration {
        self.config.every
    }

    /// Whom it tells.
    pub fn person(&self) -> &LmsTarget {
        &self.person
    }
}

/// Runs the heartbeat every `every_mins` (the first an interval after the
/// start), sending what needs the person through `delivery`, until `stop`.
pub async fn run(beat: Heartbeat, delivery: crate::dispatch::Delivery, stop: CancellationToken) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(beat.every()) => {}
            _ = stop.cancelled() => return,
        }
        let now = Utc::now();
        match beat.run_once(now).await {
            Ok(Beat::Send(text)) => {
                let p = beat.person();
                match delivery.deliver(&p.channel, &p.to, &text).await {
                    Ok(()) => {
                        if let Err(e) = beat.sent(&text, now) {
                            tracing::warn!("{e}");
                        }
                    }
                    Err(e) => tracing::warn!("the heartbeat's message was not delivered: {e}"),
                }
            }
            Ok(beat) => tracing::debug!(?beat, "heartbeat: nothing to send"),
            Err(e) => tracing::warn!("{e}"),
        }
    }
}

/// A provider whose every request waits behind the person's chats.
struct AtBackground(Arc<dyn Provider>);

impl Provider for AtBackground {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn chat(
        &self,
        mut request: crate::chat::ChatRequest,
        cancel: CancellationToken,
    ) -> crate::chat::ChatStream {
        request.priority = crate::chat::Priority::Background;
        self.0.chat(request, cancel)
    }

    fn supports_native_tools(&self) -> bool {
        self.0.supports_native_tools()
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.0.count_tokens(text)
    }

    fn context_window(&self) -> Option<u32> {
        self.0.context_window()
    }
}

/// A message as compared with the last: case, spacing and punctuation
/// aside.
fn same(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_words_are_the_same_message() {
        assert_eq!(
            same("Essay 1 is due in 20 hours!"),
            same("essay 1 is due  in 20 hours")
        );
        assert_ne!(same("Essay 1 is due"), same("Essay 2 is due"));
    }
}
