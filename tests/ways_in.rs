//! The gateway's other ways in, end to end: the OpenAI-compatible API
//! driven by the real `openai` Python package, `/metrics` read by the
//! Prometheus client's own parser (`make test-clients` installs both), and
//! the `hearth daemon` binary on SmolLM2 serving every way in, the
//! WebSocket and `/api/chat` included.
//!
//! The model is the typist (see `support::ways_in`), except in the last test.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;
use crate::support;

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use support::ways_in::*;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_python_client_talks_to_hearth() {
    let run = gateway().await;
    let base = format!("http://{}", run.addr);
    let seen = python("openai_chat.py", &[&base, TOKEN], "").await;
    assert_eq!(seen["models"], json!(["hearth"]));
    assert_eq!(seen["object"], "chat.completion");
    assert_eq!(seen["whole_finish"], "stop");
    assert!(
        seen["whole"].as_str().unwrap().contains("my name is Ada"),
        "{seen}"
    );
    // Streamed: in pieces, which add up to the typist's reply.
    let pieces: Vec<&str> = seen["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(pieces.len() >= 3, "{seen}");
    assert!(
        pieces.concat().contains("tell me a story about Bob"),
        "{seen}"
    );
    assert_eq!(seen["stream_finish"], "stop");
    // Two conversations kept apart: Ada's second turn saw her first and
    // nothing of Bob's; the client's system message joined hearth's for
    // its own turn.
    let requests = run.typist.parrot.requests.lock().unwrap().clone();
    let ada = requests
        .iter()
        .find(|r| {
            r.messages
                .last()
                .is_some_and(|m| m.content.contains("what is my name?"))
        })
        .expect("Ada's second turn reached the model");
    let all: String = ada.messages.iter().map(|m| m.content.clone()).collect();
    assert!(all.contains("my name is Ada"), "{all}");
    assert!(!all.contains("story about Bob"), "{all}");
    assert!(
        !all.contains("a client's own prompt"),
        "the client's system message was for its own turn only: {all}"
    );
    let first = requests
        .iter()
        .find(|r| {
            r.messages
                .last()
                .is_some_and(|m| m.content.contains("my name is Ada"))
        })
        .expect("Ada's first turn reached the model");
    let system = &first.messages[0].content;
    assert!(
        system.contains("a client's own prompt") && system.len() > 200,
        "the client's system message comes after hearth's own: {system}"
    );
    // Errors in OpenAI's shape, raised as the client's own exceptions.
    assert_eq!(seen["wrong_key"]["status"], 401, "{seen}");
    assert_eq!(seen["wrong_key"]["code"], "invalid_api_key");
    assert_eq!(seen["no_user"]["status"], 400, "{seen}");
    run.daemon.stop().await;
}

#[tokio::test]
async fn the_openai_routes_refuse_foreign_pages_in_openai_shape() {
    let run = gateway().await;
    let url = format!("http://{}/v1/chat/completions", run.addr);
    let body = json!({"model": "hearth", "messages": [{"role": "user", "content": "hi"}]});
    let client = reqwest::Client::new();
    // Hostile: a page on another site, with the token; a form post.
    let response = client
        .post(&url)
        .bearer_auth(TOKEN)
        .header("origin", "https://evil.example")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let error: Value = response.json().await.unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("evil.example")
    );
    assert_eq!(error["error"]["type"], "invalid_request_error");
    let response = client
        .post(&url)
        .bearer_auth(TOKEN)
        .header("content-type", "text/plain")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
    assert!(
        run.typist.parrot.requests.lock().unwrap().is_empty(),
        "nothing reached the model"
    );
    // Positive control: the same request from no page.
    let response = client
        .post(&url)
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let reply: Value = response.json().await.unwrap();
    assert!(
        reply["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .contains("hi")
    );
    // The newer routes stand behind the same guard: a foreign page with the
    // token and a request without it are refused in OpenAI's shape before
    // anything is read; the token holder from no page gets past the guard
    // (to a 400 for an empty body, or the answer).
    let base = format!("http://{}", run.addr);
    for (method, path) in [
        ("POST", "/v1/responses"),
        ("POST", "/v1/embeddings"),
        ("GET", "/v1/models/hearth"),
        ("POST", "/v1/completions"),
    ] {
        let call = |origin: Option<&str>, token: bool| {
            let mut r = client
                .request(method.parse().unwrap(), format!("{base}{path}"))
                .json(&json!({}));
            if let Some(origin) = origin {
                r = r.header("origin", origin);
            }
            if token {
                r = r.bearer_auth(TOKEN);
            }
            r.send()
        };
        let foreign = call(Some("https://evil.example"), true).await.unwrap();
        assert_eq!(foreign.status(), 403, "{path}");
        let body: Value = foreign.json().await.unwrap();
        assert!(body["error"]["message"].is_string(), "{path}: {body}");
        assert_eq!(call(None, false).await.unwrap().status(), 401, "{path}");
        let allowed = call(None, true).await.unwrap().status().as_u16();
        assert!(![401, 403].contains(&allowed), "{path}: {allowed}");
    }
    assert_eq!(
        run.typist.parrot.requests.lock().unwrap().len(),
        1,
        "only the positive control reached the model"
    );
    run.daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_change_as_messages_flow_and_parse_as_prometheus_text() {
    let run = gateway().await;
    let url = format!("http://{}/metrics", run.addr);
    assert!(run.metrics.render().ends_with("# EOF\n"));
    // Hostile: no token; a foreign page with the token.
    let client = reqwest::Client::new();
    assert_eq!(client.get(&url).send().await.unwrap().status(), 401);
    let foreign = client
        .get(&url)
        .bearer_auth(TOKEN)
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);

    let before = scrape(run.addr).await;
    let replied = json!({"channel": "gateway", "outcome": "replied"});
    assert_eq!(
        sample(&before, "hearth_messages_total", replied.clone()),
        0.0
    );
    for text in ["one", &call("file_read", json!({"path": "missing.txt"}))] {
        let response = client
            .post(format!("http://{}/v1/message", run.addr))
            .bearer_auth(TOKEN)
            .json(&json!({"text": text, "chat": "metrics"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    // The reply reaches the client a moment before the daemon counts it
    // (seen on a slow machine: the second reply's count not yet there), so
    // look again for up to ten seconds before asserting.
    let mut after = scrape(run.addr).await;
    for _ in 0..100 {
        if sample(&after, "hearth_messages_total", replied.clone()) >= 2.0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        after = scrape(run.addr).await;
    }
    assert_eq!(
        sample(&after, "hearth_messages_total", replied),
        2.0,
        "{after:?}"
    );
    assert_eq!(sample(&after, "hearth_reply_seconds_count", json!({})), 2.0);
    assert!(sample(&after, "hearth_first_token_seconds_count", json!({})) >= 2.0);
    assert_eq!(
        sample(
            &after,
            "hearth_tool_calls_total",
            json!({"tool": "file_read", "outcome": "error"})
        ),
        1.0,
        "{after:?}"
    );
    // The typist reports no usage; the families are there, with nothing yet.
    assert_eq!(
        sample(
            &after,
            "hearth_prompt_tokens_total",
            json!({"kind": "reused"})
        ),
        0.0
    );
    run.daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::await_holding_lock)] // the test's own runtime; engines take turns
async fn the_daemon_binary_serves_smollm2_to_every_way_in_and_counts_it() {
    let _engine_turn = common::engine_lock();
    common::model(common::SMOLLM2);
    let sandbox = common::Sandbox::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = sandbox.config(&format!(
        "[generation]\ntemperature = 0.0\nmax_tokens = 400\n[channels.gateway]\nlisten = \"127.0.0.1:{port}\"\ntoken = \"{TOKEN}\"\n"
    ));
    let mut daemon = tokio::process::Command::from(sandbox.hearth_process())
        .arg("--config")
        .arg(&config)
        .arg("daemon")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let health = format!("http://{addr}/health");
    let client = reqwest::Client::new();
    let up = async {
        loop {
            let ok = client.get(&health).bearer_auth(TOKEN).send().await;
            if ok.is_ok_and(|r| r.status() == 200) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    tokio::time::timeout(WAIT, up)
        .await
        .expect("the daemon's gateway comes up");
    let seen = python("openai_chat.py", &[&format!("http://{addr}"), TOKEN], "").await;
    assert!(!seen["whole"].as_str().unwrap().trim().is_empty(), "{seen}");
    assert!(!seen["pieces"].as_array().unwrap().is_empty(), "{seen}");
    // A story may run into `max_tokens`, which is now said.
    assert!(
        ["stop", "length"].contains(&seen["stream_finish"].as_str().unwrap()),
        "{seen}"
    );
    assert!(!seen["ada_again"].as_str().unwrap().trim().is_empty());
    assert_eq!(seen["wrong_key"]["status"], 401);
    // The same daemon over a WebSocket: a streamed turn, then a long
    // one stopped part way.
    let mut socket = open(addr, "ws-desk").await;
    send(
        &mut socket,
        json!({"type": "message", "text": "What is the capital of France?"}),
    )
    .await;
    let frames = turn(&mut socket).await;
    let done = frames.last().unwrap();
    assert!(!chunks(&frames).is_empty(), "{frames:?}");
    assert!(!done["text"].as_str().unwrap().trim().is_empty(), "{done}");
    assert!(!done["text"].as_str().unwrap().contains("<|im_end|>"));
    send(
        &mut socket,
        json!({"type": "message", "text": "Write a very long story about a dragon."}),
    )
    .await;
    assert_eq!(frame(&mut socket).await["type"], "chunk");
    send(&mut socket, json!({"type": "stop"})).await;
    let done = turn(&mut socket).await.pop().unwrap();
    assert_eq!(done["stopped"], true, "{done}");
    // And the seeds' HTTP endpoint.
    let answer: Value = client
        .post(format!("http://{addr}/api/chat"))
        .bearer_auth(TOKEN)
        .json(&json!({"text": "Say hello.", "chat": "http-desk"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        !answer["reply"].as_str().unwrap().trim().is_empty(),
        "{answer}"
    );
    // The outcome is counted once the reply has gone out, so the last one
    // may land just after its answer: wait for it.
    let replied = json!({"channel": "gateway", "outcome": "replied"});
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let samples = loop {
        let samples = scrape(addr).await;
        let n = sample(&samples, "hearth_messages_total", replied.clone());
        if n >= 5.0 || tokio::time::Instant::now() > deadline {
            break samples;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        sample(&samples, "hearth_messages_total", replied),
        5.0,
        "{samples:?}"
    );
    assert!(
        sample(
            &samples,
            "hearth_prompt_tokens_total",
            json!({"kind": "decoded"})
        ) > 0.0
    );
    // Ada's second turn found her conversation cached (in its slot, or
    // in RAM when Bob's took the slot).
    assert!(
        sample(
            &samples,
            "hearth_prompt_tokens_total",
            json!({"kind": "reused"})
        ) > 0.0,
        "{samples:?}"
    );
    assert!(sample(&samples, "hearth_decode_tokens_per_second", json!({})) > 0.0);
    assert_eq!(
        sample(
            &samples,
            "hearth_queue_depth",
            json!({"priority": "interactive"})
        ),
        0.0
    );
    // The process and the build, and what has not happened yet, at 0.
    assert!(sample(&samples, "process_resident_memory_bytes", json!({})) > 1e6);
    assert!(sample(&samples, "process_open_fds", json!({})) > 3.0);
    assert!(sample(&samples, "process_start_time_seconds", json!({})) > 1.7e9);
    assert_eq!(sample(&samples, "hearth_build_info", json!({})), 1.0);
    for (name, labels) in [
        (
            "hearth_tool_calls_total",
            json!({"tool": "file_write", "outcome": "refused"}),
        ),
        (
            "hearth_messages_total",
            json!({"channel": "gateway", "outcome": "timed_out"}),
        ),
        (
            "hearth_channel_errors_total",
            json!({"channel": "gateway", "operation": "send"}),
        ),
    ] {
        assert!(
            samples.iter().any(|(n, l, v)| n == name
                && labels
                    .as_object()
                    .unwrap()
                    .iter()
                    .all(|(k, x)| l.get(k) == Some(x))
                && *v == 0.0),
            "{name} {labels} at 0: {samples:?}"
        );
    }
    // The older text format, asked for by name or by default, reads the
    // same counts with that format's own parser.
    for accept in [Some("text/plain;version=0.0.4"), None] {
        let text = scrape_as(addr, accept).await;
        let replied = json!({"channel": "gateway", "outcome": "replied"});
        assert_eq!(sample(&text, "hearth_messages_total", replied), 5.0);
        assert_eq!(sample(&text, "hearth_build_info", json!({})), 1.0);
    }
    let _ = daemon.start_kill();
    let _ = daemon.wait().await;
}
