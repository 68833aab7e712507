//! The OpenAI-compatible API of a real `hearth daemon` on SmolLM2, driven
//! by the programs people point at such a server: the `openai`, `litellm`
//! and `langchain-openai` packages (`make test-clients` installs them),
//! through `tests/clients/openai_api.py`. Each honoured field must change
//! the output as it should; each field hearth cannot honour must be
//! refused by name. Then, with raw HTTP: a client that hangs up, or a
//! reply past its timeout, frees the engine at once.

use crate::support::api_daemon::{Running, SERVED, daemon_with};
use crate::support::ways_in::{TOKEN, python};

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};

/// `hearth daemon` on SmolLM2 with the gateway on a free port, and `extra`
/// config; once its gateway answers.
async fn daemon(extra: &str) -> Running {
    daemon_with("", extra).await
}

fn text(v: &Value) -> &str {
    v["text"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_litellm_and_langchain_get_what_they_ask_for() {
    let run = daemon("").await;
    let seen = python("openai_api.py", &[&run.base, TOKEN, SERVED], "").await;
    // Three things to ask for (the assistant, the chat model, memory's
    // embedding model), and nothing else.
    assert_eq!(
        seen["models"],
        json!(["hearth", SERVED, "all-MiniLM-L6-v2.F16"]),
        "{seen}"
    );
    assert_eq!(seen["retrieved"], SERVED);
    for missing in ["missing_model", "missing_chat_model"] {
        assert_eq!(seen[missing]["status"], 404, "{seen}");
        assert_eq!(seen[missing]["code"], "model_not_found");
    }
    assert_eq!(
        seen["missing_route"]["status"], 404,
        "an OpenAI-shaped 404: {seen}"
    );
    // max_tokens, under either name: five asked, at most five made.
    for five in ["five", "five_new_name"] {
        assert_eq!(seen[five]["finish"], "length", "{seen}");
        assert!(seen[five]["usage"]["completion_tokens"].as_u64().unwrap() <= 5);
    }
    // A stop string ends the text before it; without it the text goes on.
    let (free, stopped, word) = (
        text(&seen["free"]),
        text(&seen["stopped"]),
        seen["stop_word"].as_str().unwrap(),
    );
    assert!(free.contains(word), "{seen}");
    assert_eq!(seen["stopped"]["finish"], "stop");
    assert!(
        !stopped.contains(word) && free.starts_with(stopped.trim_end()),
        "{free:?} / {stopped:?}"
    );
    assert!(stopped.len() < free.len());
    // Greedy repeats itself; the same seed repeats the sample, others differ.
    assert_eq!(text(&seen["greedy_again"]), free);
    assert_eq!(seen["seed_a"], seen["seed_a_again"], "{seen}");
    assert!(
        seen["seed_b"] != seen["seed_a"] || seen["seed_c"] != seen["seed_a"],
        "{seen}"
    );
    // Penalties change what greedy decoding writes.
    assert_ne!(text(&seen["penalised"]), free, "{seen}");
    // response_format through a grammar: JSON, and the schema's keys.
    let person: Value =
        serde_json::from_str(text(&seen["json_schema"])).expect("json_schema gives JSON");
    assert!(
        person["name"].is_string() && person["age"].is_i64(),
        "{person}"
    );
    let object: Value =
        serde_json::from_str(text(&seen["json_object"])).expect("json_object gives JSON");
    assert!(object.is_object());
    // What hearth cannot honour is refused, naming the field.
    for (key, param) in [
        ("n2", "n"),
        ("logprobs", "logprobs"),
        ("unknown_field", "mirostat"),
    ] {
        assert_eq!(seen[key]["status"], 400, "{seen}");
        assert_eq!(seen[key]["param"], param, "{seen}");
    }
    assert_eq!(seen["image"]["status"], 400);
    assert!(
        seen["image"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot see images")
    );
    // Streamed, with the usage chunk at the end.
    assert_eq!(seen["streamed"]["finish"], "length");
    assert_eq!(seen["streamed"]["usage"]["completion_tokens"], 8, "{seen}");
    assert!(!text(&seen["streamed"]).is_empty());
    client_tools(&seen);
    resent_conversation(&seen);
    responses_and_embeddings(&seen);
    // The assistant honours max_tokens and takes the client's system message.
    assert!(
        seen["assistant"]["usage"]["completion_tokens"]
            .as_u64()
            .unwrap()
            <= 6,
        "{seen}"
    );
    assert!(!text(&seen["assistant"]).is_empty());
    // litellm and LangChain, through their own code paths.
    assert_eq!(seen["litellm"]["finish"], "length", "{seen}");
    assert!(seen["litellm"]["completion_tokens"].as_u64().unwrap() <= 5);
    assert!(
        !seen["litellm_assistant"]["text"]
            .as_str()
            .unwrap()
            .is_empty()
    );
    assert_eq!(seen["litellm_n3"]["kind"], "BadRequestError", "{seen}");
    assert_eq!(seen["langchain"]["finish"], "length", "{seen}");
    assert!(
        seen["langchain"]["usage"]["output_tokens"]
            .as_u64()
            .unwrap()
            <= 5
    );
    assert_eq!(seen["langchain_tools"][0]["name"], "HassTurnOn", "{seen}");
    assert_eq!(seen["langchain_embeddings"], 576);
}

/// Home Assistant's shape: a call comes back as `tool_calls` (SmolLM2's
/// family is unknown, so hearth's protocol is described to it and the
/// engine's grammar reads the call); the result sent back gets text. The
/// assistant refuses client tools at once.
fn client_tools(seen: &Value) {
    assert_eq!(seen["ha_call"]["finish"], "tool_calls", "{seen}");
    let call = &seen["ha_call"]["calls"][0];
    assert_eq!(call["name"], "HassTurnOn");
    let arguments: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert!(arguments.is_object(), "{arguments}");
    assert_eq!(seen["ha_follow"]["finish"], "stop", "{seen}");
    assert!(!text(&seen["ha_follow"]).trim().is_empty());
    assert!(seen["ha_follow"]["calls"].as_array().unwrap().is_empty());
    assert_eq!(seen["assistant_tools"]["status"], 400);
    assert_eq!(seen["assistant_tools"]["param"], "tools");
}

/// Open WebUI's shape: each turn resends the whole conversation with no
/// `user`; each turn finds the last one (prompt and reply) in the cache,
/// with another chat's turn sent in between.
fn resent_conversation(seen: &Value) {
    let turns = seen["webui_usage"].as_array().unwrap();
    assert_eq!(turns.len(), 4);
    for pair in turns.windows(2) {
        let (before, now) = (&pair[0], &pair[1]);
        let held = before["prompt_tokens"].as_u64().unwrap()
            + before["completion_tokens"].as_u64().unwrap();
        let cached = now["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap();
        let prompt = now["prompt_tokens"].as_u64().unwrap();
        assert!(
            cached >= held - 1,
            "turn decoded more than its new tokens: {turns:?}"
        );
        assert!(
            prompt - cached <= 24,
            "only the new message is decoded: {turns:?}"
        );
    }
    assert!(!text(&seen["other_chat"]).is_empty());
}

fn responses_and_embeddings(seen: &Value) {
    let r = &seen["responses_text"];
    assert!(!r["text"].as_str().unwrap().is_empty(), "{seen}");
    assert_eq!(r["status"], "incomplete", "12 tokens asked: {seen}");
    assert_eq!(r["usage"]["output_tokens"], 12);
    let s = &seen["responses_stream"];
    let events: Vec<&str> = s["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert_eq!(events[0], "response.created");
    assert!(events.contains(&"response.output_text.delta"), "{events:?}");
    assert_eq!(s["text"], s["final"], "{seen}");
    assert_eq!(seen["responses_call"][0]["name"], "HassTurnOn", "{seen}");
    assert!(
        !seen["responses_follow"]["text"]
            .as_str()
            .unwrap()
            .is_empty(),
        "{seen}"
    );
    assert_eq!(seen["previous_response"]["status"], 400);
    let e = &seen["embeddings"];
    assert_eq!(e["count"], 3);
    assert!(
        e["dims"].as_array().unwrap().iter().all(|d| d == 576),
        "{seen}"
    );
    for norm in e["norms"].as_array().unwrap() {
        assert!((norm.as_f64().unwrap() - 1.0).abs() < 1e-3, "{seen}");
    }
    assert_eq!(seen["assistant_embeddings"]["status"], 400);
    // Memory's embedding model: listed, 384 dimensions, a paraphrase
    // closer than an unrelated sentence; it writes no replies.
    let m = &seen["meaning"];
    assert_eq!(m["listed"], true, "{seen}");
    assert!(
        m["dims"].as_array().unwrap().iter().all(|d| d == 384),
        "{seen}"
    );
    assert!(
        m["close"].as_f64().unwrap() > m["far"].as_f64().unwrap() + 0.2,
        "{seen}"
    );
    assert_eq!(seen["meaning_chat"]["status"], 400, "{seen}");
}

/// A long streamed reply, read until its first text.
async fn start_long(client: &reqwest::Client, base: &str, model: &str) -> reqwest::Response {
    let response = client
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(TOKEN)
        .json(&json!({"model": model, "stream": true, "max_tokens": 3000, "temperature": 0,
            "messages": [{"role": "user", "content": "Write a very long essay about the history of the sea."}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response
}

/// Reads a streamed completion until the model's text comes: the reply is
/// being made (the first chunk, the role, comes before the engine starts).
async fn until_text<S, B, E>(stream: &mut S)
where
    S: futures::Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::fmt::Debug,
{
    let mut got = String::new();
    while !got.contains("\"content\":\"") || got.matches("data:").count() < 3 {
        let chunk = stream.next().await.expect("the stream goes on").unwrap();
        got.push_str(&String::from_utf8_lossy(chunk.as_ref()));
    }
}

/// A five-token request's answer.
async fn short(client: &reqwest::Client, base: &str) -> Value {
    let answer: Value = client
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(TOKEN)
        .json(&json!({"model": SERVED, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_hangs_up_frees_the_engine_at_once() {
    // One sequence: a reply still running would hold the next request
    // back until its 3,000 tokens were made (half a minute and more here).
    let mut run = daemon("[engine]\nslots = 1\n").await;
    let client = reqwest::Client::new();
    // Positive control: beside a reply that runs, a short request waits.
    let mut running = start_long(&client, &run.base, SERVED).await.bytes_stream();
    until_text(&mut running).await;
    let (c, base) = (client.clone(), run.base.clone());
    let waiting = tokio::spawn(async move { short(&c, &base).await });
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !waiting.is_finished(),
        "with one sequence, a second request waits for the first"
    );
    // Hanging up lets the waiting request in.
    drop(running);
    run.logged("its sequence is free").await;
    let answer = waiting.await.unwrap();
    assert_eq!(answer["choices"][0]["finish_reason"], "length", "{answer}");
    for model in [SERVED, "hearth"] {
        let mut stream = start_long(&client, &run.base, model).await.bytes_stream();
        until_text(&mut stream).await;
        drop(stream);
        // The engine stops the reply at its next token, long before its
        // 3,000, and frees its sequence for the next request.
        let line = run.logged("its sequence is free").await;
        let tokens: usize = line
            .split("tokens=")
            .nth(1)
            .and_then(|t| t.split_whitespace().next())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("no token count in {line:?}"));
        assert!(tokens < 3000, "{model}: {line}");
        let answer = short(&client, &run.base).await;
        assert_eq!(answer["choices"][0]["finish_reason"], "length", "{answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_past_its_timeout_is_stopped_and_said_so() {
    let mut run = daemon("reply_timeout_secs = 3\n[engine]\nslots = 1\n").await;
    let client = reqwest::Client::new();
    let response = client
        .post(format!("{}/v1/chat/completions", run.base))
        .bearer_auth(TOKEN)
        .json(
            &json!({"model": SERVED, "max_tokens": 3000, "temperature": 0,
            "messages": [{"role": "user", "content": "Write a very long essay about the history of the sea."}]}),
        )
        .timeout(Duration::from_secs(120))
        .send()
        .await
        .unwrap();
    // `reply_timeout_secs` is 3 in this daemon's config.
    assert_eq!(response.status(), 504);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("reply_timeout_secs"),
        "{body}"
    );
    // Stopped where it was: generating, or (on a machine this busy) still
    // waiting to begin.
    run.logged("reply cancelled by its caller").await;
    // The sequence serves the next request (which, with 3 s allowed on a
    // machine this busy, may itself run out of time: ask a few times).
    let mut answers = Vec::new();
    for _ in 0..5 {
        let answer = short(&client, &run.base).await;
        if answer["choices"][0]["finish_reason"] == "length" {
            return;
        }
        answers.push(answer);
    }
    panic!("the engine served nothing after the timeout: {answers:?}");
}
