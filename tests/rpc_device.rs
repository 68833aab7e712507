//! A device in every test run: `hearth-rpc-server` (`make rpc-server`) on
//! 127.0.0.1 lends its CPU through llama.cpp's RPC backend, and hearth sees
//! it as a GPU with its own memory: layers offloaded to it, their KV cache
//! in its buffers, saved to disk and restored after a restart.
//!
//! The backends are loaded once per process, so every check runs `hearth`
//! as its own process, as a user would.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Sandbox;

fn rpc_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/rpc");
    assert!(
        dir.join("server/hearth-rpc-server").is_file()
            && dir.join("client/libggml-rpc.so").is_file(),
        "no RPC device: run `make rpc-server` (make test does)"
    );
    dir
}

/// A port the kernel hands out on 127.0.0.1, given back at once.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `hearth-rpc-server`, killed when dropped.
struct RpcServer {
    child: Child,
    endpoint: String,
}

impl RpcServer {
    fn start() -> Self {
        Self::start_limited(None)
    }

    /// With `limit_kb` of address space: a device that reports gigabytes
    /// free and cannot allocate them.
    ///
    /// The port is one the kernel just handed out and took back, so another
    /// test's process may take it first: the server then cannot bind and
    /// exits, while that process answers the connect below. A server that is
    /// gone once the port answers is started again on another port.
    fn start_limited(limit_kb: Option<u32>) -> Self {
        for _ in 0..3 {
            let port = free_port();
            let endpoint = format!("127.0.0.1:{port}");
            let server = rpc_dir().join("server/hearth-rpc-server");
            let limit = limit_kb.map_or(String::new(), |kb| format!("ulimit -v {kb}; "));
            // The device computes on the threads of the tests' engines
            // (one each under `make test`, which runs several at once).
            let threads = match common::engine_threads() {
                0 => 2,
                n => n,
            };
            let mut child = Command::new("bash")
                .arg("-c")
                .arg(format!("{limit}exec \"$0\" \"$@\""))
                .arg(server)
                .args([
                    "--host",
                    "127.0.0.1",
                    "--port",
                    &port.to_string(),
                    "--threads",
                    &threads.to_string(),
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let started = Instant::now();
            while std::net::TcpStream::connect(&endpoint).is_err() {
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "the RPC server did not listen"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            std::thread::sleep(Duration::from_millis(200));
            if child.try_wait().unwrap().is_none() {
                return Self { child, endpoint };
            }
        }
        panic!("the RPC server exited three times once its port answered");
    }
}

impl Drop for RpcServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A config for SmolLM2 with the RPC device (when `servers` is not empty).
fn config(s: &Sandbox, servers: &[&str], model_extra: &str, engine_extra: &str) -> PathBuf {
    let quoted: Vec<String> = servers.iter().map(|e| format!("\"{e}\"")).collect();
    s.config(&format!(
        "[model]\npath = \"{}\"\ncontext_size = 1024\n{model_extra}\n\
         [generation]\ntemperature = 0.0\nmax_tokens = 48\n\
         [engine]\nslots = 4\nbackends_dir = \"{}\"\nrpc_servers = [{}]\n{engine_extra}\n",
        common::model(common::SMOLLM2).display(),
        rpc_dir().join("client").display(),
        quoted.join(", ")
    ))
}

fn run(s: &Sandbox, config: &Path, args: &[&str]) -> (bool, String, String) {
    let out = s
        .hearth()
        .env("RUST_LOG", "warn,hearth::cli::ask=info")
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    common::assert_no_panic(&stderr);
    (out.status.success(), stdout, stderr)
}

#[test]
fn doctor_names_the_device_its_memory_and_offloads_every_layer() {
    let _engine = common::engine_lock();
    let server = RpcServer::start();
    let s = Sandbox::new();
    let (_, out, err) = run(&s, &config(&s, &[&server.endpoint], "", ""), &["doctor"]);
    let gpu = out
        .lines()
        .find(|l| l.contains("gpu ") && l.contains(&server.endpoint))
        .unwrap_or_else(|| panic!("{out}\n{err}"));
    assert!(
        gpu.starts_with("ok") && gpu.contains("MiB free of"),
        "{gpu}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("ok") && l.contains("rpc") && l.contains(&server.endpoint)),
        "{out}"
    );
    assert_eq!(common::offloaded(&out), (31, 31), "{out}");

    // Positive control: without the server, nothing is offloaded.
    let (_, cpu, _) = run(&s, &config(&s, &[], "", ""), &["doctor"]);
    assert_eq!(common::offloaded(&cpu), (0, 31), "{cpu}");
}

#[test]
fn a_memory_cap_offloads_part_of_the_model_and_says_so() {
    let _engine = common::engine_lock();
    let server = RpcServer::start();
    let s = Sandbox::new();
    // 768 MiB of margin, ~100 MiB of KV cache for 4 × 1,024 tokens: a cap of
    // 900 MiB leaves room for some of the 3.2 MiB layers, not all.
    let capped = config(&s, &[&server.endpoint], "", "gpu_memory_mb = 900");
    let (ok, out, err) = run(&s, &capped, &["doctor"]);
    let (n, total) = common::offloaded(&out);
    assert!(
        n > 0 && n < total,
        "part of the model: {n} of {total}\n{out}\n{err}"
    );
    assert!(out.contains("at most 900 MiB"), "{out}");
    assert!(ok, "{out}");
    let (ok, reply, err) = run(&s, &capped, &["ask", "What is the capital of France?"]);
    assert!(ok && !reply.trim().is_empty(), "{reply}\n{err}");
}

#[test]
fn greedy_replies_offloaded_equal_the_cpu_ones_batched_or_not() {
    let _engine = common::engine_lock();
    let server = RpcServer::start();
    let s = Sandbox::new();
    let bench = |servers: &[&str], name: &str| {
        let json = s.path(name);
        let (ok, _, err) = run(
            &s,
            &config(
                &s,
                servers,
                "flash_attention = \"off\"",
                "speculative = \"off\"",
            ),
            &[
                "bench",
                "--parallel",
                "4",
                "--rounds",
                "1",
                "--reply-tokens",
                "64",
                "--json",
                json.to_str().unwrap(),
            ],
        );
        assert!(ok, "{err}");
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
        report
    };
    let device = bench(&[&server.endpoint], "device.json");
    let cpu = bench(&[], "cpu.json");
    let replies = |r: &serde_json::Value| -> Vec<String> {
        r["rounds"][0]["serial"]["replies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect()
    };
    // Batched against one at a time on the device: the same arithmetic for
    // the same batch, but which tokens share a batch depends on when each
    // request arrives, and a matrix of several rows is summed otherwise
    // than one row. Measured: 4 of 4 identical in two local runs, 3 of 4 in
    // one CI run; where they part, it is after their opening sentences.
    let batched: Vec<u64> = device["rounds"][0]["common_prefix_chars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    eprintln!(
        "batched against one at a time on the device: {} of 4 identical, characters equal {batched:?}",
        device["identical_replies"]
    );
    assert!(
        batched.iter().all(|&n| n >= 40),
        "batched replies start as the one-at-a-time ones: {batched:?}\n{device}"
    );
    // The server's CPU code is ggml's generic AVX2 module; hearth's own is
    // the best for this CPU (AVX-512 here, with repacked weights): sums are
    // rounded in another order, so greedy replies agree for a while, then a
    // near tie goes the other way. Broken offload would agree on nothing.
    let common: Vec<usize> = replies(&device)
        .iter()
        .zip(replies(&cpu))
        .map(|(d, c)| d.chars().zip(c.chars()).take_while(|(x, y)| x == y).count())
        .collect();
    eprintln!("characters equal, device against CPU: {common:?}");
    assert!(
        common.iter().all(|&n| n >= 40),
        "every reply's first sentence matches the CPU's: {common:?}\n{device}\n{cpu}"
    );
}

#[test]
fn a_conversation_cached_on_the_device_resumes_after_a_restart() {
    let _engine = common::engine_lock();
    let server = RpcServer::start();
    let s = Sandbox::new();
    let config = config(&s, &[&server.endpoint], "", "");
    let (ok, _, err) = run(
        &s,
        &config,
        &[
            "ask",
            "--session",
            "trip",
            "My name is Ada and I live in Lisbon.",
        ],
    );
    assert!(ok, "{err}");
    // A new process: the KV cache comes back from disk onto the device.
    let (ok, _, err) = run(
        &s,
        &config,
        &["ask", "--session", "trip", "What is my name?"],
    );
    assert!(ok, "{err}");
    common::assert_resumed(&err);
}

#[test]
fn a_server_that_does_not_answer_is_named_with_its_fix_and_the_cpu_answers() {
    let _engine = common::engine_lock();
    let s = Sandbox::new();
    let closed = free_port();
    let endpoint = format!("127.0.0.1:{closed}");
    let config = config(&s, &[&endpoint], "", "");
    let (ok, out, _) = run(&s, &config, &["doctor"]);
    let line = out
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("rpc"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.starts_with("FAIL") && line.contains(&endpoint) && line.contains("fix:"),
        "{line}"
    );
    assert!(!ok, "doctor fails: {out}");
    assert_eq!(common::offloaded(&out), (0, 31), "{out}");
    let (ok, reply, err) = run(&s, &config, &["ask", "Say hello."]);
    assert!(
        ok && !reply.trim().is_empty(),
        "the CPU answers: {reply}\n{err}"
    );
}

#[test]
fn a_device_that_cannot_hold_the_cache_is_a_clear_error_not_an_abort() {
    let _engine = common::engine_lock();
    // Room for the server itself, not for the weights and the KV cache.
    let server = RpcServer::start_limited(Some(150_000));
    let s = Sandbox::new();
    let (ok, reply, err) = run(
        &s,
        &config(&s, &[&server.endpoint], "", ""),
        &["ask", "Say hello."],
    );
    assert!(!ok, "{reply}");
    assert!(
        err.contains("on the GPU") && err.contains("fix:") && err.contains("gpu_layers"),
        "{err}"
    );
    assert!(
        !err.contains("ggml_abort") && !err.contains("backtrace"),
        "{err}"
    );
    // Positive control: the same setup with no layers on the device answers.
    let capped = config(&s, &[&server.endpoint], "gpu_layers = 0", "");
    let (ok, reply, err) = run(&s, &capped, &["ask", "Say hello."]);
    assert!(ok && !reply.trim().is_empty(), "{reply}\n{err}");
}

#[test]
fn a_device_without_room_for_the_weights_leaves_the_model_on_the_cpu_with_a_warning() {
    let _engine = common::engine_lock();
    // Room for the server, not for SmolLM2's 92 MB of weights; it reports
    // gigabytes free all the same, so hearth plans every layer for it.
    let server = RpcServer::start_limited(Some(70_000));
    let s = Sandbox::new();
    let config = config(&s, &[&server.endpoint], "", "");
    let (ok, reply, err) = run(&s, &config, &["ask", "Say hello."]);
    assert!(
        ok && !reply.trim().is_empty(),
        "the CPU answers: {reply}\n{err}"
    );
    assert!(
        err.contains("did not load with 31 layers on the GPU")
            && err.contains("loading it on the CPU instead")
            && err.contains("gpu_layers"),
        "{err}"
    );
    assert!(!err.contains("corrupt"), "the file is not blamed: {err}");
    let (_, out, _) = run(&s, &config, &["doctor"]);
    assert_eq!(common::offloaded(&out), (0, 31), "{out}");
}

#[test]
fn gemma_offloaded_to_the_device_answers_like_the_cpu_and_resumes_after_a_restart() {
    let _engine = common::engine_lock();
    let server = RpcServer::start();
    let s = Sandbox::new();
    let gemma = |servers: &[&str]| {
        let quoted: Vec<String> = servers.iter().map(|e| format!("\"{e}\"")).collect();
        let path = s.path(&format!("gemma-{}.toml", servers.len()));
        let text = format!(
            "[model]\npath = \"{}\"\nchat_template = \"gemma\"\ncontext_size = 1024\n\
             [generation]\ntemperature = 0.0\nmax_tokens = 32\n\
             [engine]\nslots = 2\nspeculative = \"off\"\nbackends_dir = \"{}\"\nrpc_servers = [{}]\n",
            common::model(common::GEMMA3).display(),
            rpc_dir().join("client").display(),
            quoted.join(", ")
        );
        std::fs::write(&path, text).unwrap();
        path
    };
    let device = gemma(&[&server.endpoint]);
    let (_, out, err) = run(&s, &device, &["doctor"]);
    let (n, total) = common::offloaded(&out);
    assert!(
        n == total && n > 0,
        "every layer: {n} of {total}\n{out}\n{err}"
    );

    let question = "Name three colours of the rainbow.";
    let (ok, on_device, err) = run(&s, &device, &["ask", "--session", "g", question]);
    assert!(ok && !on_device.trim().is_empty(), "{on_device}\n{err}");
    let (ok, on_cpu, err) = run(&s, &gemma(&[]), &["ask", "--session", "c", question]);
    assert!(ok, "{err}");
    // Gemma's sliding-window layers run on the device too; rounding differs
    // from hearth's own CPU code, so the replies agree for a while.
    let shared = common::shared(&on_device, &on_cpu);
    eprintln!("gemma, device against CPU: {shared} characters equal\n{on_device}\n---\n{on_cpu}");
    assert!(shared >= 20, "{on_device}\n---\n{on_cpu}");

    // A new process: the conversation's cache comes back onto the device.
    let (ok, _, err) = run(&s, &device, &["ask", "--session", "g", "And two more?"]);
    assert!(ok, "{err}");
    common::assert_resumed(&err);
}

#[test]
fn drafts_are_checked_on_the_device_too() {
    let _engine = common::engine_lock();
    let server = RpcServer::start();
    let s = Sandbox::new();
    let json = s.path("spec.json");
    let (ok, out, err) = run(
        &s,
        &config(&s, &[&server.endpoint], "", ""),
        &[
            "bench",
            "--speculative",
            "--rounds",
            "1",
            "--reply-tokens",
            "48",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(ok, "{out}\n{err}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    eprintln!("{out}");
    let quoting = &report["kinds"][1];
    assert_eq!(quoting["name"], "quoting the prompt");
    assert!(
        quoting["accepted"].as_u64().unwrap() > 0,
        "drafts of the quoted file are kept on the device: {quoting}"
    );
    assert_eq!(report["drafting"], "prompt lookup, up to 8 tokens");
}
