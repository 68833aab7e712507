//! Several calls in one reply: OpenAI clients let a model call more than
//! one tool at once (`parallel_tool_calls`, true unless sent false), and
//! BFCL's parallel questions need it. The call grammar of a family whose
//! template writes several calls lets the model write them, up to
//! `MOST_CALLS`; `parallel_tool_calls: false` holds it to one. On a real
//! daemon with SmolLM2 and Qwen3's template, shown how by a turn before.

use serde_json::{Value, json};

use crate::support::api_daemon::{SERVED, daemon_with};
use crate::support::ways_in::TOKEN;

fn call(id: &str, city: &str) -> Value {
    json!({"id": id, "type": "function",
        "function": {"name": "get_weather", "arguments": json!({"city": city}).to_string()}})
}

/// A conversation whose earlier turn called the tool twice at once.
fn body(parallel: Option<bool>) -> Value {
    let mut body = json!({"model": SERVED, "temperature": 0, "max_tokens": 200,
        "tool_choice": "required",
        "tools": [{"type": "function", "function": {"name": "get_weather",
            "description": "The weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
        "messages": [
            {"role": "user", "content": "What is the weather in Rome and in Bern?"},
            {"role": "assistant", "content": null, "tool_calls": [call("a1", "Rome"), call("a2", "Bern")]},
            {"role": "tool", "tool_call_id": "a1", "content": "sunny"},
            {"role": "tool", "tool_call_id": "a2", "content": "rain"},
            {"role": "assistant", "content": "Rome is sunny; Bern has rain."},
            {"role": "user", "content": "What is the weather in Paris and in Oslo?"}]});
    if let Some(p) = parallel {
        body["parallel_tool_calls"] = p.into();
    }
    body
}

/// The cities of the reply's calls.
async fn cities(client: &reqwest::Client, base: &str, body: Value) -> Vec<String> {
    let response = client
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .expect("the daemon answers");
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.expect("JSON");
    let choice = &answer["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{answer}");
    choice["message"]["tool_calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| {
            let arguments: Value =
                serde_json::from_str(c["function"]["arguments"].as_str().expect("arguments"))
                    .expect("JSON arguments");
            arguments["city"].as_str().expect("a city").to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_holds_several_calls_unless_the_client_asks_for_one() {
    let template = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/templates/Qwen-Qwen3-0.6B.jinja");
    let run = daemon_with(&format!("chat_template = \"{}\"\n", template.display()), "").await;
    let client = reqwest::Client::new();
    for parallel in [Some(true), None] {
        assert_eq!(
            cities(&client, &run.base, body(parallel)).await,
            ["Paris", "Oslo"],
            "parallel_tool_calls {parallel:?}"
        );
    }
    // The control: the same request held to one call.
    assert_eq!(
        cities(&client, &run.base, body(Some(false))).await,
        ["Paris"]
    );
}
