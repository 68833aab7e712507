//! `hearth daemon` as a user runs it: no channel is a plain error; with a
//! channel it runs until SIGTERM and then exits 0.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Sandbox, assert_no_panic};

#[test]
fn no_channel_is_a_plain_error() {
    let sandbox = Sandbox::new();
    let out = sandbox.hearth().arg("daemon").output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no channel is configured"), "{stderr}");
    assert_no_panic(&stderr);
}

#[cfg(unix)]
#[test]
fn sigterm_stops_the_daemon_with_exit_0() {
    let sandbox = Sandbox::new();
    // No model is loaded: the file does not exist, which the daemon logs
    // and survives (replies would fail; none are asked for).
    let config = sandbox.config(
        "[model]\npath = \"/nonexistent/none.gguf\"\n[daemon]\nloopback_channel = true\nshutdown_grace_secs = 2\n",
    );
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("hearth"))
        .args(["--config", config.to_str().unwrap(), "daemon"])
        .env("HOME", sandbox.dir.path())
        .env("HEARTH_DATA_DIR", sandbox.path("data"))
        .env_remove("HEARTH_CONFIG")
        .env_remove("RUST_LOG")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !seen
        .iter()
        .any(|l: &String| l.contains("listening on loopback"))
    {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("the daemon did not start: {seen:?}"));
        seen.push(line);
    }
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(1)) {
        seen.push(line);
    }
    assert_eq!(status.code(), Some(0), "{seen:?}");
    assert!(seen.iter().any(|l| l.contains("stopping")), "{seen:?}");
    assert_no_panic(&seen.join("\n"));
}
