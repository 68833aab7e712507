//! The token trap (issue 57): with `[channels.gateway] listen` in the
//! config and no token in the shell, the commands that do not serve the
//! gateway still run; what serves it (the daemon, `config check`) refuses
//! and says where the token goes. The service, started exactly as the unit
//! `hearth service install` writes says, takes the gateway's token from the
//! one documented place, `~/.config/hearth/secrets.env`, with no variable
//! set; a file other users may read is refused.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{self, Sandbox, assert_no_panic};
use crate::support::daemon_process::Daemon;

const TOKEN: &str = "3f1c0a7e9b2d4c6e8a0b1c2d3e4f5a6b";

/// A config with the gateway on and no token anywhere in it.
fn gateway_config(sandbox: &Sandbox) -> std::path::PathBuf {
    sandbox.config(&format!(
        "[model]\npath = \"{}\"\n[generation]\nmax_tokens = 8\n[channels.gateway]\nlisten = \"127.0.0.1:0\"\n[log]\nlevel = \"info\"\n",
        common::model(common::SMOLLM2).display()
    ))
}

fn run(sandbox: &Sandbox, config: &Path, args: &[&str]) -> (bool, String) {
    let out = sandbox
        .hearth()
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_no_panic(&stderr);
    (out.status.success(), stderr)
}

#[test]
fn commands_that_do_not_serve_the_gateway_do_not_need_its_token() {
    let sandbox = Sandbox::new();
    let config = gateway_config(&sandbox);
    let (ok, stderr) = run(&sandbox, &config, &["status"]);
    assert!(ok, "status: {stderr}");
    let (ok, stderr) = run(&sandbox, &config, &["ask", "Say hello."]);
    assert!(ok, "ask: {stderr}");
    // The control: what serves the gateway still refuses, and says where
    // the token goes.
    let (ok, stderr) = run(&sandbox, &config, &["config", "check"]);
    assert!(
        !ok && stderr.contains("channels.gateway.token") && stderr.contains("secrets.env"),
        "config check: {stderr}"
    );
    let (ok, stderr) = run(&sandbox, &config, &["daemon"]);
    assert!(
        !ok && stderr.contains("channels.gateway.token"),
        "daemon: {stderr}"
    );
}

#[test]
fn transcribe_does_not_need_the_gateway_token() {
    let sandbox = Sandbox::new();
    let config = sandbox.config(&format!(
        "[voice]\nmodel = \"{}\"\n[channels.gateway]\nlisten = \"127.0.0.1:0\"\n",
        common::speech::speech_model().display()
    ));
    let wav = common::speech::spoken_wav(sandbox.dir.path(), "Water the plants on Friday.");
    let out = sandbox
        .hearth()
        .arg("--config")
        .arg(&config)
        .arg("transcribe")
        .arg(&wav)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let heard = String::from_utf8_lossy(&out.stdout).to_lowercase();
    assert!(heard.contains("plant"), "{heard}");
}

/// The unit's `ExecStart`, split on spaces (the paths here have none).
fn exec_start(unit: &str) -> Vec<String> {
    let line = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("the unit has an ExecStart");
    line.split(' ').map(str::to_string).collect()
}

/// The daemon as systemd starts the unit: its `ExecStart`, an environment
/// with nothing but HOME and PATH (no token variable).
fn start_as_the_unit(sandbox: &Sandbox, config: &Path) -> std::process::Child {
    let unit = sandbox
        .hearth()
        .arg("--config")
        .arg(config)
        .args(["service", "install", "--print"])
        .output()
        .unwrap();
    let unit = String::from_utf8(unit.stdout).unwrap();
    assert!(!unit.contains(TOKEN), "no secret sits in the unit");
    let exec = exec_start(&unit);
    Command::new(&exec[0])
        .args(&exec[1..])
        .env_clear()
        .env("HOME", sandbox.dir.path())
        .env("PATH", std::env::var("PATH").unwrap())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn write_secrets(sandbox: &Sandbox, mode: u32) {
    let folder = sandbox.dir.path().join(".config/hearth");
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("secrets.env");
    std::fs::write(
        &path,
        format!("# the gateway's token\nHEARTH_GATEWAY_TOKEN={TOKEN}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The page's address, from the daemon's log.
fn page_url(daemon: &Daemon) -> String {
    daemon.wait_log("the web page: http://", Duration::from_secs(60));
    let log = daemon.log();
    let at = log.find("the web page: ").unwrap() + "the web page: ".len();
    log[at..].split_whitespace().next().unwrap().to_string()
}

#[tokio::test]
async fn the_service_takes_the_gateway_token_from_the_secrets_file() {
    let sandbox = Sandbox::new();
    let config = sandbox.config(
        "[model]\npath = \"/nonexistent/none.gguf\"\n[channels.gateway]\nlisten = \"127.0.0.1:0\"\n[daemon]\nshutdown_grace_secs = 1\n[log]\nlevel = \"info\"\n",
    );
    write_secrets(&sandbox, 0o600);
    let daemon = Daemon::watch(start_as_the_unit(&sandbox, &config));
    let url = page_url(&daemon);
    let client = reqwest::Client::new();
    let models = |token: Option<&str>| {
        let mut request = client.get(format!("{url}v1/models"));
        if let Some(t) = token {
            request = request.bearer_auth(t);
        }
        request.send()
    };
    assert_eq!(models(Some(TOKEN)).await.unwrap().status(), 200);
    // The control: the token is what lets a client in.
    assert_eq!(models(None).await.unwrap().status(), 401);
    assert_eq!(
        models(Some("0123456789abcdef0123")).await.unwrap().status(),
        401
    );
    let (_, log) = daemon.term();
    assert!(!log.contains(TOKEN), "the token is never logged: {log}");
}

#[test]
fn a_secrets_file_other_users_may_read_is_refused() {
    let sandbox = Sandbox::new();
    let config = gateway_config(&sandbox);
    write_secrets(&sandbox, 0o644);
    let (ok, stderr) = run(&sandbox, &config, &["status"]);
    assert!(
        !ok && stderr.contains("chmod 600") && !stderr.contains(TOKEN),
        "{stderr}"
    );
    // The positive control: the same file, readable by its owner only.
    write_secrets(&sandbox, 0o600);
    let (ok, stderr) = run(&sandbox, &config, &["config", "check"]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("secrets read from"), "{stderr}");
}
