//! hearth as an MCP client, against servers no one here wrote: the
//! reference time server answers a turn; the everything server's tools
//! arrive, fail, run past their timeout (and stay alive while they report
//! progress), and die mid-call; a server's tool list changes under it; and
//! the daemon answers other chats meanwhile.
//!
//! The model is the parrot: it writes the call it is told to and repeats
//! what the tool answered, so its reply shows what the model was told.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::sync::Arc;
use std::time::Duration;

use hearth::channels::{Answer, ChannelEvent};
use hearth::mcp::ServerState;
use serde_json::json;

use crate::common::Sandbox;
use crate::support::mcp::*;
use crate::support::{Parrot, call, hearth_with, said};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_calls_the_time_servers_tool_after_asking_and_answers_with_its_result() {
    let home = tempfile::tempdir().unwrap();
    let text = config_text("auto", &[time_server("time", "")]);
    let mut d = mcp_daemon(home.path(), &text, Arc::new(Parrot::default())).await;
    let status = d.hub.status();
    assert_eq!(status[0].state, ServerState::Ready, "{status:?}");
    let ask = call("time__get_current_time", json!({"timezone": "UTC"}));
    // Every MCP tool asks first by default: denied, nothing runs.
    d.channel.answer_approvals([Some(Answer::Deny)]);
    let reply = d.say("ada", &ask).await;
    assert!(reply.contains("denied"), "{reply}");
    assert_eq!(d.channel.asked()[0].tool, "time__get_current_time");
    // Allowed, it runs: the reply carries the server's answer.
    d.channel.answer_approvals([Some(Answer::Once)]);
    let reply = d.say("ada", &ask).await;
    let year = chrono::Utc::now().format("%Y").to_string();
    assert!(reply.contains("\"timezone\": \"UTC\""), "{reply}");
    assert!(
        reply.contains(&format!("\"datetime\": \"{year}-")),
        "{reply}"
    );
    d.daemon.stop().await;
}

/// `hearth tools run NAME ARGS` with `config`: its output.
async fn run(
    s: &Sandbox,
    config: &std::path::Path,
    tool: &str,
    args: &str,
) -> std::process::Output {
    hearth_with(s, config, &["tools", "run", tool, args]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_everything_servers_tools_arrive_fail_and_time_out_as_the_readme_says() {
    let s = Sandbox::new();
    let config = s.config(&config_text(
        "auto",
        &[everything("everything", "timeout_secs = 3")],
    ));
    let out = hearth_with(&s, &config, &["mcp", "list"]).await;
    let listed = said(&out);
    assert!(out.status.success(), "{listed}");
    assert!(listed.contains("everything: ready"), "{listed}");
    for tool in [
        "everything__echo",
        "everything__get-sum",
        "everything__trigger-long-running-operation",
    ] {
        assert!(listed.contains(tool), "{tool}: {listed}");
    }
    let out = run(
        &s,
        &config,
        "everything__echo",
        r#"{"message": "hello from hearth"}"#,
    )
    .await;
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("Echo: hello from hearth"),
        "{}",
        said(&out)
    );
    // Arguments the schema refuses never reach the server.
    let out = run(
        &s,
        &config,
        "everything__get-sum",
        r#"{"a": "one", "b": 2}"#,
    )
    .await;
    assert!(!out.status.success());
    assert!(said(&out).contains("invalid arguments"), "{}", said(&out));
    // A tool that fails on the server: an error the model can read.
    let out = run(
        &s,
        &config,
        "everything__get-resource-reference",
        r#"{"resourceId": 1.5}"#,
    )
    .await;
    assert!(!out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("Must be a finite positive integer"),
        "{}",
        said(&out)
    );
    // Silent past the timeout (one step of 8 s): abandoned, and said so.
    let slow = r#"{"duration": 8, "steps": 1}"#;
    let started = std::time::Instant::now();
    let out = run(
        &s,
        &config,
        "everything__trigger-long-running-operation",
        slow,
    )
    .await;
    assert!(!out.status.success());
    assert!(
        said(&out).contains("sent no answer nor progress for 3 s"),
        "{}",
        said(&out)
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    // Control: as long, but reporting progress each second: it finishes.
    let steady = r#"{"duration": 6, "steps": 6}"#;
    let out = run(
        &s,
        &config,
        "everything__trigger-long-running-operation",
        steady,
    )
    .await;
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("Long running operation completed"),
        "{}",
        said(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_fails_that_call_is_restarted_and_other_chats_are_answered() {
    let home = tempfile::tempdir().unwrap();
    let text = config_text("auto", &[everything("everything", "approve = \"never\"")]);
    let mut d = mcp_daemon(home.path(), &text, Arc::new(Parrot::default())).await;
    let pid = d.hub.status()[0].pid.expect("a running server");
    let long = call(
        "everything__trigger-long-running-operation",
        json!({"duration": 30, "steps": 30}),
    );
    d.channel.inject_text("ada", &long);
    // While Ada's call runs, Bob is answered.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let bob = d.say("bob", "hello").await;
    assert!(bob.contains("You wrote: hello"), "{bob}");
    assert!(
        crate::support::texts(&d.channel, "ada").is_empty(),
        "Ada's call still runs"
    );
    // "typing…" stays alive while the server works (refreshed every 4 s).
    let typing = |d: &McpDaemon| {
        d.channel
            .events()
            .iter()
            .filter(|e| matches!(e, ChannelEvent::Typing { recipient } if recipient == "ada"))
            .count()
    };
    for _ in 0..60 {
        if typing(&d) >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(typing(&d) >= 3, "typing shown {} times", typing(&d));
    assert!(
        crate::support::texts(&d.channel, "ada").is_empty(),
        "still running"
    );
    // The server dies mid-call: the call fails and the model hears why.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    crate::support::reports(&mut d.rx, 1).await;
    let ada = crate::support::texts(&d.channel, "ada").pop().unwrap();
    assert!(ada.contains("went away during the call"), "{ada}");
    // It is started again, and its tools work.
    let mut restarted = false;
    for _ in 0..60 {
        let s = &d.hub.status()[0];
        if s.state == ServerState::Ready && s.pid != Some(pid) {
            restarted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(restarted, "{:?}", d.hub.status());
    let echo = d
        .say("ada", &call("everything__echo", json!({"message": "back"})))
        .await;
    assert!(echo.contains("Echo: back"), "{echo}");
    d.daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_tool_list_is_followed() {
    let home = tempfile::tempdir().unwrap();
    let text = config_text(
        "auto",
        &[hostile("changing", "changing", "approve = \"never\"")],
    );
    let parrot = Arc::new(Parrot::default());
    let mut d = mcp_daemon(home.path(), &text, parrot.clone()).await;
    let names = |d: &McpDaemon| {
        d.hub.status()[0]
            .tools
            .iter()
            .map(|t| t.0.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&d), vec!["changing__unlock".to_string()]);
    // Before the change the tool does not exist (control).
    let door = call("changing__door", json!({"knock": "three"}));
    let reply = d.say("ada", &door).await;
    assert!(reply.contains("unknown tool"), "{reply}");
    let reply = d.say("ada", &call("changing__unlock", json!({}))).await;
    assert!(reply.contains("unlocked"), "{reply}");
    let mut seen = false;
    for _ in 0..40 {
        if names(&d).contains(&"changing__door".to_string()) {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(seen, "{:?}", names(&d));
    let reply = d.say("ada", &door).await;
    assert!(reply.contains("DOOR OPENED for three"), "{reply}");
    // The model is offered it from now on, and was not before.
    let offered = |i: usize| {
        let requests = parrot.requests.lock().unwrap();
        requests[i].tools.iter().any(|t| t.name == "changing__door")
    };
    assert!(!offered(0));
    let last = parrot.requests.lock().unwrap().len() - 1;
    assert!(offered(last));
    d.daemon.stop().await;
}

/// The everything server on Streamable HTTP at a free port: its process
/// and its URL, once it listens.
fn everything_over_http() -> (std::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = crate::support::mcp::root()
        .join("target/npm-mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let mut child = std::process::Command::new("node")
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return (child, format!("http://127.0.0.1:{port}/mcp"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the everything server did not listen on {port}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamable_http_server_is_used_and_gets_the_token_and_headers() {
    let (mut server, url) = everything_over_http();
    let s = Sandbox::new();
    let config = s.config(&format!("[mcp.servers.web]\nurl = \"{url}\"\n"));
    let out = run(&s, &config, "web__echo", r#"{"message": "over http"}"#).await;
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("Echo: over http"), "{}", said(&out));

    // The bearer token (from the environment) and the headers are sent;
    // a refusal is the server's failure, and the token is never printed.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::thread::spawn(move || {
        use std::io::{Read, Write};
        // Never waits forever: a hearth that never connects fails the test.
        listener.set_nonblocking(true).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let mut stream = loop {
            match listener.accept() {
                Ok((stream, _)) => break stream,
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => return format!("no request came: {e}"),
            }
        };
        stream.set_nonblocking(false).unwrap();
        let mut request = vec![0u8; 8192];
        let n = stream.read(&mut request).unwrap();
        let _ = stream.write_all(
            b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        );
        String::from_utf8_lossy(&request[..n]).to_lowercase()
    });
    let config = s.config(&format!(
        "[mcp.servers.home]\nurl = \"http://127.0.0.1:{port}/mcp\"\nbearer_token_env = \"HOME_MCP_TOKEN\"\nheaders = {{ \"X-Home\" = \"kitchen\" }}\nstart_timeout_secs = 5\n"
    ));
    let mut cmd = s.hearth_process();
    cmd.arg("--config").arg(&config).args(["mcp", "list"]);
    cmd.env("HOME_MCP_TOKEN", "sekrit-token-8812");
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let request = seen.join().unwrap();
    assert!(
        request.contains("authorization: bearer sekrit-token-8812"),
        "{request}"
    );
    assert!(request.contains("x-home: kitchen"), "{request}");
    let listed = said(&out);
    assert!(!out.status.success(), "{listed}");
    assert!(listed.contains("home: FAILED"), "{listed}");
    assert!(!listed.contains("sekrit-token-8812"), "{listed}");
}
