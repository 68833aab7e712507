//! Anthropic's Messages API as a [`Provider`]: a cloud fallback (or a
//! route) where the config names it, never the first choice.
//!
//! Replies stream over server-sent events. Text blocks become text,
//! `thinking` blocks reasoning (never shown as the reply), and `tool_use`
//! blocks structured calls with their ids, put together from their
//! streamed JSON pieces and checked against the offered tools, so the agent
//! uses its native dispatcher. An overloaded API (HTTP 529) or a rate limit
//! (429) is [`ProviderError::Busy`], which callers may retry; a prompt that
//! does not fit is [`ProviderError::ContextOverflow`].

mod wire;

use std::collections::BTreeMap;
use std::time::Instant;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Provider;
use super::calls;
use super::http::{self, EventReader, Pumped, capped_body};
use crate::chat::{
    ChatRequest, ChatStream, FinishReason, ProviderError, StreamEvent, ToolSpec, Usage,
};
use crate::config::{AnthropicConfig, Secret};
use wire::Event;

/// One Anthropic endpoint and model.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    base_url: String,
    model: String,
    api_key: Option<Secret>,
    context_window: Option<u32>,
    client: reqwest::Client,
}

const NAME: &str = "anthropic";

impl AnthropicProvider {
    /// The provider `[providers.anthropic]` describes, or `None` when it
    /// names no model (not configured).
    pub fn from_config(config: &AnthropicConfig) -> Result<Option<Self>, ProviderError> {
        let Some(model) = &config.model else {
            return Ok(None);
        };
        let client = http::client(config.timeout_secs)?;
        Ok(Some(Self {
            base_url: config.base_url.trim_end_matches('/').to_string(),
            model: model.clone(),
            api_key: config.api_key.clone(),
            context_window: config.context_window,
            client,
        }))
    }

    /// The same endpoint with another model (a route's `[routing.models]` id).
    pub fn with_model(&self, model: &str) -> Self {
        Self {
            model: model.to_string(),
            ..self.clone()
        }
    }
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        NAME
    }

    fn chat(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let this = self.clone();
        http::spawn("Anthropic", move |tx| async move {
            this.stream(request, cancel, &tx).await
        })
    }

    fn supports_native_tools(&self) -> bool {
        true
    }

    fn context_window(&self) -> Option<u32> {
        self.context_window
    }

    /// Claude models read image blocks.
    fn sees_images(&self) -> bool {
        true
    }
}

impl AnthropicProvider {
    /// Sends the request and forwards the reply; ends with `Done` or an error.
    async fn stream(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
        tx: &mpsc::Sender<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let started = Instant::now();
        let mut call = self
            .client
            .post(format!("{}/v1/messages", self.base_url))
            .header("anthropic-version", wire::VERSION)
            .json(&wire::request_body(&self.model, &request));
        if let Some(key) = &self.api_key {
            call = call.header("x-api-key", key.expose());
        }
        let Some(response) = http::send(call, &cancel, NAME, &self.base_url).await? else {
            let _ = tx.send(http::cancelled(Usage::default())).await;
            return Ok(());
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse().ok());
            let body = capped_body(response).await;
            return Err(wire::classify_error(
                NAME,
                status.as_u16(),
                &body,
                retry_after,
            ));
        }
        let mut reader = Reader {
            tools: request.offered_tools().to_vec(),
            calls: BTreeMap::new(),
            usage: Usage::default(),
            stop_reason: None,
            first_text: None,
            ended: false,
            started,
        };
        if http::pump(response, &mut reader, &cancel, tx, NAME).await? == Pumped::Stopped {
            return Ok(());
        }
        if !reader.ended {
            return Err(ProviderError::Failed(format!(
                "{NAME} closed the stream before the reply ended"
            )));
        }
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        let first = reader.first_text.unwrap_or(elapsed);
        reader.usage.prompt_ms = first;
        reader.usage.generation_ms = elapsed - first;
        let _ = tx
            .send(StreamEvent::Done {
                usage: reader.usage,
                finish: match reader.stop_reason.as_deref() {
                    Some("max_tokens") => FinishReason::Length,
                    _ => FinishReason::Stop,
                },
            })
            .await;
        Ok(())
    }
}

/// The state of one streamed reply.
struct Reader {
    tools: Vec<ToolSpec>,
    /// `tool_use` blocks being streamed, by block index.
    calls: BTreeMap<u64, (String, String, String)>,
    usage: Usage,
    stop_reason: Option<String>,
    first_text: Option<f64>,
    /// `message_stop` arrived.
    ended: bool,
    started: Instant,
}

impl EventReader for Reader {
    fn read(&mut self, data: &str) -> Result<Vec<StreamEvent>, ProviderError> {
        let mut events = Vec::new();
        match wire::parse_event(NAME, data)? {
            Event::Start { input, cached } => {
                self.usage.prompt_tokens = input;
                self.usage.cached_tokens = cached;
            }
            Event::Text(text) => {
                self.first_text
                    .get_or_insert_with(|| self.started.elapsed().as_secs_f64() * 1000.0);
                events.push(StreamEvent::TextDelta(text));
            }
            Event::Thinking(text) => events.push(StreamEvent::ReasoningDelta(text)),
            Event::CallStart { index, id, name } => {
                self.calls.insert(index, (id, name, String::new()));
            }
            Event::CallArguments { index, json } => {
                if let Some(call) = self.calls.get_mut(&index) {
                    call.2.push_str(&json);
                }
            }
            Event::BlockStop { index } => {
                if let Some((id, name, json)) = self.calls.remove(&index) {
                    events.push(calls::checked(NAME, &self.tools, id, name, &json));
                }
            }
            Event::Stop { reason, output } => {
                self.stop_reason = reason;
                self.usage.completion_tokens = output;
            }
            Event::End => self.ended = true,
            Event::Other => {}
        }
        Ok(events)
    }

    fn ended(&self) -> bool {
        self.ended
    }

    fn usage(&self) -> Usage {
        self.usage
    }
}
