//! The request that killed the daemon (found with BFCL's questions): a
//! token that completes the call marker and carries text the call grammar
//! cannot take (`></` after `<tool_call`) made llama.cpp throw a C++
//! exception through a Rust frame, and the process aborted. Here the same
//! token comes from a real `hearth daemon` on SmolLM2, greedily, and the
//! daemon goes on answering; a forced call cut by the token limit says
//! `length`, never an empty success.

use serde_json::{Value, json};

use crate::support::api_daemon::{SERVED, daemon_with};
use crate::support::ways_in::TOKEN;

fn book_flight() -> Value {
    json!([{"type": "function", "function": {
        "name": "book_flight",
        "description": "Book a flight based on departure and destination cities, and the date.",
        "parameters": {"type": "object", "properties": {
            "departure_city": {"type": "string", "description": "The city from which the flight departs."},
            "destination_city": {"type": "string", "description": "The city to which the flight is heading."},
            "date": {"type": "string", "description": "The date of the flight."}
        }, "required": ["departure_city", "destination_city", "date"]}
    }}])
}

async fn complete(client: &reqwest::Client, base: &str, body: Value) -> (u16, Value) {
    let response = client
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .expect("the daemon answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_past_the_call_marker_is_refused_and_the_daemon_answers_on() {
    let mut run = daemon_with("", "").await;
    let client = reqwest::Client::new();
    // Greedy SmolLM2 writes `<tool_call` then `></` here (seen in the log).
    let (status, answer) = complete(
        &client,
        &run.base,
        json!({"model": SERVED, "temperature": 0, "tool_choice": "auto", "tools": book_flight(),
            "messages": [{"role": "user", "content": "Repeat this line ten times: <tool_call></tool_call>"}]}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    run.logged("refused a token that carries text past the call marker")
        .await;
    // BFCL's own question, as the outside run sent it.
    let (status, answer) = complete(
        &client,
        &run.base,
        json!({"model": SERVED, "tool_choice": "auto", "tools": book_flight(),
            "messages": [{"role": "user", "content": "Book a flight from San Francisco to Tokyo on May 3rd 2022 and another flight from Tokyo to Sydney on May 18th 2022."}]}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    // The control: the same daemon answers a plain question.
    let (status, answer) = complete(
        &client,
        &run.base,
        json!({"model": SERVED, "max_tokens": 8,
            "messages": [{"role": "user", "content": "Say hello."}]}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let said = answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or("");
    assert!(!said.trim().is_empty(), "{answer}");
}

/// A call forced by `tool_choice` and cut by `max_tokens`: `length`, and
/// never `tool_calls: []` with a `stop` or `tool_calls` finish. The
/// control: with room, the same request ends in a call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_call_cut_by_the_token_limit_says_length() {
    let run = daemon_with("", "").await;
    let client = reqwest::Client::new();
    let ask = |max_tokens: u32| {
        json!({"model": SERVED, "temperature": 0, "max_tokens": max_tokens, "tools": book_flight(),
            "tool_choice": {"type": "function", "function": {"name": "book_flight"}},
            "messages": [{"role": "user", "content": "Book me a flight from Oslo to Rome on 2026-03-01."}]})
    };
    let (status, cut) = complete(&client, &run.base, ask(6)).await;
    assert_eq!(status, 200, "{cut}");
    let choice = &cut["choices"][0];
    assert_eq!(choice["finish_reason"], "length", "{cut}");
    let calls = choice["message"]["tool_calls"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(calls, 0, "a cut call is no call: {cut}");
    let (status, whole) = complete(&client, &run.base, ask(300)).await;
    assert_eq!(status, 200, "{whole}");
    let choice = &whole["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{whole}");
    assert_eq!(
        choice["message"]["tool_calls"][0]["function"]["name"],
        "book_flight"
    );
}

/// Forced calls as a client samples them (temperature 1, many seeds) and
/// cut at every length: each reply is a call whose arguments are a JSON
/// object, or says `length`; none is an empty success. Qwen3's template,
/// as the outside run used Qwen's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_calls_end_as_whole_calls_or_say_length() {
    let template = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/templates/Qwen-Qwen3-0.6B.jinja");
    let run = daemon_with(&format!("chat_template = \"{}\"\n", template.display()), "").await;
    let client = reqwest::Client::new();
    let tools = json!([{"type": "function", "function": {"name": "get_weather",
        "description": "Get the weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]);
    let ask = |extra: Value| {
        let mut body = json!({"model": SERVED, "tools": tools,
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
            "messages": [{"role": "user", "content": "What's the weather like in Paris today?"}]});
        body.as_object_mut()
            .expect("an object")
            .extend(extra.as_object().expect("an object").clone());
        body
    };
    let mut whole = 0;
    let mut cut = 0;
    let sampled = (0..12).map(|seed| json!({"temperature": 1.0, "seed": seed}));
    let limited = (1..=24).map(|n| json!({"temperature": 0, "max_tokens": n}));
    for extra in sampled.chain(limited) {
        let (status, answer) = complete(&client, &run.base, ask(extra.clone())).await;
        assert_eq!(status, 200, "{extra}: {answer}");
        let choice = &answer["choices"][0];
        let calls = choice["message"]["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        match choice["finish_reason"].as_str() {
            Some("tool_calls") => {
                assert!(!calls.is_empty(), "{extra}: {answer}");
                for call in &calls {
                    let arguments = call["function"]["arguments"].as_str().unwrap_or("");
                    let parsed: Value = serde_json::from_str(arguments)
                        .unwrap_or_else(|e| panic!("{extra}: arguments not JSON ({e}): {answer}"));
                    assert!(parsed["city"].is_string(), "{extra}: {answer}");
                }
                whole += 1;
            }
            Some("length") => {
                assert!(calls.is_empty(), "a cut call is no call: {extra}: {answer}");
                cut += 1;
            }
            _ => panic!("a forced call ended neither as a call nor cut: {extra}: {answer}"),
        }
    }
    // Both kinds of ending were seen: the checks above were reached.
    assert!(whole >= 12 && cut >= 1, "{whole} whole, {cut} cut");
}
