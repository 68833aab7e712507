//! A base model that copies its instructions does not call a tool by it.
//! Gemma 3 270M, offered a tool through hearth's protocol, answers BFCL's
//! irrelevance questions by repeating the system text ("You can use
//! tools. To call one, write exactly:") into the call marker, and the
//! grammar used to complete a call from there: 19 of 20 such questions
//! "called" a tool (llama-server: none). Control: the same daemon and tool
//! with a call required still calls it.

use serde_json::{Value, json};

use crate::common::GEMMA3;
use crate::support::api_daemon::daemon_on;
use crate::support::ways_in::TOKEN;

/// BFCL's irrelevance_0: a triangle's area, offered only a BMI tool.
fn request(tool_choice: &str) -> Value {
    json!({
        "model": "gemma-3-270m-q4_k_m",
        "temperature": 0,
        "max_tokens": 200,
        "tool_choice": tool_choice,
        "messages": [{"role": "user", "content": "Calculate the area of a triangle given the base is 10 meters and height is 5 meters."}],
        "tools": [{"type": "function", "function": {
            "name": "determine_body_mass_index",
            "description": "Calculate body mass index given weight and height.",
            "parameters": {"type": "object", "properties": {
                "weight": {"type": "number", "description": "Weight of the individual in kilograms."},
                "height": {"type": "number", "description": "Height of the individual in meters."}},
                "required": ["weight", "height"]}}}]
    })
}

async fn ask(base: &str, body: &Value) -> Value {
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(TOKEN)
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_copied_from_the_system_text_is_no_call_and_a_required_one_is() {
    let template = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/templates/google-gemma-2-2b-it.jinja");
    if !template.exists() {
        eprintln!("skipped: {} is absent", template.display());
        return;
    }
    let keys = format!("chat_template = \"{}\"\n", template.display());
    let run = daemon_on(GEMMA3, &keys, "").await;
    let answer = ask(&run.base, &request("auto")).await;
    let message = &answer["choices"][0]["message"];
    assert!(message["tool_calls"].is_null(), "{answer}");
    let text = message["content"].as_str().unwrap_or("");
    assert!(text.contains("To call one"), "the copy it made: {answer}");
    assert_eq!(answer["choices"][0]["finish_reason"], "stop", "{answer}");

    let answer = ask(&run.base, &request("required")).await;
    let calls = &answer["choices"][0]["message"]["tool_calls"];
    assert_eq!(
        calls[0]["function"]["name"], "determine_body_mass_index",
        "{answer}"
    );
}
