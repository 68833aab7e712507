//! The OpenAI-compatible provider against a fake chat-completions server on
//! 127.0.0.1, and the fallback chain from the local engine to it, end to end
//! through the pipeline.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
use hearth::providers::{OpenAiProvider, Provider};
use serde_json::{Value, json};
use support::*;
use tokio_util::sync::CancellationToken;

/// What the fake server does with the next request.
enum Answer {
    /// These `data:` payloads, `gap` apart, then `[DONE]`.
    Stream(Vec<Value>, Duration),
    /// These payloads, then the connection ends without `[DONE]` or a
    /// finish reason.
    Cut(Vec<Value>),
    /// An error status with this body.
    Status(u16, &'static str),
}

#[derive(Default)]
struct Fake {
    answers: Mutex<VecDeque<Answer>>,
    /// Each request's Authorization header and JSON body.
    seen: Mutex<Vec<(Option<String>, Value)>>,
}

impl Fake {
    fn then(&self, answer: Answer) -> &Self {
        self.answers.lock().unwrap().push_back(answer);
        self
    }

    fn seen(&self) -> Vec<(Option<String>, Value)> {
        self.seen.lock().unwrap().clone()
    }
}

async fn completions(
    State(fake): State<Arc<Fake>>,
    headers: HeaderMap,
    body: axum::Json<Value>,
) -> Response {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    fake.seen.lock().unwrap().push((auth, body.0));
    let answer = fake.answers.lock().unwrap().pop_front();
    let (payloads, gap, done) = match answer {
        Some(Answer::Stream(p, gap)) => (p, gap, true),
        Some(Answer::Cut(p)) => (p, Duration::ZERO, false),
        Some(Answer::Status(code, body)) => {
            return (StatusCode::from_u16(code).unwrap(), body).into_response();
        }
        None => return (StatusCode::INTERNAL_SERVER_ERROR, "no answer scripted").into_response(),
    };
    let mut frames: Vec<String> = payloads.iter().map(|p| format!("data: {p}\n\n")).collect();
    if done {
        frames.push("data: [DONE]\n\n".to_string());
    }
    let stream = futures::stream::unfold(frames.into_iter(), move |mut rest| async move {
        let frame = rest.next()?;
        tokio::time::sleep(gap).await;
        Some((Ok::<_, Infallible>(frame), rest))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// Starts the fake; returns it and its `/v1` base URL.
async fn serve() -> (Arc<Fake>, String) {
    let fake = Arc::new(Fake::default());
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (fake, url)
}

fn delta(text: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
}

fn finish(reason: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

fn usage(prompt: u32, completion: u32) -> Value {
    json!({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}})
}

fn config_toml(home: &std::path::Path, body: &str) -> Config {
    let path = home.join("hearth.toml");
    std::fs::write(&path, body).unwrap();
    Config::load_file(&path, &Environment::with_home(home)).unwrap()
}

fn provider(home: &std::path::Path, url: &str) -> OpenAiProvider {
    provider_with(home, url, "")
}

/// The provider with `extra` lines in its config section.
fn provider_with(home: &std::path::Path, url: &str, extra: &str) -> OpenAiProvider {
    let cfg = config_toml(
        home,
        &format!(
            "[providers.openai]\nbase_url = \"{url}\"\nmodel = \"gpt-test\"\napi_key = \"sk-test-0123456789\"\ntimeout_secs = 30\n{extra}"
        ),
    );
    OpenAiProvider::from_config(&cfg.openai).unwrap().unwrap()
}

/// The first streamed piece of a structured call, as OpenAI sends it: its
/// index, id, type and name, with empty arguments.
fn call_start(index: u32, id: &str, name: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0,
        "delta": {"role": "assistant", "content": null, "tool_calls": [{"index": index, "id": id,
            "type": "function", "function": {"name": name, "arguments": ""}}]},
        "finish_reason": null}]})
}

/// A further piece of call `index`'s arguments.
fn call_args(index: u32, text: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0,
        "delta": {"tool_calls": [{"index": index, "function": {"arguments": text}}]},
        "finish_reason": null}]})
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
    ChatRequest::new(
        "chat-1",
        vec![ChatMessage::system("Be brief."), ChatMessage::user(text)],
        SamplingParams::greedy(64),
    )
}

#[tokio::test]
async fn a_streamed_reply_arrives_without_its_think_block() {
    let home = tempfile::tempdir().unwrap();
    let (fake, url) = serve().await;
    fake.then(Answer::Stream(
        vec![
            delta("<thi"),
            delta("nk>weighing it</think>Par"),
            delta("is is the capital."),
            finish("stop"),
            usage(21, 7),
        ],
        Duration::from_millis(5),
    ));
    let openai = provider(home.path(), &url);
    let mut streamed = String::new();
    let reply = openai
        .chat(request("Capital of France?"), CancellationToken::new())
        .collect_with(|t| streamed.push_str(t))
        .await
        .unwrap();
    assert_eq!(reply.text, "Paris is the capital.");
    assert_eq!(streamed, reply.text, "the think block never streamed");
    assert_eq!(reply.reasoning, "weighing it");
    assert_eq!(reply.finish, FinishReason::Stop);
    assert_eq!(
        (reply.usage.prompt_tokens, reply.usage.completion_tokens),
        (21, 7)
    );

    let (auth, body) = &fake.seen()[0];
    assert_eq!(auth.as_deref(), Some("Bearer sk-test-0123456789"));
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["stream"], true);
    assert_eq!(body["messages"][1]["content"], "Capital of France?");
}

#[tokio::test]
async fn a_tool_call_in_the_text_becomes_a_call() {
    let home = tempfile::tempdir().unwrap();
    let (fake, url) = serve().await;
    fake.then(Answer::Stream(
        vec![
            delta("Let me look.<tool_"),
            delta(
                "call>{\"name\": \"file_read\", \"arguments\": {\"path\": \"a.txt\"}}</tool_call>",
            ),
            finish("stop"),
        ],
        Duration::ZERO,
    ));
    let mut req = request("read a.txt");
    req.tools = vec![ToolSpec {
        name: "file_read".into(),
        description: "Reads a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }];
    let reply = provider_with(home.path(), &url, "native_tools = false\n")
        .chat(req, CancellationToken::new())
        .collect_with(|_| {})
        .await
        .unwrap();
    assert_eq!(reply.text, "Let me look.");
    assert!(
        fake.seen()[0].1.get("tools").is_none(),
        "tools went as text"
    );
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].name, "file_read");
    assert_eq!(reply.tool_calls[0].arguments["path"], "a.txt");
}

#[tokio::test]
async fn structured_calls_streamed_in_pieces_become_calls_with_their_ids() {
    let home = tempfile::tempdir().unwrap();
    let (fake, url) = serve().await;
    // Two parallel calls, their arguments cut mid-token, as OpenAI streams.
    fake.then(Answer::Stream(
        vec![
            call_start(0, "call_w1", "file_write"),
            call_args(0, "{\"pa"),
            call_args(0, "th\": \"a.txt\", \"content\": \"x\"}"),
            call_start(1, "call_r2", "file_read"),
            call_args(1, "{\"path\": \"b.txt\"}"),
            finish("tool_calls"),
        ],
        Duration::ZERO,
    ));
    let openai = provider(home.path(), &url);
    assert!(openai.supports_native_tools());
    let mut req = request("write a, read b");
    req.tools = file_tools();
    let reply = openai
        .chat(req, CancellationToken::new())
        .collect_with(|_| {})
        .await
        .unwrap();
    let calls: Vec<(&str, &str, &Value)> = reply
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), &c.arguments))
        .collect();
    assert_eq!(
        calls,
        [
            (
                "call_w1",
                "file_write",
                &json!({"path": "a.txt", "content": "x"})
            ),
            ("call_r2", "file_read", &json!({"path": "b.txt"})),
        ]
    );
    assert_eq!(reply.text, "");
    let body = &fake.seen()[0].1;
    assert_eq!(body["tools"][1]["function"]["name"], "file_write");
    assert_eq!(body["tool_choice"], "auto");
}

#[tokio::test]
async fn a_call_to_a_tool_not_offered_or_with_broken_arguments_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let (fake, url) = serve().await;
    // A prompt-injected model reaches for a tool it was not given, and
    // writes arguments that are not JSON.
    fake.then(Answer::Stream(
        vec![
            call_start(0, "call_1", "shell"),
            call_args(0, "{\"command\": \"cat /etc/passwd\"}"),
            call_start(1, "call_2", "file_read"),
            call_args(1, "{\"path\": "),
            finish("tool_calls"),
        ],
        Duration::ZERO,
    ))
    .then(Answer::Cut(vec![
        call_start(0, "call_3", "file_read"),
        call_args(0, "{\"path\": \"a"),
    ]));
    let openai = provider(home.path(), &url);
    let mut req = request("read");
    req.tools = file_tools();
    let mut stream = openai.chat(req.clone(), CancellationToken::new());
    let mut events = Vec::new();
    while let Some(e) = stream.next().await {
        events.push(e);
    }
    assert!(
        !events.iter().any(|e| matches!(e, StreamEvent::ToolCall(_))),
        "{events:?}"
    );
    let malformed: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::MalformedCall(m) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(malformed.len(), 2, "{events:?}");
    assert!(malformed[0].contains("`shell`") && malformed[0].contains("not an offered tool"));
    assert!(malformed[1].contains("not a JSON object"));
    // A stream cut in the middle of a call is an error, not half a call.
    let cut = openai
        .chat(req, CancellationToken::new())
        .collect_with(|_| {})
        .await
        .unwrap_err()
        .to_string();
    assert!(cut.contains("closed the stream"), "{cut}");
}

#[tokio::test]
async fn native_calls_run_through_the_pipeline_with_their_ids() {
    let home = tempfile::tempdir().unwrap();
    let (fake, url) = serve().await;
    fake.then(Answer::Stream(
        vec![
            call_start(0, "call_w1", "file_write"),
            call_args(0, "{\"path\": \"notes.txt\", \"content\": \"milk\"}"),
            finish("tool_calls"),
        ],
        Duration::ZERO,
    ))
    .then(Answer::Stream(
        vec![
            call_start(0, "call_r2", "file_read"),
            call_args(0, "{\"path\": \"notes.txt\"}"),
            finish("tool_calls"),
        ],
        Duration::ZERO,
    ))
    .then(Answer::Stream(
        vec![delta("The note says milk."), finish("stop")],
        Duration::ZERO,
    ));
    let cfg = config_toml(
        home.path(),
        &format!(
            "[model]\npath = \"/nonexistent/model.gguf\"\n[providers.openai]\nbase_url = \"{url}\"\nmodel = \"gpt-test\"\n[routing]\ndefault_provider = \"openai\"\n"
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
    let seen = fake.seen();
    assert_eq!(seen.len(), 3);
    // The native dispatcher: tools in the `tools` field, not taught in text.
    let first = &seen[0].1;
    assert!(first["tools"].as_array().is_some_and(|t| !t.is_empty()));
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(!system.contains("<tool_call>"), "{system}");
    // Each result went back as a `tool` turn naming its call.
    let messages = seen[2].1["messages"].as_array().unwrap().clone();
    let results: Vec<(&str, &str)> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(results.len(), 2, "{messages:?}");
    assert_eq!(results[0].0, "call_w1");
    assert_eq!(results[1].0, "call_r2");
    assert!(results[1].1.contains("milk"), "{results:?}");
    let asked: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["tool_calls"][0]["id"].as_str())
        .collect();
    assert_eq!(asked, ["call_w1", "call_r2"]);
    daemon.stop().await;
}

#[tokio::test]
async fn errors_are_typed() {
    let home = tempfile::tempdir().unwrap();
    let (fake, url) = serve().await;
    fake.then(Answer::Status(
        400,
        r#"{"error":{"message":"maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
    ))
    .then(Answer::Status(401, r#"{"error":{"message":"Incorrect API key provided"}}"#))
    .then(Answer::Cut(vec![delta("Half a")]));
    let openai = provider(home.path(), &url);
    let ask = || async {
        openai
            .chat(request("hi"), CancellationToken::new())
            .collect_with(|_| {})
            .await
            .unwrap_err()
    };
    assert!(matches!(ask().await, ProviderError::ContextOverflow { .. }));
    let key = ask().await.to_string();
    assert!(
        key.contains("refused the API key") && key.contains("Incorrect API key"),
        "{key}"
    );
    let cut = ask().await.to_string();
    assert!(cut.contains("closed the stream"), "{cut}");

    // Nothing listening at all.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let gone = provider(home.path(), &dead)
        .chat(request("hi"), CancellationToken::new())
        .collect_with(|_| {})
        .await
        .unwrap_err()
        .to_string();
    assert!(gone.contains("cannot reach openai"), "{gone}");
}

#[tokio::test]
async fn cancelling_ends_a_slow_reply_at_once() {
    let home = tempfile::tempdir().unwrap();
    let (fake, url) = serve().await;
    let words: Vec<Value> = (0..100).map(|i| delta(&format!("w{i} "))).collect();
    fake.then(Answer::Stream(words, Duration::from_millis(200)));
    let cancel = CancellationToken::new();
    let mut stream = provider(home.path(), &url).chat(request("talk"), cancel.clone());
    match stream.next().await {
        Some(StreamEvent::TextDelta(t)) => assert_eq!(t, "w0 "),
        other => panic!("expected text, got {other:?}"),
    }
    let t0 = std::time::Instant::now();
    cancel.cancel();
    loop {
        match stream.next().await {
            Some(StreamEvent::Done { finish, .. }) => {
                assert_eq!(finish, FinishReason::Cancelled);
                break;
            }
            Some(StreamEvent::TextDelta(_)) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "waited for the whole reply"
    );
}

#[tokio::test]
async fn with_no_local_model_the_fallback_answers_through_the_pipeline() {
    let home = tempfile::tempdir().unwrap();
    let (fake, url) = serve().await;
    fake.then(Answer::Stream(
        vec![delta("Hello from the "), delta("fallback."), finish("stop")],
        Duration::ZERO,
    ));
    let cfg = config_toml(
        home.path(),
        &format!(
            "[model]\npath = \"/nonexistent/model.gguf\"\n[providers.openai]\nbase_url = \"{url}\"\nmodel = \"gpt-test\"\n[routing]\nfallback = [\"openai\"]\n"
        ),
    );
    let models = Arc::new(LocalModels::new(cfg.clone()));
    let providers = Arc::new(Providers::new(&cfg, models).unwrap());
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(builder(cfg, providers), channel.clone());
    channel.inject_text("ada", "hi there");
    assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::Replied);
    assert_eq!(texts(&channel, "ada"), ["Hello from the fallback."]);
    // The cloud saw the conversation, with hearth's system prompt first.
    let (auth, body) = &fake.seen()[0];
    assert_eq!(*auth, None, "no key configured, none sent");
    assert_eq!(body["messages"][0]["role"], "system");
    let last = body["messages"].as_array().unwrap().last().unwrap();
    assert!(last["content"].as_str().unwrap().contains("hi there"));
    daemon.stop().await;
}

#[tokio::test]
async fn without_a_fallback_a_missing_model_is_reported_to_the_user() {
    let home = tempfile::tempdir().unwrap();
    let cfg = config_toml(home.path(), "[model]\npath = \"/nonexistent/model.gguf\"\n");
    let models = Arc::new(LocalModels::new(cfg.clone()));
    let providers = Arc::new(Providers::new(&cfg, models).unwrap());
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (daemon, mut rx) = start(builder(cfg, providers), channel.clone());
    channel.inject_text("ada", "hi there");
    assert_eq!(reports(&mut rx, 1).await[0].outcome, Outcome::Failed);
    let said = texts(&channel, "ada");
    assert!(said[0].contains("not found"), "{said:?}");
    daemon.stop().await;
}

#[test]
fn routes_may_name_only_configured_providers() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("hearth.toml");
    let env = Environment::with_home(home.path());
    let load = |body: &str| {
        std::fs::write(&path, body).unwrap();
        Config::load_file(&path, &env)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let e = load("[routing]\nfallback = [\"openai\"]\n");
    assert!(
        e.contains("routing.fallback[0]") && e.contains("[providers.openai] model"),
        "{e}"
    );
    let e = load("[routing]\ndefault_provider = \"anthropic\"\n");
    assert!(
        e.contains("routing.default_provider") && e.contains("anthropic"),
        "{e}"
    );
    let e = load("[providers.openai]\nbase_url = \"api.openai.com\"\nmodel = \"m\"\n");
    assert!(e.contains("providers.openai.base_url"), "{e}");
}
