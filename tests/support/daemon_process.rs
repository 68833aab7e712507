//! A real `hearth daemon` process against the fake Telegram Bot API and
//! the slow OpenAI-compatible model: started, watched through its log,
//! killed or stopped (`crash` and `full_disk` tests).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::Sandbox;
use crate::support::slow_model::{SlowModel, reply_to};
use crate::support::telegram_fake::{FakeTelegram, Incoming, TOKEN};

/// A `hearth daemon` child process and its log.
pub struct Daemon {
    pub child: Child,
    log: Arc<Mutex<Vec<String>>>,
}

/// A test that fails before it stops its daemon leaves none behind.
impl Drop for Daemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Daemon {
    pub fn start(sandbox: &Sandbox, config: &Path) -> Self {
        let child = sandbox
            .hearth_process()
            .args(["--config", config.to_str().unwrap(), "daemon"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let daemon = Self::watch(child);
        daemon.wait_log("listening on", Duration::from_secs(60));
        daemon
    }

    /// Collects the log of a started daemon.
    pub fn watch(mut child: Child) -> Self {
        let log = Arc::new(Mutex::new(Vec::new()));
        let lines = log.clone();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        Self { child, log }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    pub fn wait_log(&self, needle: &str, within: Duration) {
        let deadline = Instant::now() + within;
        while !self.log().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "no `{needle}` in the log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn kill9(mut self) -> String {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.log()
    }

    /// SIGTERM; the exit code and the log.
    pub fn term(mut self) -> (Option<i32>, String) {
        let pid = self.child.id().to_string();
        // It may have ended already (a refused start).
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let status = self.child.wait().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        (status.code(), self.log())
    }
}

/// The config of a daemon that talks to `fake` and `model`.
/// `telegram`: more lines for `[channels.telegram]`; `extra`: more tables.
pub fn config(
    sandbox: &Sandbox,
    fake: &FakeTelegram,
    model: &SlowModel,
    telegram: &str,
    extra: &str,
) -> std::path::PathBuf {
    sandbox.config(&format!(
        r#"[model]
path = "/nonexistent/none.gguf"
[memory]
enabled = false
[channels.telegram]
bot_token = "{TOKEN}"
api_url = "{}"
allowed_users = ["*"]
interrupt_on_new_message = false
ack_reactions = false
draft_update_interval_ms = 100
{telegram}
[providers.openai]
base_url = "{}"
model = "slow"
[routing]
default_provider = "openai"
[log]
level = "info"
{extra}
"#,
        fake.url, model.base_url
    ))
}

/// Waits until `check` holds (polling), or fails with `what`.
pub async fn until(what: &str, within: Duration, check: impl Fn() -> bool) {
    let deadline = Instant::now() + within;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// How many of the chat's messages carry the reply to `asked`.
pub fn answers(fake: &FakeTelegram, chat: i64, asked: &str) -> usize {
    let reply = reply_to(asked);
    let head: String = reply.chars().take(40).collect();
    fake.chat(chat).iter().filter(|m| m.contains(&head)).count()
}

pub fn send(fake: &FakeTelegram, user: i64, text: &str) -> i64 {
    fake.inject(Incoming::text(user, text)).0
}

/// Waits until the gateway on `port` (with `token`) shows `channel`'s
/// listener restarting after an error that says `cause`, on the page's box
/// (`/ui/api/box`), within 20 s; then checks that `/metrics` counts its
/// listener's errors.
pub async fn box_shows_listener_failing(port: u16, token: &str, channel: &str, cause: &str) {
    let web = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let seen: serde_json::Value = web
            .get(format!("{base}/ui/api/box"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let shown = seen["channels"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == channel))
            .unwrap_or_else(|| panic!("{seen}"))
            .clone();
        // At first the cut session's error, then the refused reconnections.
        if shown["last_error"].as_str().unwrap_or("").contains(cause)
            && shown["state"]
                .as_str()
                .unwrap_or("")
                .starts_with("restarting")
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{seen}");
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    let metrics = web
        .get(format!("{base}/metrics"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let wanted =
        format!(r#"hearth_channel_errors_total{{channel="{channel}",operation="listen"}}"#);
    let errors = metrics
        .lines()
        .find(|l| l.starts_with(&wanted))
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!(!errors.ends_with(" 0"), "{errors}");
}
