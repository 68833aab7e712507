//! Client tools come back as OpenAI `tool_calls` whatever the model
//! family writes. SmolLM2 writes hearth's `<tool_call>` protocol (see
//! `tests/openai_api.rs`); for the other thirteen families, a fixture reply
//! in the family's own format stands in for the model: it is read by the
//! engine's real splitter and parser for that family, and the gateway must
//! turn the call into Home Assistant's `tool_calls`. A reply without a
//! call is the positive control: text, `finish_reason: "stop"`.

use crate::support::ways_in::{TOKEN, gateway_serving};

use std::sync::Arc;

use futures::future::BoxFuture;
use hearth::channels::gateway::{Embedded, ServedModel};
use hearth::chat::{
    ChatRequest, ChatStream, FinishReason, ProviderError, SamplingParams, StreamEvent, Usage,
};
use hearth::engine::formats::{self, Ids, ModelFamily, Piece};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A model of `family` whose reply is always `reply`.
struct Fixture {
    family: ModelFamily,
    reply: String,
}

impl ServedModel for Fixture {
    fn name(&self) -> String {
        "fixture".into()
    }

    fn chat(
        &self,
        request: ChatRequest,
        _cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<ChatStream, ProviderError>> {
        // What the engine does with a reply: split it by the family's
        // markers, and read each call section with the family's parser.
        let format = formats::format(self.family);
        let mut splitter = format.splitter(false, Vec::new(), !request.tools.is_empty());
        let mut pieces = splitter.push(&self.reply);
        pieces.extend(splitter.finish());
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        let mut ids = Ids::new(7);
        for piece in pieces {
            let events = match piece {
                Piece::Content(text) => vec![StreamEvent::TextDelta(text)],
                Piece::Call { text, .. } => {
                    let calls = format.parse(&text, &request.tools, &mut ids);
                    let mut events: Vec<StreamEvent> =
                        calls.calls.into_iter().map(StreamEvent::ToolCall).collect();
                    events.extend(calls.malformed.into_iter().map(StreamEvent::MalformedCall));
                    events
                }
                Piece::Reasoning(_) | Piece::Stop => Vec::new(),
            };
            for event in events {
                tx.try_send(event).unwrap();
            }
        }
        tx.try_send(StreamEvent::Done {
            usage: Usage::default(),
            finish: FinishReason::Stop,
        })
        .unwrap();
        Box::pin(async move { Ok(ChatStream::new(rx)) })
    }

    fn embed(&self, _inputs: Vec<String>) -> BoxFuture<'_, Result<Embedded, ProviderError>> {
        Box::pin(async { Err(ProviderError::InvalidRequest("no embeddings here".into())) })
    }

    fn defaults(&self) -> SamplingParams {
        SamplingParams::greedy(100)
    }
}

/// `HassTurnOn` for the kitchen light, as each family's models write it.
fn call(family: ModelFamily) -> &'static str {
    match family {
        ModelFamily::Xml | ModelFamily::Hermes => {
            "<tool_call>\n{\"name\": \"HassTurnOn\", \"arguments\": {\"name\": \"Kitchen Light\"}}\n</tool_call>"
        }
        ModelFamily::Llama3 => {
            "{\"name\": \"HassTurnOn\", \"parameters\": {\"name\": \"Kitchen Light\"}}"
        }
        ModelFamily::Mistral => {
            "[TOOL_CALLS][{\"name\": \"HassTurnOn\", \"arguments\": {\"name\": \"Kitchen Light\"}, \"id\": \"abc123DEF\"}]"
        }
        ModelFamily::MistralV7 => "[TOOL_CALLS]HassTurnOn[ARGS]{\"name\": \"Kitchen Light\"}",
        ModelFamily::Harmony => {
            "<|channel|>commentary to=functions.HassTurnOn <|constrain|>json<|message|>{\"name\": \"Kitchen Light\"}"
        }
        ModelFamily::DeepSeek => {
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>HassTurnOn\n```json\n{\"name\": \"Kitchen Light\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        }
        ModelFamily::CommandR => {
            "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"HassTurnOn\", \"parameters\": {\"name\": \"Kitchen Light\"}}\n]<|END_ACTION|>"
        }
        ModelFamily::Phi4 => {
            "<|tool_call|>[{\"name\": \"HassTurnOn\", \"arguments\": {\"name\": \"Kitchen Light\"}}]<|/tool_call|>"
        }
        ModelFamily::Granite => {
            "<|tool_call|>[{\"name\": \"HassTurnOn\", \"arguments\": {\"name\": \"Kitchen Light\"}}]"
        }
        ModelFamily::Nemotron => {
            "<TOOLCALL>[{\"name\": \"HassTurnOn\", \"arguments\": {\"name\": \"Kitchen Light\"}}]</TOOLCALL>"
        }
        ModelFamily::Gemma4 => {
            "<|tool_call>call:HassTurnOn{name:<|\"|>Kitchen Light<|\"|>}<tool_call|>"
        }
        ModelFamily::Glm => {
            "<tool_call>HassTurnOn\n<arg_key>name</arg_key>\n<arg_value>Kitchen Light</arg_value>\n</tool_call>"
        }
        ModelFamily::Kimi => {
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.HassTurnOn:0<|tool_call_argument_begin|>{\"name\": \"Kitchen Light\"}<|tool_call_end|><|tool_calls_section_end|>"
        }
    }
}

/// Home Assistant's request: its prompt, the `HassTurnOn` tool, `auto`.
fn home_assistant(stream: bool) -> Value {
    json!({
        "model": "fixture",
        "stream": stream,
        "messages": [
            {"role": "system", "content": "You are a voice assistant for Home Assistant.\nWhen controlling Home Assistant always call the intent tools."},
            {"role": "user", "content": "turn on the kitchen light"}
        ],
        "tools": [{"type": "function", "function": {
            "name": "HassTurnOn", "description": "Turns on/opens/presses a device or entity.",
            "parameters": {"type": "object", "properties": {"name": {"type": "string"}, "area": {"type": "string"}}}}}],
        "tool_choice": "auto"
    })
}

async fn ask(family: ModelFamily, reply: &str, stream: bool) -> Value {
    let fixture = Arc::new(Fixture {
        family,
        reply: reply.to_string(),
    });
    let run = gateway_serving("", Some(fixture)).await;
    let response = reqwest::Client::new()
        .post(format!("http://{}/v1/chat/completions", run.addr))
        .bearer_auth(TOKEN)
        .json(&home_assistant(stream))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{family:?}");
    let body = response.text().await.unwrap();
    run.daemon.stop().await;
    if !stream {
        return serde_json::from_str(&body).unwrap();
    }
    // The streamed chunks folded into one message, as a client does.
    let (mut calls, mut finish, mut text) = (Vec::new(), Value::Null, String::new());
    for line in body.lines().filter_map(|l| l.strip_prefix("data: ")) {
        let Ok(chunk) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let choice = &chunk["choices"][0];
        if let Some(more) = choice["delta"]["tool_calls"].as_array() {
            calls.extend(more.iter().cloned());
        }
        text.push_str(choice["delta"]["content"].as_str().unwrap_or(""));
        if !choice["finish_reason"].is_null() {
            finish = choice["finish_reason"].clone();
        }
    }
    json!({"choices": [{"message": {"content": text, "tool_calls": calls}, "finish_reason": finish}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_family_s_call_reaches_home_assistant_as_tool_calls() {
    for family in ModelFamily::ALL {
        let family = &family;
        for stream in [false, true] {
            let answer = ask(*family, call(*family), stream).await;
            let choice = &answer["choices"][0];
            assert_eq!(
                choice["finish_reason"], "tool_calls",
                "{family:?}: {answer}"
            );
            let calls = choice["message"]["tool_calls"].as_array().unwrap();
            assert_eq!(calls.len(), 1, "{family:?}: {answer}");
            assert_eq!(calls[0]["type"], "function");
            assert_eq!(calls[0]["function"]["name"], "HassTurnOn", "{family:?}");
            assert!(!calls[0]["id"].as_str().unwrap().is_empty(), "{family:?}");
            let arguments: Value =
                serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
            assert_eq!(arguments, json!({"name": "Kitchen Light"}), "{family:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_without_a_call_is_text_in_every_family() {
    for family in ModelFamily::ALL {
        let family = &family;
        let answer = ask(*family, "The kitchen light is already on.", false).await;
        let choice = &answer["choices"][0];
        assert_eq!(choice["finish_reason"], "stop", "{family:?}: {answer}");
        assert_eq!(
            choice["message"]["content"], "The kitchen light is already on.",
            "{family:?}"
        );
        assert!(
            choice["message"]["tool_calls"].is_null(),
            "{family:?}: {answer}"
        );
    }
}
