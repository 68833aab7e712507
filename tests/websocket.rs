//! `/ws/chat` end to end: a daemon (dispatcher, pipeline, tools, approvals)
//! behind the gateway, spoken to by a real WebSocket client: streamed
//! chunks, stop, approvals and tool notices, the guard on the upgrade, the
//! frame limit and the keepalive.
//!
//! The model is the typist: it answers as the parrot does (quoting the
//! user, or writing the call it is told to), one word at a time.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::json;
use support::ways_in::*;
use support::*;
use tokio_tungstenite::tungstenite::Message;

#[tokio::test]
async fn a_websocket_streams_the_reply_in_chunks_and_keeps_the_chat() {
    let run = gateway().await;
    let mut socket = open(run.addr, "desk").await;
    send(
        &mut socket,
        json!({"type": "message", "text": "the quick brown fox jumps"}),
    )
    .await;
    let frames = turn(&mut socket).await;
    let done = frames.last().unwrap();
    let text = done["text"].as_str().unwrap();
    assert!(text.contains("the quick brown fox jumps"), "{frames:?}");
    let pieces = chunks(&frames);
    assert!(
        pieces.len() >= 3,
        "the reply streamed in pieces: {frames:?}"
    );
    assert_eq!(pieces.concat(), text, "the chunks add up to the reply");
    // The second message on the socket is the same conversation.
    send(&mut socket, json!({"type": "message", "text": "and again"})).await;
    let frames = turn(&mut socket).await;
    assert!(
        frames.last().unwrap()["text"]
            .as_str()
            .unwrap()
            .contains("and again")
    );
    let requests = run.typist.parrot.requests.lock().unwrap().clone();
    let history: Vec<&str> = requests[1]
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert!(
        history.iter().any(|m| m.contains("the quick brown fox")),
        "the second turn saw the first: {history:?}"
    );
    // A frame it cannot take gets an error, and the socket stays open.
    send(&mut socket, json!({"type": "shout", "text": "x"})).await;
    assert_eq!(frame(&mut socket).await["type"], "error");
    socket.send(Message::text("not json")).await.unwrap();
    assert_eq!(frame(&mut socket).await["type"], "error");
    send(
        &mut socket,
        json!({"type": "message", "text": "still here"}),
    )
    .await;
    let frames = turn(&mut socket).await;
    assert!(
        frames.last().unwrap()["text"]
            .as_str()
            .unwrap()
            .contains("still here")
    );
    run.daemon.stop().await;
}

#[tokio::test]
async fn a_reasoning_model_is_shown_thinking_once_and_its_thoughts_never() {
    let run = gateway().await;
    let mut socket = open(run.addr, "desk").await;
    send(
        &mut socket,
        json!({"type": "message", "text": "think first about the brown fox"}),
    )
    .await;
    let frames = turn(&mut socket).await;
    let kinds: Vec<&str> = frames.iter().filter_map(|f| f["type"].as_str()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "reasoning").count(),
        1,
        "one reasoning event: {frames:?}"
    );
    let first_chunk = kinds.iter().position(|k| *k == "chunk");
    assert!(
        kinds.iter().position(|k| *k == "reasoning") < first_chunk,
        "it comes before the answer: {frames:?}"
    );
    let text = frames.last().unwrap()["text"].as_str().unwrap();
    assert_eq!(
        chunks(&frames).concat(),
        text,
        "the chunks add up to the reply"
    );
    assert!(
        !frames
            .iter()
            .any(|f| f.to_string().contains("secret thought")),
        "what it thought is not sent: {frames:?}"
    );
    // A positive control: a message that does not ask for thought has none.
    send(
        &mut socket,
        json!({"type": "message", "text": "just answer"}),
    )
    .await;
    let frames = turn(&mut socket).await;
    assert!(
        !frames.iter().any(|f| f["type"] == "reasoning"),
        "{frames:?}"
    );
    run.daemon.stop().await;
}

#[tokio::test]
async fn stop_on_a_websocket_cancels_the_turn_and_the_next_one_runs() {
    let run = gateway().await;
    let mut socket = open(run.addr, "desk").await;
    let long = "word ".repeat(400);
    send(&mut socket, json!({"type": "message", "text": long})).await;
    let first = frame(&mut socket).await;
    assert_eq!(first["type"], "chunk", "{first}");
    // A second message while one runs is refused, not queued unseen.
    send(&mut socket, json!({"type": "message", "text": "me too"})).await;
    let mut frames = vec![first];
    loop {
        let f = frame(&mut socket).await;
        if f["type"] == "error" {
            break;
        }
        frames.push(f);
    }
    send(&mut socket, json!({"type": "stop"})).await;
    let rest = turn(&mut socket).await;
    let done = rest.last().unwrap();
    assert_eq!(done["stopped"], true, "{done}");
    frames.extend(rest);
    let streamed = chunks(&frames).concat();
    assert!(
        streamed.len() < long.len(),
        "the reply stopped part way ({} of {} characters)",
        streamed.len(),
        long.len()
    );
    // Positive control: the chat goes on.
    send(
        &mut socket,
        json!({"type": "message", "text": "after the stop"}),
    )
    .await;
    let frames = turn(&mut socket).await;
    let done = frames.last().unwrap();
    assert!(
        done["text"].as_str().unwrap().contains("after the stop"),
        "{done}"
    );
    assert!(done.get("stopped").is_none());
    run.daemon.stop().await;
}

#[tokio::test]
async fn a_websocket_asks_before_a_tool_runs_and_shows_it_running() {
    let run = gateway().await;
    let mut socket = open(run.addr, "desk").await;
    let write = |path: &str| call("file_write", json!({"path": path, "content": "hi"}));
    send(
        &mut socket,
        json!({"type": "message", "text": write("yes.txt")}),
    )
    .await;
    let asked = frame(&mut socket).await;
    assert_eq!(asked["type"], "approval", "{asked}");
    assert_eq!(asked["tool"], "file_write");
    // Hostile: an answer to a question this socket was never asked.
    send(
        &mut socket,
        json!({"type": "approval", "id": "made-up", "answer": "always"}),
    )
    .await;
    assert_eq!(frame(&mut socket).await["type"], "error");
    send(
        &mut socket,
        json!({"type": "approval", "id": asked["id"], "answer": "once"}),
    )
    .await;
    let frames = turn(&mut socket).await;
    assert!(
        frames
            .iter()
            .any(|f| f["type"] == "tool" && f["name"] == "file_write"),
        "{frames:?}"
    );
    assert!(
        file_under(&run.workspace, "yes.txt"),
        "the allowed call ran"
    );
    // Denied: the file is not written, and no tool notice comes.
    send(
        &mut socket,
        json!({"type": "message", "text": write("no.txt")}),
    )
    .await;
    let asked = frame(&mut socket).await;
    send(
        &mut socket,
        json!({"type": "approval", "id": asked["id"], "answer": "deny"}),
    )
    .await;
    let frames = turn(&mut socket).await;
    assert!(!frames.iter().any(|f| f["type"] == "tool"), "{frames:?}");
    assert!(!file_under(&run.workspace, "no.txt"));
    run.daemon.stop().await;
}

#[tokio::test]
async fn the_websocket_upgrade_passes_the_same_guard() {
    let run = gateway().await;
    let bearer = format!("Bearer {TOKEN}");
    let protocols = format!("hearth, bearer.{TOKEN}");
    // Hostile: a foreign page's socket, even with the token; no token; a wrong one.
    assert_eq!(
        connect(
            run.addr,
            "x",
            &[
                ("origin", "https://evil.example"),
                ("authorization", &bearer)
            ]
        )
        .await
        .err(),
        Some(403)
    );
    assert_eq!(connect(run.addr, "x", &[]).await.err(), Some(401));
    assert_eq!(
        connect(
            run.addr,
            "x",
            &[("sec-websocket-protocol", "hearth, bearer.not-the-token-000")]
        )
        .await
        .err(),
        Some(401)
    );
    assert_eq!(
        connect(
            run.addr,
            "x",
            &[("host", "attacker.example"), ("authorization", &bearer)]
        )
        .await
        .err(),
        Some(403)
    );
    assert_eq!(
        connect(run.addr, "../x", &[("authorization", &bearer)])
            .await
            .err(),
        Some(400)
    );
    // Positive controls: a browser on an allowed page, the token as a
    // subprotocol; the server picks `hearth`.
    let (mut socket, response) = connect(
        run.addr,
        "browser",
        &[
            ("origin", "http://allowed.example"),
            ("sec-websocket-protocol", &protocols),
        ],
    )
    .await
    .expect("an allowed page with the token gets a socket");
    assert_eq!(response.headers()["sec-websocket-protocol"], "hearth");
    send(&mut socket, json!({"type": "message", "text": "hello"})).await;
    assert_eq!(turn(&mut socket).await.last().unwrap()["type"], "done");
    run.daemon.stop().await;
}

/// A picture goes as a binary frame before its message: it reaches the
/// pipeline as a picture (the typist cannot see, and the reply says so);
/// a fifth picture for one message is refused with a reason and the socket
/// goes on; a text message after that is answered as text.
#[tokio::test]
async fn pictures_go_as_binary_frames_before_their_message() {
    let run = gateway().await;
    let mut socket = open(run.addr, "photos").await;
    let png = crate::common::pictures::png(8, 8, [9, 9, 9]);
    socket.send(Message::binary(png.clone())).await.unwrap();
    send(
        &mut socket,
        json!({"type": "message", "text": "what is it?"}),
    )
    .await;
    let done = turn(&mut socket).await.last().unwrap().clone();
    assert!(
        done["text"].as_str().unwrap().contains("cannot see images"),
        "{done}"
    );
    for _ in 0..4 {
        socket.send(Message::binary(png.clone())).await.unwrap();
    }
    socket.send(Message::binary(png.clone())).await.unwrap();
    let refused = frame(&mut socket).await;
    assert_eq!(refused["type"], "error");
    assert!(
        refused["error"].as_str().unwrap().contains("at most 4"),
        "{refused}"
    );
    // The four kept go with the next message; then text is text again.
    send(&mut socket, json!({"type": "message", "text": ""})).await;
    let done = turn(&mut socket).await.last().unwrap().clone();
    assert!(
        done["text"].as_str().unwrap().contains("cannot see images"),
        "{done}"
    );
    send(
        &mut socket,
        json!({"type": "message", "text": "plain words"}),
    )
    .await;
    let done = turn(&mut socket).await.last().unwrap().clone();
    assert!(
        done["text"].as_str().unwrap().contains("plain words"),
        "{done}"
    );
    run.daemon.stop().await;
}

/// A frame over the 64 KiB limit (a client pasting a whole file) ends that
/// socket with a close saying why; the daemon goes on, and a new socket on
/// the same chat is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_over_the_limit_is_refused_with_a_reason() {
    let run = gateway().await;
    let mut socket = open(run.addr, "paste").await;
    let huge = json!({"type": "message", "text": "x".repeat(100 * 1024)});
    let _ = socket.send(Message::text(huge.to_string())).await;
    let close = loop {
        match tokio::time::timeout(WAIT, socket.next())
            .await
            .expect("the server answers")
        {
            Some(Ok(Message::Close(frame))) => break frame,
            Some(Ok(Message::Ping(_))) => continue,
            other => panic!("a close frame, not {other:?}"),
        }
    };
    let close = close.expect("a close frame with a code");
    assert_eq!(u16::from(close.code), 1009, "{close:?}");
    assert!(close.reason.contains("64 KiB"), "{close:?}");
    let mut again = open(run.addr, "paste").await;
    send(&mut again, json!({"type": "message", "text": "short one"})).await;
    assert_eq!(turn(&mut again).await.last().unwrap()["type"], "done");
    run.daemon.stop().await;
}

/// A client gone without closing (it reads nothing, so it answers no ping)
/// loses its socket after three ping intervals; the positive control reads,
/// so its library answers every ping, and keeps its socket and its chat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_answers_no_ping_is_closed_and_one_that_does_stays() {
    let run = gateway_with("ws_ping_secs = 1\n").await;
    let mut gone = open(run.addr, "gone").await;
    let mut here = open(run.addr, "here").await;
    let quiet_until = tokio::time::Instant::now() + Duration::from_millis(4500);
    let mut pings = 0;
    while let Ok(message) = tokio::time::timeout_at(quiet_until, here.next()).await {
        match message {
            Some(Ok(Message::Ping(_))) => pings += 1,
            other => panic!("only pings while quiet, not {other:?}"),
        }
    }
    assert!(pings >= 3, "pinged every second: {pings}");
    // The silent one: the pings it missed, then the end of the socket.
    let mut missed = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::time::timeout_at(deadline, gone.next())
            .await
            .expect("the silent client's socket ends")
        {
            Some(Ok(Message::Ping(_))) => missed += 1,
            Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
            Some(Ok(other)) => panic!("{other:?}"),
        }
    }
    assert!(missed <= 2, "closed at the third interval: {missed} pings");
    // The one that answered is served as ever.
    send(
        &mut here,
        json!({"type": "message", "text": "still there?"}),
    )
    .await;
    assert_eq!(turn(&mut here).await.last().unwrap()["type"], "done");
    run.daemon.stop().await;
}

/// Open WebSockets from the one token cannot fill every connection: past
/// three quarters of `max_connections` an upgrade gets 503 with the reason,
/// while `/health` and plain requests are still answered. The control:
/// once a socket closes, a new one opens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websockets_leave_room_for_requests_and_health() {
    let run = gateway_with("max_connections = 8\n").await;
    let mut sockets = Vec::new();
    for i in 0..6 {
        sockets.push(open(run.addr, &format!("s{i}")).await);
    }
    let auth = format!("Bearer {TOKEN}");
    let refused = connect(run.addr, "one-more", &[("authorization", auth.as_str())]).await;
    assert_eq!(refused.err(), Some(503));
    let health = reqwest::get(format!("http://{}/health", run.addr))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let reply = reqwest::Client::new()
        .post(format!("http://{}/v1/message", run.addr))
        .bearer_auth(TOKEN)
        .json(&json!({"text": "still here?", "chat": "plain"}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    // Closing one makes room again.
    let mut first = sockets.remove(0);
    first.close(None).await.unwrap();
    drop(first);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match connect(run.addr, "again", &[("authorization", auth.as_str())]).await {
            Ok(_) => break,
            Err(503) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(status) => panic!("no room after a close: {status}"),
        }
    }
    run.daemon.stop().await;
}

/// The README's way in, through the `websockets` package as a user would
/// run it: `/health` answers without a token, an upgrade without the token
/// or with a wrong one is refused (401), and the same URL with the token in
/// an `Authorization` header streams a turn to its `done`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_websockets_library_gets_in_with_the_token_and_only_with_it() {
    let run = gateway().await;
    let addr = run.addr.to_string();
    let out = python(
        "ws_client.py",
        &[&addr, TOKEN, "library", "hello from the websockets package"],
        "",
    )
    .await;
    assert_eq!(out["health"], 200, "{out}");
    assert_eq!(out["refused"], 401, "no token, no socket: {out}");
    assert_eq!(out["wrong_token"], 401, "a wrong token, no socket: {out}");
    let frames = out["frames"].as_array().unwrap();
    let done = frames.last().unwrap();
    assert_eq!(done["type"], "done", "{out}");
    assert!(
        done["text"]
            .as_str()
            .unwrap()
            .contains("hello from the websockets package"),
        "{out}"
    );
    run.daemon.stop().await;
}
