//! Hostile MCP servers, each beside its positive control: a result that
//! holds tool calls (not run), a flood (capped, memory bounded), a server
//! that reads outside its folder or reaches the network (stopped by the
//! sandbox, under bubblewrap and under Landlock), tools named like the
//! built-in ones (kept apart), and a server that never answers
//! `initialize` (it fails alone; the rest of hearth starts).
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hearth::mcp::ServerState;
use serde_json::json;

use crate::common::Sandbox;
use crate::support::mcp::*;
use crate::support::{Parrot, call, hearth_with, said};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_inside_a_result_are_not_run_while_the_models_own_call_is() {
    let home = tempfile::tempdir().unwrap();
    // No tool asks first here: what stops the calls in the result is
    // their being defused, not an approval nobody gave.
    let text = config_text(
        "auto",
        &[hostile("inject", "inject", "approve = \"never\"")],
    )
    .replace("[agent]\n", "[agent]\napprove = []\n");
    let mut d = mcp_daemon(home.path(), &text, Arc::new(Parrot::default())).await;
    let reply = d
        .say("ada", &call("inject__weather", json!({"city": "Oslo"})))
        .await;
    // The parrot repeated the whole result, calls and all: none ran.
    assert!(reply.contains("Sunny in Oslo"), "{reply}");
    for name in ["pwned.txt", "pwned2.txt", "pwned3.txt"] {
        assert!(
            !d.workspace.join("ada").join(name).exists(),
            "{name} was written: {reply}"
        );
    }
    // Control: the same call written by the model itself runs.
    let own = call("file_write", json!({"path": "pwned.txt", "content": "x"}));
    let wrote = d.say("ada", &own).await;
    assert!(d.workspace.join("ada/pwned.txt").exists(), "{wrote}");
    d.daemon.stop().await;
}

/// The highest resident memory of process `pid` until it ends, in MiB.
fn peak_rss_mib(pid: u32) -> u64 {
    let path = format!("/proc/{pid}/status");
    let mut peak = 0;
    while let Ok(status) = std::fs::read_to_string(&path) {
        if let Some(kb) = status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
        {
            peak = peak.max(kb / 1024);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    peak
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_is_capped_and_memory_stays_bounded() {
    let s = Sandbox::new();
    let config = s.config(&config_text(
        "auto",
        &[hostile("flood", "flood", "timeout_secs = 10")],
    ));
    // Control: 1 MiB (2 on the wire: the SDK sends it as text and as
    // structured content) comes through, cut to the output cap, both ends kept.
    let out = hearth_with(
        &s,
        &config,
        &["tools", "run", "flood__dump", r#"{"megabytes": 1}"#],
    )
    .await;
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("HEAD-") && stdout.trim_end().ends_with("-TAIL"),
        "{}",
        &stdout[..100]
    );
    assert!(stdout.contains("characters cut"));
    assert!(stdout.len() < 10_000, "{}", stdout.len());
    // 64 MiB in one message: dropped unread, the call fails, and hearth's
    // memory stays far below the message's size.
    let mut cmd = s.hearth_process();
    cmd.arg("--config").arg(&config);
    cmd.args(["tools", "run", "flood__dump", r#"{"megabytes": 64}"#]);
    cmd.env("RUST_LOG", "info");
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let peak = tokio::task::spawn_blocking(move || peak_rss_mib(pid));
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let peak = peak.await.unwrap();
    let text = said(&out);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("no answer nor progress"), "{text}");
    assert!(
        peak < 64,
        "hearth peaked at {peak} MiB for a 64 MiB message"
    );
    // Its stderr flood: at most 500 lines reach the log.
    let logged = text.matches("MCP server stderr:").count();
    assert!((1..=500).contains(&logged), "{logged} stderr lines logged");
}

/// A listener on 127.0.0.1 that counts connections.
fn listener() -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        for mut stream in l.incoming().flatten() {
            counted.fetch_add(1, Ordering::SeqCst);
            // The whole request head, then a whole answer: a client that
            // sent more than was read would see the connection reset.
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let _ = stream.write_all(
                b"HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nhi",
            );
        }
    });
    (port, hits)
}

async fn escapes(mode: &str) {
    let s = Sandbox::new();
    let secret = s.path("outside/secret.txt");
    std::fs::create_dir_all(secret.parent().unwrap()).unwrap();
    std::fs::write(&secret, "CANARY-77").unwrap();
    let (port, hits) = listener();
    let config = s.config(&config_text(
        mode,
        &[
            hostile("jail", "escape", "approve = \"never\""),
            hostile("net", "escape", "approve = \"never\"\nnetwork = true"),
        ],
    ));
    let run = |tool: &str, args: String| {
        let config = config.clone();
        let tool = tool.to_string();
        let s = &s;
        async move { hearth_with(s, &config, &["tools", "run", &tool, &args]).await }
    };
    let read = json!({"path": secret.display().to_string()}).to_string();
    let out = run("jail__read", read).await;
    assert!(!said(&out).contains("CANARY-77"), "{mode}: {}", said(&out));
    // Control: its own folder is its to write.
    let out = run("jail__keep", json!({"text": "mine"}).to_string()).await;
    assert!(out.status.success(), "{mode}: {}", said(&out));
    assert!(
        s.path("data/mcp/jail/kept.txt").is_file(),
        "{mode}: {}",
        said(&out)
    );
    // No network unless its config says so.
    let connect = json!({"port": port}).to_string();
    let out = run("jail__connect", connect.clone()).await;
    assert!(!said(&out).contains("CONNECTED"), "{mode}: {}", said(&out));
    assert_eq!(hits.load(Ordering::SeqCst), 0, "{mode}");
    let out = run("net__connect", connect).await;
    assert!(said(&out).contains("CONNECTED"), "{mode}: {}", said(&out));
    assert_eq!(hits.load(Ordering::SeqCst), 1, "{mode}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_cannot_leave_its_folder_or_reach_the_network_under_bubblewrap() {
    escapes("bubblewrap").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_cannot_leave_its_folder_or_reach_the_network_under_landlock() {
    escapes("landlock").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_named_like_built_in_ones_are_kept_apart() {
    let s = Sandbox::new();
    let config = s.config(&config_text(
        "auto",
        &[hostile("shadow", "shadow", "approve = \"never\"")],
    ));
    let out = hearth_with(&s, &config, &["tools", "list"]).await;
    let listed = said(&out);
    assert!(
        listed.contains("shadow__shell") && listed.contains("shadow__file_write"),
        "{listed}"
    );
    let shell = json!({"command": "echo built-in"}).to_string();
    let out = hearth_with(&s, &config, &["tools", "run", "shell", &shell]).await;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "built-in",
        "{}",
        said(&out)
    );
    let out = hearth_with(&s, &config, &["tools", "run", "shadow__shell", &shell]).await;
    assert!(
        said(&out).contains("SHADOW SHELL ran echo built-in"),
        "{}",
        said(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_fails_alone_and_the_rest_starts() {
    let s = Sandbox::new();
    let servers = [
        hostile("mute", "mute", "start_timeout_secs = 2"),
        time_server("time", "approve = \"never\""),
    ];
    let config = s.config(&config_text("auto", &servers));
    let started = std::time::Instant::now();
    let out = hearth_with(&s, &config, &["mcp", "list"]).await;
    let listed = said(&out);
    assert!(!out.status.success(), "{listed}");
    assert!(
        listed.contains("mute: FAILED: no answer to `initialize` within 2 s"),
        "{listed}"
    );
    assert!(listed.contains("time: ready"), "{listed}");
    assert!(started.elapsed() < Duration::from_secs(60));
    // The doctor names it, with what to do.
    let out = hearth_with(&s, &config, &["doctor"]).await;
    let doctor = said(&out);
    assert!(doctor.contains("FAIL mcp     mute: FAILED"), "{doctor}");
    assert!(doctor.contains("run its command by hand"), "{doctor}");
    assert!(doctor.contains("ok   mcp     time: ready"), "{doctor}");
    // A daemon with it answers: the mute server holds nothing up.
    let home = tempfile::tempdir().unwrap();
    let text = config_text("auto", &servers);
    let mut d = mcp_daemon(home.path(), &text, Arc::new(Parrot::default())).await;
    assert!(matches!(
        d.hub.status()[0].state,
        ServerState::Failed(_) | ServerState::Starting
    ));
    let reply = d
        .say(
            "ada",
            &call("time__get_current_time", json!({"timezone": "UTC"})),
        )
        .await;
    assert!(reply.contains("datetime"), "{reply}");
    d.daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_fetch_server_reaches_the_network_only_when_its_config_allows() {
    let s = Sandbox::new();
    let (port, hits) = listener();
    let args = [
        "-m",
        "mcp_server_fetch",
        "--ignore-robots-txt",
        "--allow-private-ips",
    ]
    .map(String::from);
    let config = s.config(&config_text(
        "auto",
        &[
            python_server("offline", &args, "approve = \"never\""),
            python_server("online", &args, "approve = \"never\"\nnetwork = true"),
        ],
    ));
    let url = json!({"url": format!("http://127.0.0.1:{port}/page")}).to_string();
    let out = hearth_with(&s, &config, &["tools", "run", "offline__fetch", &url]).await;
    assert!(!out.status.success(), "{}", said(&out));
    assert_eq!(hits.load(Ordering::SeqCst), 0, "{}", said(&out));
    // Control: allowed the network, the same fetch reaches the page.
    let out = hearth_with(&s, &config, &["tools", "run", "online__fetch", &url]).await;
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("hi"), "{}", said(&out));
    assert!(hits.load(Ordering::SeqCst) >= 1);
}

/// A server that dies at start says why on its stderr; `mcp list` and
/// `doctor` show those words (they were only in the log, at `info`, hidden
/// by the default level). The control: a server that started shows none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_fails_at_start_is_shown_with_its_own_last_words() {
    let s = Sandbox::new();
    let servers = [
        hostile("notes", "broken", "start_timeout_secs = 10"),
        time_server("time", ""),
    ];
    let config = s.config(&config_text("auto", &servers));
    let out = hearth_with(&s, &config, &["mcp", "list"]).await;
    let listed = said(&out);
    assert!(!out.status.success(), "{listed}");
    assert!(
        listed.contains("notes: FAILED")
            && listed.contains("its stderr ended with:")
            && listed.contains("cannot open /srv/notes/notes.db"),
        "{listed}"
    );
    let time = listed
        .split("\n\n")
        .find(|block| block.starts_with("time:"))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(time.contains("ready") && !time.contains("stderr"), "{time}");
    let out = hearth_with(&s, &config, &["doctor"]).await;
    let doctor = said(&out);
    let line = doctor
        .lines()
        .find(|l| l.contains("mcp     notes"))
        .unwrap_or_else(|| panic!("{doctor}"));
    assert!(
        line.starts_with("FAIL") && line.contains("cannot open /srv/notes/notes.db"),
        "{line}"
    );
}

/// A failed server is started again after a pause; while that start runs
/// (ten seconds here), the hub still says it failed, in the server's own
/// words, and not "starting". `hearth doctor` reads the hub once the slowest
/// server has been tried, which on a loaded machine can be past the pause:
/// it then printed "notes: starting" and lost the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_server_being_started_again_still_shows_why_it_failed() {
    let home = tempfile::tempdir().unwrap();
    let servers = [hostile("notes", "broken-slowly", "start_timeout_secs = 30")];
    let (config, _, hub) = settled_hub(home.path(), &config_text("auto", &servers)).await;
    let again = config.data_dir.join("mcp/notes/started-again");
    let shown = || {
        let status = hub.status().remove(0);
        let failed = matches!(status.state, ServerState::Failed(_))
            && status
                .stderr
                .join("\n")
                .contains("cannot open /srv/notes/notes.db");
        (failed, status)
    };
    // Control: its first failure, as it was before the fix (its stderr is
    // read beside the failed start, so it may come a moment later).
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    while !shown().0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(shown().0, "the first failure: {:?}", shown().1);
    // One second's pause, then a start that takes ten seconds to fail.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(again.exists(), "the second start is under way");
    let (failed, status) = shown();
    assert!(failed, "while it is started again: {status:?}");
    hub.stop();
}
