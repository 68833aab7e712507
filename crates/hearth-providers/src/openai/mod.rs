//! An OpenAI-compatible chat-completions API as a [`Provider`]: OpenAI
//! itself, or anything that speaks its protocol (OpenRouter, Groq, a
//! llama-server or Ollama on another machine).
//!
//! hearth answers locally first; this provider serves as a fallback (or a
//! route) only where the config names it. Replies stream over server-sent
//! events and pass through the same output splitter as the local engine, so
//! `<think>` blocks and `<tool_call>` tags never stream to the user.
//!
//! With `native_tools` (the default) the tools go in the request's `tools`
//! field and calls come back as structured `tool_calls`, streamed in pieces
//! and put together here, so the agent uses its native dispatcher;
//! otherwise calls travel in the text in hearth's `<tool_call>` protocol.

mod wire;

use std::collections::BTreeMap;
use std::time::Instant;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Provider;
use super::calls;
use super::http::{self, EventReader, Pumped, capped_body};
use crate::chat::{ChatRequest, ChatStream, FinishReason, ProviderError, StreamEvent, Usage};
use crate::config::{OpenAiConfig, Secret};
use crate::engine::formats::{self, Ids, ModelFamily, Piece, Splitter};

/// One OpenAI-compatible endpoint and model.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    name: String,
    base_url: String,
    model: String,
    api_key: Option<Secret>,
    context_window: Option<u32>,
    native_tools: bool,
    client: reqwest::Client,
}

impl OpenAiProvider {
    /// The provider `[providers.openai]` describes, or `None` when it names
    /// no model (not configured).
    pub fn from_config(config: &OpenAiConfig) -> Result<Option<Self>, ProviderError> {
        let Some(model) = &config.model else {
            return Ok(None);
        };
        let client = http::client(config.timeout_secs)?;
        Ok(Some(Self {
            name: "openai".to_string(),
            base_url: config.base_url.trim_end_matches('/').to_string(),
            model: model.clone(),
            api_key: config.api_key.clone(),
            context_window: config.context_window,
            native_tools: config.native_tools,
            client,
        }))
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    /// The same endpoint with another model (a route's `[routing.models]` id).
    pub fn with_model(&self, model: &str) -> Self {
        Self {
            model: model.to_string(),
            ..self.clone()
        }
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn chat(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let this = self.clone();
        http::spawn("OpenAI", move |tx| async move {
            this.stream(request, cancel, &tx).await
        })
    }

    fn context_window(&self) -> Option<u32> {
        self.context_window
    }

    fn supports_native_tools(&self) -> bool {
        self.native_tools
    }

    /// Sent as `image_url` parts; a model that cannot read them says so.
    fn sees_images(&self) -> bool {
        true
    }
}

impl OpenAiProvider {
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
            .post(format!("{}/chat/completions", self.base_url))
            .json(&wire::request_body(
                &self.model,
                &request,
                self.native_tools,
            ));
        if let Some(key) = &self.api_key {
            call = call.bearer_auth(key.expose());
        }
        let Some(response) = http::send(call, &cancel, &self.name, &self.base_url).await? else {
            let _ = tx.send(http::cancelled(Usage::default())).await;
            return Ok(());
        };
        let status = response.status();
        if !status.is_success() {
            let body = capped_body(response).await;
            return Err(wire::classify_error(&self.name, status.as_u16(), &body));
        }

        let tools = request.offered_tools().to_vec();
        let mut reader = Reader {
            filter: formats::format(ModelFamily::Xml).splitter(
                false,
                request.sampling.stop.clone(),
                !self.native_tools && !tools.is_empty(),
            ),
            ids: Ids::random(),
            tools,
            calls: BTreeMap::new(),
            usage: Usage::default(),
            finish: None,
            first_text: None,
            ended: false,
            started,
        };
        if http::pump(response, &mut reader, &cancel, tx, &self.name).await? == Pumped::Stopped {
            return Ok(());
        }
        if !reader.ended && reader.finish.is_none() {
            return Err(ProviderError::Failed(format!(
                "{} closed the stream before the reply ended",
                self.name
            )));
        }
        let mut events: Vec<StreamEvent> = reader.flush();
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        let first = reader.first_text.unwrap_or(elapsed);
        reader.usage.prompt_ms = first;
        reader.usage.generation_ms = elapsed - first;
        events.push(StreamEvent::Done {
            usage: reader.usage,
            finish: match reader.finish.as_deref() {
                Some("length") => FinishReason::Length,
                _ => FinishReason::Stop,
            },
        });
        for event in events {
            let _ = tx.send(event).await;
        }
        Ok(())
    }
}

/// The state of one streamed reply.
struct Reader {
    /// Calls travel in the text, in hearth's XML protocol.
    filter: Splitter,
    ids: Ids,
    tools: Vec<crate::chat::ToolSpec>,
    /// Structured calls being streamed, by their index in the reply.
    calls: BTreeMap<u64, PartialCall>,
    usage: Usage,
    finish: Option<String>,
    /// Milliseconds until the first text arrived.
    first_text: Option<f64>,
    /// `[DONE]` or a stop string was reached.
    ended: bool,
    started: Instant,
}

impl EventReader for Reader {
    fn read(&mut self, data: &str) -> Result<Vec<StreamEvent>, ProviderError> {
        if self.ended {
            return Ok(Vec::new());
        }
        if data.trim() == "[DONE]" {
            self.ended = true;
            return Ok(Vec::new());
        }
        let chunk = wire::parse_chunk(data)?;
        if let Some(usage) = chunk.usage {
            self.usage = usage;
        }
        if chunk.finish_reason.is_some() {
            self.finish = chunk.finish_reason;
        }
        for piece in chunk.calls {
            let call = self.calls.entry(piece.index).or_default();
            call.id = piece.id.or(call.id.take());
            call.name = piece.name.or(call.name.take());
            call.arguments
                .push_str(piece.arguments.as_deref().unwrap_or(""));
        }
        let mut events = Vec::new();
        if let Some(reasoning) = chunk.reasoning {
            events.push(StreamEvent::ReasoningDelta(reasoning));
        }
        if let Some(text) = chunk.content {
            self.first_text
                .get_or_insert_with(|| self.started.elapsed().as_secs_f64() * 1000.0);
            let pieces = self.filter.push(&text);
            events.extend(self.events(pieces));
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

impl Reader {
    /// What the splitter still held back and the structured calls, once
    /// the stream is over.
    fn flush(&mut self) -> Vec<StreamEvent> {
        let pieces = self.filter.finish();
        let mut events = self.events(pieces);
        for (_, call) in std::mem::take(&mut self.calls) {
            events.push(call.finish(&self.tools, &mut self.ids));
        }
        events
    }

    fn events(&mut self, pieces: Vec<Piece>) -> Vec<StreamEvent> {
        let mut events = Vec::new();
        for piece in pieces {
            match piece {
                Piece::Content(text) => events.push(StreamEvent::TextDelta(text)),
                Piece::Reasoning(text) => events.push(StreamEvent::ReasoningDelta(text)),
                Piece::Call { text, closed } => {
                    let read =
                        formats::format(ModelFamily::Xml).parse(&text, &self.tools, &mut self.ids);
                    if read.calls.is_empty() && read.malformed.is_empty() && !closed {
                        events.push(StreamEvent::MalformedCall(
                            "the reply ended inside a tool call".into(),
                        ));
                    }
                    events.extend(read.calls.into_iter().map(StreamEvent::ToolCall));
                    events.extend(read.malformed.into_iter().map(StreamEvent::MalformedCall));
                    if !read.text.is_empty() {
                        events.push(StreamEvent::TextDelta(read.text));
                    }
                }
                Piece::Stop => self.ended = true,
            }
        }
        events
    }
}

/// A structured call put together from its streamed pieces.
#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: Option<String>,
    arguments: String,
}

impl PartialCall {
    /// The call, checked (see [`calls::checked`]); a call without an id
    /// gets one.
    fn finish(self, tools: &[crate::chat::ToolSpec], ids: &mut Ids) -> StreamEvent {
        let id = self
            .id
            .unwrap_or_else(|| format!("call_{}", ids.letters(9)));
        calls::checked(
            "the provider",
            tools,
            id,
            self.name.unwrap_or_default(),
            &self.arguments,
        )
    }
}
