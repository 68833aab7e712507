//! The file tools and the files hearth leaves on disk, as an attacker and a
//! careless umask would test them: a 10 GB file is read in a few MB, a glob
//! over symlink loops returns while the runtime keeps working, and after a
//! daemon run under umask 022 nothing hearth wrote is readable by others.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hearth::security::{Autonomy, SecurityPolicy};
use hearth::tools::{ToolContext, ToolRegistry};
use serde_json::json;

/// Runs `hearth tools run file_read` on `file`; its output and peak RSS.
/// The child is reaped by `wait4`, which also gives its own rusage.
#[allow(clippy::zombie_processes)]
fn read_with_hearth(sandbox: &common::Sandbox, config: &Path, file: &str) -> (String, i64) {
    let child = sandbox
        .hearth_process()
        .args([
            "--config",
            config.to_str().unwrap(),
            "tools",
            "run",
            "file_read",
        ])
        .arg(json!({ "path": file }).to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let mut out = String::new();
    for line in BufReader::new(child.stdout.unwrap()).lines() {
        out.push_str(&line.unwrap());
        out.push('\n');
    }
    let mut status = 0;
    // SAFETY: wait4 on our own child, with valid out-pointers.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut usage) }, pid);
    assert_eq!(status, 0, "hearth tools run failed: {out}");
    (out, usage.ru_maxrss)
}

#[test]
fn a_10_gb_sparse_file_is_read_in_a_few_megabytes() {
    let sandbox = common::Sandbox::new();
    let ws = sandbox.path("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("small.txt"), "hello\n").unwrap();
    let big = std::fs::File::create(ws.join("big.bin")).unwrap();
    big.set_len(10 << 30).unwrap();
    let config = sandbox.config(&format!("[agent]\nworkspace = \"{}\"\n", ws.display()));

    let (small, small_kib) = read_with_hearth(&sandbox, &config, "small.txt");
    assert_eq!(small, "hello\n");
    let (out, big_kib) = read_with_hearth(&sandbox, &config, "big.bin");
    assert!(
        out.contains("[file is 10737418240 bytes; only the first"),
        "{}",
        &out[out.len().saturating_sub(200)..]
    );
    assert!(
        big_kib - small_kib < 8 << 10,
        "reading 10 GB grew the peak RSS from {small_kib} KiB to {big_kib} KiB"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn glob_over_symlink_loops_returns_while_the_runtime_keeps_working() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    for d in 0..20 {
        let sub = ws.join(format!("d{d}/inner"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..500 {
            std::fs::write(sub.join(format!("f{f}.log")), "").unwrap();
        }
        // Each folder loops back to the top twice.
        std::os::unix::fs::symlink("../..", sub.join("up")).unwrap();
        std::os::unix::fs::symlink("../../..", sub.join("upper")).unwrap();
    }
    std::fs::write(ws.join("d3/inner/wanted.txt"), "").unwrap();
    std::os::unix::fs::symlink(".", ws.join("self")).unwrap();
    let policy = SecurityPolicy::new(&ws, Autonomy::Supervised, None).unwrap();
    let ctx = ToolContext::new(policy, Duration::from_secs(10));
    let tools = ToolRegistry::core();

    // A heartbeat on this single-threaded runtime: it only ticks while
    // nothing blocks the runtime.
    let ticks = Arc::new(AtomicUsize::new(0));
    let counted = ticks.clone();
    let heartbeat = tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_millis(1));
        loop {
            every.tick().await;
            counted.fetch_add(1, Ordering::SeqCst);
        }
    });
    tokio::task::yield_now().await;
    let before = ticks.load(Ordering::SeqCst);
    let found = tools
        .run("glob", json!({"pattern": "**/*.txt"}), &ctx)
        .await;
    let during = ticks.load(Ordering::SeqCst) - before;
    heartbeat.abort();
    assert!(!found.is_error, "{}", found.content);
    assert_eq!(
        found.content, "d3/inner/wanted.txt",
        "links were not followed"
    );
    assert!(during > 0, "the runtime did not tick while glob walked");

    let pathological = tools
        .run(
            "glob",
            json!({"pattern": "*a*a*a*a*a*a*a*a*a*a*a*a*a*b"}),
            &ctx,
        )
        .await;
    assert!(
        pathological.is_error && pathological.content.contains("wildcards"),
        "{}",
        pathological.content
    );
}

/// Every folder under `dir` is 0700 and every file 0600 (or stricter).
fn assert_private(dir: &Path) {
    let mode = std::fs::metadata(dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode & 0o077, 0, "{} is {mode:o}", dir.display());
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            assert_private(&path);
        } else {
            let mode = meta.permissions().mode() & 0o777;
            assert_eq!(mode & 0o077, 0, "{} is {mode:o}", path.display());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_private_after_a_daemon_run_with_umask_022() {
    let sandbox = common::Sandbox::new();
    let model = common::model(common::SMOLLM2);
    let config = sandbox.config(&format!(
        "[model]\npath = \"{}\"\ncontext_size = 1024\n[generation]\nmax_tokens = 16\n[memory]\nenabled = true\n[channels.gateway]\nlisten = \"127.0.0.1:0\"\nallow_loopback_without_token = true\n[daemon]\nshutdown_grace_secs = 5\n",
        model.display()
    ));
    let mut command = sandbox.hearth_process();
    command
        .args(["--config", config.to_str().unwrap(), "daemon"])
        .env("RUST_LOG", "hearth=info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: umask only, between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::umask(0o022);
            Ok(())
        });
    }
    let mut daemon = command.spawn().unwrap();
    // The gateway logs the address it listens on.
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = daemon.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if !line.contains("gateway listening") {
                continue;
            }
            if let Some(addr) = line.split("local=").nth(1) {
                let addr: String = addr.chars().take_while(|c| !c.is_whitespace()).collect();
                let _ = tx.send(addr);
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the gateway did not say where it listens");
    let reply = reqwest::Client::new()
        .post(format!("http://{addr}/v1/message"))
        .json(&json!({"text": "Say hi.", "chat": "modes"}))
        .timeout(Duration::from_secs(120))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200, "{:?}", reply.text().await);
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
    assert!(daemon.wait().unwrap().success());

    let data = sandbox.path("data");
    let databases: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".sqlite3"))
        .collect();
    assert!(!databases.is_empty(), "the daemon wrote no database");
    assert_private(&data);
    let workspace = sandbox.path("hearth-workspace");
    assert!(workspace.is_dir(), "the workspace is beside the data dir");
    assert_private(&workspace);
}
