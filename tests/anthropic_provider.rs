//! The Anthropic provider against a fake Messages API on 127.0.0.1 that
//! streams as Anthropic's API reference documents (`event:` names,
//! `message_start` … `message_stop`, `content_block_*` with text, thinking
//! and `tool_use` blocks, `input_json_delta` pieces, `ping`, `error`), and
//! answers errors in its shape (529 overloaded, 429 with `retry-after`).
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hearth::channels::InMemoryChannel;
use hearth::chat::{
    ChatMessage, ChatRequest, FinishReason, ProviderError, SamplingParams, StreamEvent, ToolSpec,
};
use hearth::config::{Config, Environment};
use hearth::daemon::{LocalModels, Providers};
use hearth::pipeline::Outcome;
use hearth::providers::{AnthropicProvider, Provider};
use serde_json::{Value, json};
use support::*;
use tokio_util::sync::CancellationToken;

enum Answer {
    /// These events (name, data), then the stream ends.
    Events(Vec<(&'static str, Value)>),
    /// An error status, body and `retry-after`.
    Status(u16, &'static str, Option<&'static str>),
}

/// A request as the fake received it.
#[derive(Clone)]
struct Seen {
    key: Option<String>,
    version: Option<String>,
    body: Value,
}

#[derive(Default)]
struct Fake {
    answers: Mutex<VecDeque<Answer>>,
    seen: Mutex<Vec<Seen>>,
}

async fn messages(
    State(fake): State<Arc<Fake>>,
    headers: HeaderMap,
    body: axum::Json<Value>,
) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    fake.seen.lock().unwrap().push(Seen {
        key: header("x-api-key"),
        version: header("anthropic-version"),
        body: body.0,
    });
    match fake.answers.lock().unwrap().pop_front() {
        Some(Answer::Events(events)) => {
            let frames: Vec<Result<String, Infallible>> = events
                .iter()
                .map(|(name, data)| Ok(format!("event: {name}\ndata: {data}\n\n")))
                .collect();
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(futures::stream::iter(frames)))
                .unwrap()
        }
        Some(Answer::Status(code, body, retry)) => {
            let mut r = (StatusCode::from_u16(code).unwrap(), body).into_response();
            if let Some(after) = retry {
                r.headers_mut()
                    .insert("retry-after", after.parse().unwrap());
            }
            r
        }
        None => (StatusCode::INTERNAL_SERVER_ERROR, "no answer scripted").into_response(),
    }
}

/// Starts the fake; returns it and its root URL.
async fn serve(answers: Vec<Answer>) -> (Arc<Fake>, String) {
    let fake = Arc::new(Fake::default());
    fake.answers.lock().unwrap().extend(answers);
    let app = axum::Router::new()
        .route("/v1/messages", post(messages))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (fake, url)
}

fn start_msg(input: u32) -> (&'static str, Value) {
    (
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
        "role": "assistant", "content": [], "model": "claude-test", "stop_reason": null,
        "stop_sequence": null, "usage": {"input_tokens": input, "output_tokens": 1}}}),
    )
}

fn block(index: u32, content_block: Value) -> (&'static str, Value) {
    (
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": content_block}),
    )
}

fn delta(index: u32, delta: Value) -> (&'static str, Value) {
    (
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn text(index: u32, t: &str) -> (&'static str, Value) {
    delta(index, json!({"type": "text_delta", "text": t}))
}

fn stop(index: u32) -> (&'static str, Value) {
    (
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    )
}

fn tool_use(index: u32, id: &str, name: &str) -> (&'static str, Value) {
    block(
        index,
        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
    )
}

fn args(index: u32, json_piece: &str) -> (&'static str, Value) {
    delta(
        index,
        json!({"type": "input_json_delta", "partial_json": json_piece}),
    )
}

fn end(reason: &str, output: u32) -> Vec<(&'static str, Value)> {
    vec![
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": {"output_tokens": output}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]
}

fn config_toml(home: &std::path::Path, body: &str) -> Config {
    let path = home.join("hearth.toml");
    std::fs::write(&path, body).unwrap();
    Config::load_file(&path, &Environment::with_home(home)).unwrap()
}

fn provider(home: &std::path::Path, url: &str) -> AnthropicProvider {
    let cfg = config_toml(
        home,
        &format!(
            "[providers.anthropic]\nbase_url = \"{url}\"\nmodel = \"claude-test\"\napi_key = \"sk-ant-test\"\n"
        ),
    );
    AnthropicProvider::from_config(&cfg.anthropic)
        .unwrap()
        .unwrap()
}

fn file_tools() -> Vec<ToolSpec> {
    ["file_read", "file_write"]
        .into_iter()
        .map(|name| ToolSpec {
            name: name.into(),
            description: format!("{name} in the workspace"),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        })
        .collect()
}

fn request(text: &str) -> ChatRequest {
    let mut r = ChatRequest::new(
        "chat-1",
        vec![ChatMessage::system("Be brief."), ChatMessage::user(text)],
        SamplingParams::greedy(64),
    );
    r.tools = file_tools();
    r
}

async fn events(stream: hearth::chat::ChatStream) -> Vec<StreamEvent> {
    let mut stream = stream;
    let mut out = Vec::new();
    while let Some(e) = stream.next().await {
        out.push(e);
    }
    out
}

#[tokio::test]
async fn text_thinking_and_calls_stream_apart() {
    let home = tempfile::tempdir().unwrap();
    let mut answer = vec![
        start_msg(25),
        ("ping", json!({"type": "ping"})),
        block(0, json!({"type": "thinking", "thinking": ""})),
        delta(
            0,
            json!({"type": "thinking_delta", "thinking": "The user wants a"}),
        ),
        delta(
            0,
            json!({"type": "signature_delta", "signature": "EqQBCgIYAhIM"}),
        ),
        stop(0),
        block(1, json!({"type": "text", "text": ""})),
        text(1, "Saving "),
        text(1, "it."),
        stop(1),
        tool_use(2, "toolu_01", "file_write"),
        args(2, ""),
        args(2, "{\"path\": \"a."),
        args(2, "txt\", \"content\": \"x\"}"),
        stop(2),
    ];
    answer.extend(end("tool_use", 40));
    let (fake, url) = serve(vec![Answer::Events(answer)]).await;
    let reply = provider(home.path(), &url)
        .chat(request("save x to a.txt"), CancellationToken::new())
        .collect_with(|_| {})
        .await
        .unwrap();
    assert_eq!(reply.text, "Saving it.");
    assert_eq!(reply.reasoning, "The user wants a");
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].id, "toolu_01");
    assert_eq!(
        reply.tool_calls[0].arguments,
        json!({"path": "a.txt", "content": "x"})
    );
    assert_eq!(
        (reply.usage.prompt_tokens, reply.usage.completion_tokens),
        (25, 40)
    );
    let Seen { key, version, body } = fake.seen.lock().unwrap()[0].clone();
    assert_eq!(key.as_deref(), Some("sk-ant-test"));
    assert_eq!(version.as_deref(), Some("2023-06-01"));
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(body["stream"], true);
}

#[tokio::test]
async fn unoffered_tools_broken_input_and_cut_streams_are_refused() {
    let home = tempfile::tempdir().unwrap();
    let mut hostile = vec![
        start_msg(10),
        tool_use(0, "toolu_a", "shell"),
        args(0, "{\"command\": \"cat /proc/self/environ\"}"),
        stop(0),
        tool_use(1, "toolu_b", "file_read"),
        args(1, "{\"path\": "),
        stop(1),
    ];
    hostile.extend(end("tool_use", 9));
    let cut = vec![
        start_msg(10),
        tool_use(0, "toolu_c", "file_read"),
        args(0, "{\"path\": \"a"),
    ];
    let (_fake, url) = serve(vec![Answer::Events(hostile), Answer::Events(cut)]).await;
    let anthropic = provider(home.path(), &url);
    let seen = events(anthropic.chat(request("x"), CancellationToken::new())).await;
    assert!(
        !seen.iter().any(|e| matches!(e, StreamEvent::ToolCall(_))),
        "{seen:?}"
    );
    let malformed: Vec<&String> = seen
        .iter()
        .filter_map(|e| match e {
            StreamEvent::MalformedCall(m) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(malformed.len(), 2, "{seen:?}");
    assert!(malformed[0].contains("`shell`"), "{malformed:?}");
    assert!(matches!(
        seen.last(),
        Some(StreamEvent::Done {
            finish: FinishReason::Stop,
            ..
        })
    ));
    let e = anthropic
        .chat(request("x"), CancellationToken::new())
        .collect_with(|_| {})
        .await
        .unwrap_err();
    assert!(e.to_string().contains("closed the stream"), "{e}");
}

#[tokio::test]
async fn overload_rate_limits_and_overflow_are_typed() {
    let home = tempfile::tempdir().unwrap();
    let (_fake, url) = serve(vec![
        Answer::Status(529, r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#, None),
        Answer::Status(429, r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#, Some("12")),
        Answer::Status(400, r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208371 tokens > 200000 maximum"}}"#, None),
        Answer::Status(401, r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#, None),
        Answer::Events(vec![
            start_msg(5),
            block(0, json!({"type": "text", "text": ""})),
            text(0, "Hal"),
            ("error", json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
        ]),
    ])
    .await;
    let anthropic = provider(home.path(), &url);
    let ask = || async {
        anthropic
            .chat(request("hi"), CancellationToken::new())
            .collect_with(|_| {})
            .await
            .unwrap_err()
    };
    assert!(matches!(
        ask().await,
        ProviderError::Busy {
            retry_after_secs: None,
            ..
        }
    ));
    assert!(matches!(
        ask().await,
        ProviderError::Busy {
            retry_after_secs: Some(12),
            ..
        }
    ));
    assert!(matches!(
        ask().await,
        ProviderError::ContextOverflow {
            needed: 208371,
            limit: 200000
        }
    ));
    let key = ask().await.to_string();
    assert!(key.contains("ANTHROPIC_API_KEY"), "{key}");
    assert!(
        matches!(ask().await, ProviderError::Busy { .. }),
        "an error event mid-stream"
    );
}

#[tokio::test]
async fn native_calls_run_through_the_pipeline_with_their_ids() {
    let home = tempfile::tempdir().unwrap();
    let call = |id: &str, name: &str, input: &str| {
        let mut e = vec![
            start_msg(50),
            tool_use(0, id, name),
            args(0, input),
            stop(0),
        ];
        e.extend(end("tool_use", 12));
        Answer::Events(e)
    };
    let mut last = vec![
        start_msg(80),
        block(0, json!({"type": "text", "text": ""})),
        text(0, "The note says milk."),
        stop(0),
    ];
    last.extend(end("end_turn", 6));
    let (fake, url) = serve(vec![
        call(
            "toolu_w1",
            "file_write",
            "{\"path\": \"notes.txt\", \"content\": \"milk\"}",
        ),
        call("toolu_r2", "file_read", "{\"path\": \"notes.txt\"}"),
        Answer::Events(last),
    ])
    .await;
    let cfg = config_toml(
        home.path(),
        &format!(
            "[model]\npath = \"/nonexistent/model.gguf\"\n[providers.anthropic]\nbase_url = \"{url}\"\nmodel = \"claude-test\"\n[routing]\ndefault_provider = \"anthropic\"\n"
        ),
    );
    let workspace = cfg.agent.workspace.clone();
    let models = Arc::new(LocalModels::new(cfg.clone()));
    let providers = Arc::new(Providers::new(&cfg, models).unwrap());
    let channel =
        Arc::new(InMemoryChannel::new("mem").always_answer(hearth::channels::Answer::Once));
    let (daemon, mut rx) = start(builder(cfg, providers), channel.clone());
    channel.inject_text("ada", "note milk, then read it back");
    assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::Replied);
    assert_eq!(texts(&channel, "ada"), ["The note says milk."]);
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.txt")).unwrap(),
        "milk"
    );
    let seen = fake.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    let system = seen[0].body["system"].as_str().unwrap();
    assert!(
        !system.contains("<tool_call>"),
        "tools are not taught in text"
    );
    // Each result went back as a tool_result block naming its call.
    let messages = seen[2].body["messages"].as_array().unwrap().clone();
    let results: Vec<(String, String)> = messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            (
                b["tool_use_id"].as_str().unwrap().to_string(),
                b["content"].to_string(),
            )
        })
        .collect();
    assert_eq!(results.len(), 2, "{messages:?}");
    assert_eq!(results[0].0, "toolu_w1");
    assert_eq!(results[1].0, "toolu_r2");
    assert!(results[1].1.contains("milk"), "{results:?}");
    // Turns alternate, as the API requires.
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert!(roles.windows(2).all(|w| w[0] != w[1]), "{roles:?}");
    daemon.stop().await;
}

/// Through a route, as the daemon builds it: an overloaded API (529 with
/// `retry-after: 1`) is asked again after that second, and the person gets
/// the reply rather than the overload.
#[tokio::test]
async fn an_overloaded_api_is_asked_again_after_its_retry_after() {
    let home = tempfile::tempdir().unwrap();
    let mut reply = vec![
        start_msg(20),
        block(0, json!({"type": "text", "text": ""})),
        text(0, "Hello again."),
        stop(0),
    ];
    reply.extend(end("end_turn", 4));
    let (fake, url) = serve(vec![
        Answer::Status(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            Some("1"),
        ),
        Answer::Events(reply),
    ])
    .await;
    let cfg = config_toml(
        home.path(),
        &format!(
            "[model]\npath = \"/nonexistent/model.gguf\"\n[providers.anthropic]\nbase_url = \"{url}\"\nmodel = \"claude-test\"\n[routing]\ndefault_provider = \"anthropic\"\n"
        ),
    );
    let models = Arc::new(LocalModels::new(cfg.clone()));
    let providers = Arc::new(Providers::new(&cfg, models).unwrap());
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(builder(cfg, providers), channel.clone());
    let started = std::time::Instant::now();
    channel.inject_text("ada", "hello");
    assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::Replied);
    assert_eq!(texts(&channel, "ada"), ["Hello again."]);
    assert_eq!(fake.seen.lock().unwrap().len(), 2);
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));
    daemon.stop().await;
}

/// `[routing] images = "anthropic"`: a picture that the local model cannot
/// see goes to the cloud model as a base64 `image` block, and its reply
/// comes back; a message without one stays on the box.
#[tokio::test(flavor = "multi_thread")]
// Held across the awaits on purpose: it serialises the test binary's engines.
#[allow(clippy::await_holding_lock)]
async fn a_picture_the_local_model_cannot_see_goes_to_the_routed_cloud_model() {
    let _engine_turn = crate::common::engine_lock();
    let home = tempfile::tempdir().unwrap();
    let mut reply = vec![
        start_msg(300),
        block(0, json!({"type": "text", "text": ""})),
        text(0, "A red square."),
        stop(0),
    ];
    reply.extend(end("end_turn", 4));
    let (fake, url) = serve(vec![Answer::Events(reply)]).await;
    let cfg = config_toml(
        home.path(),
        &format!(
            "[model]\npath = \"{}\"\nmmproj = \"\"\ncontext_size = 2048\n[generation]\nmax_tokens = 8\ntemperature = 0.0\n[providers.anthropic]\nbase_url = \"{url}\"\nmodel = \"claude-test\"\napi_key = \"sk-ant-test\"\n[routing]\nimages = \"anthropic\"\n",
            crate::common::model(crate::common::SMOLLM2).display()
        ),
    );
    let models = Arc::new(LocalModels::new(cfg.clone()));
    let providers = Arc::new(Providers::new(&cfg, models).unwrap());
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(builder(cfg, providers), channel.clone());

    let png = crate::common::pictures::png(40, 30, [220, 20, 20]);
    let mut message = channel.inject_text("ada", "Hello there.");
    assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::Replied);
    assert!(
        fake.seen.lock().unwrap().is_empty(),
        "text stays on the box"
    );
    message.id = format!("{}-picture", message.id);
    message.content = "What is in this picture?".into();
    message.images = vec![hearth::chat::Image::new(png.clone())];
    channel.inject(message);
    assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::Replied);
    assert_eq!(texts(&channel, "ada").last().unwrap(), "A red square.");

    let seen = fake.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let last = seen[0].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let blocks = last["content"].as_array().cloned().unwrap_or_default();
    let image = blocks
        .iter()
        .find(|b| b["type"] == "image")
        .unwrap_or_else(|| panic!("no image block: {last}"));
    assert_eq!(image["source"]["type"], "base64");
    assert_eq!(image["source"]["media_type"], "image/png");
    assert_eq!(
        image["source"]["data"].as_str().unwrap(),
        hearth::chat::Image::new(png).base64()
    );
    assert!(
        last.to_string().contains("What is in this picture?"),
        "{last}"
    );
    daemon.stop().await;
}
