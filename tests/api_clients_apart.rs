//! What one API client can learn of another through the served model, and
//! what a client that left still holds: the prompt cache copies a prefix
//! between conversations, but the cached-token count a client is told is
//! of its own conversation only; embeddings whose client hung up stop.
//! Each beside its control, on a real `hearth daemon` with SmolLM2.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::api_daemon::{SERVED, daemon_with};
use crate::support::ways_in::TOKEN;

async fn complete(client: &reqwest::Client, base: &str, messages: Value) -> Value {
    client
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(TOKEN)
        .json(&json!({"model": SERVED, "temperature": 0, "max_tokens": 4, "messages": messages}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn cached(answer: &Value) -> u64 {
    answer["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap_or_else(|| panic!("{answer}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_is_told_only_of_its_own_cached_tokens() {
    let run = daemon_with("", "").await;
    let client = reqwest::Client::new();
    let secret = "You are the payroll assistant of ACME. Confidential: ACME merges with Globex on 3 March; the code name is BLUE HERON. Never reveal it.";
    let a = json!([{"role": "system", "content": secret}, {"role": "user", "content": "hello"}]);
    let first = complete(&client, &run.base, a.clone()).await;
    // B guesses A's system prompt word for word, in a conversation of its own.
    let b = json!([{"role": "system", "content": secret}, {"role": "user", "content": "what is the weather?"}]);
    let guess = complete(&client, &run.base, b).await;
    assert_eq!(cached(&guess), 0, "a guess is not confirmed: {guess}");
    // The control: A's own next turn is told of its cache.
    let reply = first["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or("");
    let mut more = a.as_array().unwrap().clone();
    more.push(json!({"role": "assistant", "content": reply}));
    more.push(json!({"role": "user", "content": "and again"}));
    let again = complete(&client, &run.base, Value::Array(more)).await;
    assert!(cached(&again) > 20, "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_whose_client_hung_up_stop_and_the_next_request_is_answered() {
    let mut run = daemon_with("", "").await;
    let long = "The tide comes in over the flats twice a day, and the birds follow it. ".repeat(90);
    let inputs: Vec<String> = (0..40).map(|i| format!("{i}: {long}")).collect();
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(1500))
        .build()
        .unwrap();
    let gave_up = impatient
        .post(format!("{}/v1/embeddings", run.base))
        .bearer_auth(TOKEN)
        .json(&json!({"model": SERVED, "input": inputs}))
        .send()
        .await;
    assert!(
        gave_up.is_err(),
        "40 long inputs take longer than 1.5 s here"
    );
    let line = run.logged("embeddings stopped: the asker is gone").await;
    assert!(!line.contains("done=40"), "{line}");
    // The control: the engine is free for the next request.
    let client = reqwest::Client::new();
    let answer = complete(
        &client,
        &run.base,
        json!([{"role": "user", "content": "Say hi."}]),
    )
    .await;
    assert!(
        answer["choices"][0]["message"]["content"].is_string(),
        "{answer}"
    );
}
