//! Pictures through the OpenAI-compatible API, sent by the real `openai`
//! client as `image_url` parts to the daemon's served model (SmolLM2 with
//! the random test projector): the picture reaches the model as its
//! projector's tokens, a second question about it decodes only the new
//! text (also after the daemon restarts), and hostile pictures get a clear
//! 4xx while the same chat goes on.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use base64::Engine as _;
use serde_json::{Value, json};

use crate::common::pictures::{IMAGE_TOKENS, bomb, jpeg, png, projector};
use crate::support::api_daemon::{SERVED, daemon_with};
use crate::support::ways_in::{TOKEN, python};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_client_sends_pictures_that_are_seen_cached_and_bounded() {
    let keys = format!(
        "mmproj = \"{}\"\nimage_max_pixels = 10000000\n",
        projector().display()
    );
    let mut run = daemon_with(&keys, "").await;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let red = png(100, 80, [200, 30, 30]);
    let jpeg = jpeg(64, 48, [20, 160, 40]);
    let images = json!({
        "red": b64(&red),
        "bomb": b64(&bomb(100_000)),
        "truncated": b64(&red[..red.len() / 2]),
        "truncated_jpeg": b64(&jpeg[..jpeg.len() * 2 / 3]),
        "text": b64(b"OggS a text file named voice.ogg"),
    });
    let seen = python(
        "openai_images.py",
        &[&run.base, TOKEN, SERVED],
        &images.to_string(),
    )
    .await;
    let n = |v: &Value| v.as_u64().unwrap();
    assert_eq!(
        n(&seen["first"]["prompt"]),
        n(&seen["text_only"]["prompt"]) + u64::from(IMAGE_TOKENS),
        "the picture is the projector's tokens: {seen}"
    );
    assert!(
        n(&seen["second"]["cached"]) >= n(&seen["first"]["prompt"]),
        "the second question finds the picture cached: {seen}"
    );
    assert!(n(&seen["second"]["prompt"]) - n(&seen["second"]["cached"]) < u64::from(IMAGE_TOKENS));
    for (case, why) in [
        ("remote", "does not fetch"),
        ("bomb", "pixels"),
        ("truncated", "could not be read"),
        ("truncated_jpeg", "could not be read"),
        ("not_an_image", "could not be read"),
    ] {
        assert_eq!(seen[case]["status"], 400, "{case}: {seen}");
        assert!(
            seen[case]["message"].as_str().unwrap().contains(why),
            "{case}: {seen}"
        );
        assert!(
            n(&seen[format!("{case}_control")]["prompt"]) > u64::from(IMAGE_TOKENS),
            "{case}: the chat goes on: {seen}"
        );
    }
    // A 50 MB upload is refused before it is read whole, and the daemon answers on.
    let client = reqwest::Client::new();
    let huge = format!(
        "{{\"model\":\"{SERVED}\",\"messages\":[{{\"role\":\"user\",\"content\":[{{\"type\":\"image_url\",\"image_url\":{{\"url\":\"data:image/png;base64,{}\"}}}}]}}]}}",
        "A".repeat(50 << 20)
    );
    let refused = client
        .post(format!("{}/v1/chat/completions", run.base))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await;
    // The 413 comes as soon as the limit is passed; a client still writing
    // may see the connection closed instead.
    match refused {
        Ok(r) => assert_eq!(r.status(), 413),
        Err(e) => assert!(
            format!("{e:?}").contains("BrokenPipe") || format!("{e:?}").contains("ConnectionReset"),
            "{e:?}"
        ),
    }
    let after = client
        .post(format!("{}/v1/chat/completions", run.base))
        .bearer_auth(TOKEN)
        .json(&json!({"model": SERVED, "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 200);
    // After a restart the chat's picture comes back from the disk cache:
    // a third question decodes only its own text.
    run = run.restart().await;
    let picture = json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", b64(&red))}});
    let third = client
        .post(format!("{}/v1/chat/completions", run.base))
        .bearer_auth(TOKEN)
        .header("X-Hearth-Chat", "photo")
        .json(&json!({"model": SERVED, "max_tokens": 12, "temperature": 0, "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": [{"type": "text", "text": "What is in this picture?"}, picture]},
            {"role": "assistant", "content": seen["first"]["text"]},
            {"role": "user", "content": "What colour is it?"},
            {"role": "assistant", "content": seen["second"]["text"]},
            {"role": "user", "content": "And its shape?"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(third.status(), 200);
    let usage = third.json::<Value>().await.unwrap()["usage"].clone();
    assert!(
        n(&usage["prompt_tokens_details"]["cached_tokens"]) >= n(&seen["second"]["prompt"]),
        "the picture and both questions come back from disk: {usage}"
    );
    // The assistant takes the picture too: it reaches its turn, and its
    // history keeps it in the private file.
    let assistant = client
        .post(format!("{}/v1/chat/completions", run.base))
        .bearer_auth(TOKEN)
        .header("X-Hearth-Chat", "assistant-photo")
        .json(&json!({"model": "hearth", "max_tokens": 8, "messages": [
            {"role": "user", "content": [{"type": "text", "text": "What is in this picture?"}, picture]}]}))
        .send()
        .await
        .unwrap();
    let status = assistant.status();
    let body = assistant.text().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(
        !body.contains("cannot see"),
        "the assistant's model sees: {body}"
    );
    let history = rusqlite::Connection::open(run.data_dir().join("history.sqlite3")).unwrap();
    let kept: i64 = history
        .query_row(
            "SELECT count(*) FROM messages WHERE role = 'user' AND images IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(kept, 1, "the assistant's turn kept its picture: {body}");
}
