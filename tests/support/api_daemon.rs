//! A real `hearth daemon` on SmolLM2 with its gateway on a free port, for
//! the tests of the OpenAI-compatible API: started once its model answers,
//! restarted gracefully (its KV cache saved to disk) when a test asks.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

use super::ways_in::{TOKEN, WAIT};
use crate::common;

/// The served model's name: the test model's file without `.gguf`.
pub const SERVED: &str = "SmolLM2-135M-Instruct.Q4_1";

pub struct Running {
    daemon: tokio::process::Child,
    sandbox: common::Sandbox,
    config: PathBuf,
    pub base: String,
    /// The served model's name.
    served: String,
    /// The daemon's log lines (the engine's at `info`).
    log: tokio::sync::mpsc::UnboundedReceiver<String>,
    /// Held while the daemon runs: its engine takes its turn with the
    /// in-process ones, since two engines spinning on two cores slow each
    /// other many times over (CI saw this test's client pass 300 s).
    _engine_turn: common::EngineTurn,
}

impl Running {
    /// The daemon's data folder (the sandbox's `HEARTH_DATA_DIR`).
    pub fn data_dir(&self) -> PathBuf {
        self.sandbox.path("data")
    }

    /// The next log line containing `what`, within a minute; the lines
    /// read on the way are shown when it never comes.
    pub async fn logged(&mut self, what: &str) -> String {
        let mut seen = Vec::new();
        let wait = async {
            while let Some(line) = self.log.recv().await {
                if line.contains(what) {
                    return Some(line);
                }
                seen.push(line);
            }
            None
        };
        match tokio::time::timeout(Duration::from_secs(60), wait).await {
            Ok(Some(line)) => line,
            _ => panic!(
                "the daemon never logged `{what}`; it logged:\n{}",
                seen.join("\n")
            ),
        }
    }
}

/// [`daemon`] with `model` keys added to its `[model]` section.
pub async fn daemon_with(model_keys: &str, extra: &str) -> Running {
    daemon_on(common::SMOLLM2, model_keys, extra).await
}

/// [`daemon_with`] serving the test model `file`.
#[allow(clippy::await_holding_lock)] // the test's own runtime; engines take turns
pub async fn daemon_on(file: &str, model_keys: &str, extra: &str) -> Running {
    let engine_turn = common::engine_lock();
    let model = common::model(file);
    let sandbox = common::Sandbox::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = sandbox.config(&format!(
        "[model]\npath = \"{}\"\n{model_keys}[generation]\ntemperature = 0.0\nmax_tokens = 400\n[channels.gateway]\nlisten = \"127.0.0.1:{port}\"\ntoken = \"{TOKEN}\"\n{extra}",
        model.display()
    ));
    let base = format!("http://127.0.0.1:{port}");
    let served = file.trim_end_matches(".gguf").to_string();
    let (daemon, log) = launch(&sandbox, &config, &base, &served).await;
    Running {
        daemon,
        sandbox,
        config,
        base,
        served,
        log,
        _engine_turn: engine_turn,
    }
}

impl Running {
    /// Stops the daemon as a service manager would (SIGTERM: it saves its
    /// conversations' KV cache) and starts it again on the same data.
    pub async fn restart(self) -> Self {
        self.restart_after(|_| {}).await
    }

    /// [`Self::restart`], running `between` while the daemon is stopped.
    pub async fn restart_after(mut self, between: impl FnOnce(&Self)) -> Self {
        let pid = self.daemon.id().unwrap() as i32;
        // SAFETY: a signal to our own child.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let status = tokio::time::timeout(WAIT, self.daemon.wait())
            .await
            .expect("the daemon stops on SIGTERM")
            .unwrap();
        assert!(status.success(), "{status:?}");
        between(&self);
        let (daemon, log) = launch(&self.sandbox, &self.config, &self.base, &self.served).await;
        Self {
            daemon,
            log,
            ..self
        }
    }

    /// `hearth ARGS` with the daemon's config and data folder.
    pub fn cli(&self, args: &[&str]) -> std::process::Output {
        self.sandbox
            .hearth_process()
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .output()
            .unwrap()
    }
}

/// Starts the daemon and waits until its gateway answers and its model has
/// made a first reply.
async fn launch(
    sandbox: &common::Sandbox,
    config: &std::path::Path,
    base: &str,
    served: &str,
) -> (
    tokio::process::Child,
    tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let mut daemon = tokio::process::Command::from(sandbox.hearth_process())
        .arg("--config")
        .arg(config)
        .arg("daemon")
        .env("RUST_LOG", "warn,hearth_engine=info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (lines, log) = tokio::sync::mpsc::unbounded_channel();
    let stderr = daemon.stderr.take().unwrap();
    tokio::spawn(async move {
        use tokio::io::AsyncBufReadExt;
        let mut reader = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            let _ = lines.send(line);
        }
    });
    let client = reqwest::Client::new();
    let up = async {
        loop {
            let ok = client
                .get(format!("{base}/v1/models"))
                .bearer_auth(TOKEN)
                .send()
                .await;
            if ok.is_ok_and(|r| r.status() == 200) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    tokio::time::timeout(WAIT, up)
        .await
        .expect("the daemon's gateway comes up");
    // The model loads in the background: wait for a first reply, so that
    // no test's clock runs while it loads (a short `reply_timeout_secs`
    // may answer 504 meanwhile).
    let loaded = async {
        loop {
            let warm = client
                .post(format!("{base}/v1/chat/completions"))
                .bearer_auth(TOKEN)
                .json(&json!({"model": served, "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}))
                .send()
                .await;
            if warm.is_ok_and(|r| r.status() == 200) {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(300), loaded)
        .await
        .expect("the model loads");
    (daemon, log)
}
