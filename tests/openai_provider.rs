//! The OpenAI-compatible provider against a fake chat-completions server on
//! 127.0.0.1, and the fallback chain from the local engine to it, end to end
//! through the pipeline.

mod support;

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
    let cfg = config_toml(
        home,
        &format!(
            "[providers.openai]\nbase_url = \"{url}\"\nmodel = \"gpt-test\"\napi_key = \"sk-test-0123456789\"\ntimeout_secs = 30\n"
        ),
    );
    OpenAiProvider::from_config(&cfg.openai).unwrap().unwrap()
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
    let reply = provider(home.path(), &url)
        .chat(req, CancellationToken::new())
        .collect_with(|_| {})
        .await
        .unwrap();
    assert_eq!(reply.text, "Let me look.");
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].name, "file_read");
    assert_eq!(reply.tool_calls[0].arguments["path"], "a.txt");
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
