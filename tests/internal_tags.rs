//! hearth's own markup never reaches a person: a model scripted to echo a
//! tool result block and the memory fence (what SmolLM2 and the Agents SDK
//! run showed) answers through the pipeline, and the person reads the
//! answer without them. The control: the same answer without the markup
//! arrives word for word.

use std::sync::Arc;

use hearth::channels::InMemoryChannel;
use hearth::providers::ScriptedProvider;

use crate::support::{builder, config, local, reports, start, texts};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echoed_results_and_fences_never_reach_the_person() {
    let home = tempfile::tempdir().unwrap();
    let echoing = [
        "<tool_result name=\"get_weather\" status=\"ok\">{\"temp\": 21}</tool_result>It is 21 °C in Paris.",
        "<untrusted source=\"memory\">\nYou prefer tea.\n</untrusted>\nYou prefer tea.",
        "Noted. <tool_result name=\"note\" status=\"ok",
        "It is 21 °C in Paris.",
    ];
    let model = Arc::new(ScriptedProvider::new(echoing));
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (_daemon, mut rx) = start(builder(config(home.path()), local(model)), channel.clone());
    for (i, _) in echoing.iter().enumerate() {
        channel.inject_text("ada", &format!("question {i}"));
        reports(&mut rx, 1).await;
    }
    let said = texts(&channel, "ada");
    assert_eq!(said.len(), 4, "{said:?}");
    for text in &said {
        for tag in [
            "<tool_result",
            "</tool_result",
            "<untrusted",
            "</untrusted",
            "status=\"",
        ] {
            assert!(!text.contains(tag), "{tag} in {text:?}");
        }
    }
    assert_eq!(said[0], "It is 21 °C in Paris.");
    assert!(said[1].contains("You prefer tea."), "{:?}", said[1]);
    assert_eq!(said[2], "Noted.");
    // The control: the plain answer arrives as written.
    assert_eq!(said[3], "It is 21 °C in Paris.");
}

/// Every way in of a daemon with a gateway and Telegram beside it: the
/// WebSocket's chunks and final frame, `/v1/message`, the assistant through
/// `/v1/chat/completions` and `/v1/responses` (whole and streamed), and
/// Telegram's drafts and final message. The typist streams [`TAGGED`] a
/// word at a time, so tags arrive cut across pieces; each channel must
/// show [`PLAIN`] and nothing of the markup. The control: `ECHO PLAIN`
/// arrives the same on each.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_way_in_shows_echoed_markup() {
    use crate::support::telegram_fake::{FakeTelegram, Incoming, TOKEN as BOT};
    use crate::support::ways_in::{self, chunks, gateway_with, open, send, turn};
    use crate::support::{INTERNAL, PLAIN, TAGGED};
    use serde_json::json;

    let fake = FakeTelegram::start().await;
    let run = gateway_with(&format!(
        "[channels.telegram]\nbot_token = \"{BOT}\"\napi_url = \"{}\"\nallowed_users = [\"*\"]\nstream_mode = \"partial\"\ndraft_update_interval_ms = 100\n",
        fake.url
    ))
    .await;
    let url = format!("http://{}", run.addr);
    let clean = |way: &str, text: &str| {
        for tag in INTERNAL {
            assert!(!text.contains(tag), "{way}: {tag} in {text:?}");
        }
    };
    assert!(TAGGED.contains("<tool_result") && TAGGED.contains("<untrusted"));
    for (asked, user) in [("ECHO TAGS", 501), ("ECHO PLAIN", 502)] {
        // The WebSocket: every chunk, and what they add up to.
        let mut socket = open(run.addr, &format!("ws-{user}")).await;
        send(&mut socket, json!({"type": "message", "text": asked})).await;
        let frames = turn(&mut socket).await;
        let pieces = chunks(&frames);
        for piece in &pieces {
            clean("a WebSocket chunk", piece);
        }
        assert_eq!(pieces.concat(), PLAIN, "{asked}: {frames:?}");
        eprintln!("{asked}: chunks {pieces:?}");
        assert_eq!(frames.last().unwrap()["text"], PLAIN, "{asked}");
        // `/v1/message`.
        let said = ways_in::message(&url, &format!("msg-{user}"), asked).await;
        assert_eq!(said["reply"], PLAIN, "{asked}: {said}");
        // The assistant over the OpenAI API, whole and streamed.
        let whole = api(
            &url,
            "chat/completions",
            json!({"messages": [{"role": "user", "content": asked}]}),
        )
        .await;
        let whole: serde_json::Value = serde_json::from_str(&whole).unwrap();
        assert_eq!(
            whole["choices"][0]["message"]["content"], PLAIN,
            "{asked}: {whole}"
        );
        let streamed = api(
            &url,
            "chat/completions",
            json!({"stream": true, "messages": [{"role": "user", "content": asked}]}),
        )
        .await;
        let deltas = sse(&streamed, |e| {
            e["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_string)
        });
        for delta in &deltas {
            clean("a chat completion delta", delta);
        }
        assert_eq!(deltas.concat(), PLAIN, "{asked}: {streamed}");
        let whole = api(&url, "responses", json!({"input": asked})).await;
        let whole: serde_json::Value = serde_json::from_str(&whole).unwrap();
        assert_eq!(
            whole["output"][0]["content"][0]["text"], PLAIN,
            "{asked}: {whole}"
        );
        let streamed = api(&url, "responses", json!({"stream": true, "input": asked})).await;
        clean("the Responses stream", &streamed);
        let deltas = sse(&streamed, |e| {
            (e["type"] == "response.output_text.delta")
                .then(|| e["delta"].as_str().unwrap().to_string())
        });
        assert_eq!(deltas.concat(), PLAIN, "{asked}: {streamed}");
        // Telegram: every draft and message the bot wrote.
        fake.inject(Incoming::text(user, asked));
        let mut sent = Vec::new();
        for _ in 0..600 {
            sent = fake.chat(user);
            if sent.last().is_some_and(|t| t == PLAIN) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let drafts: Vec<String> = fake
            .calls()
            .iter()
            .filter(|c| c.i64("chat_id") == Some(user) && c.str("text").is_some())
            .map(crate::support::telegram_bot::shown)
            .collect();
        for text in &drafts {
            clean("a Telegram message or draft", text);
        }
        eprintln!("{asked}: telegram {drafts:?}");
        assert_eq!(sent, [PLAIN], "{asked}: {drafts:?}");
    }
}

/// `POST {url}/v1/{path}` to the assistant with `body`: the body's text.
async fn api(url: &str, path: &str, mut body: serde_json::Value) -> String {
    body["model"] = serde_json::json!("hearth");
    let response = reqwest::Client::new()
        .post(format!("{url}/v1/{path}"))
        .bearer_auth(crate::support::ways_in::TOKEN)
        .header("X-Hearth-Chat", format!("api-{}", path.replace('/', "-")))
        .timeout(std::time::Duration::from_secs(60))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    assert_eq!(status, 200, "{path}: {text}");
    text
}

/// What `pick` takes from each `data:` event of a server-sent stream.
fn sse(body: &str, pick: impl Fn(&serde_json::Value) -> Option<String>) -> Vec<String> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .filter_map(|e| pick(&e))
        .collect()
}
