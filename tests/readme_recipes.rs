//! The README's recipes, run exactly as written (issue 57): each recipe's
//! shell blocks are read out of README.md between `<!-- recipe: NAME -->`
//! and `<!-- /recipe -->`, so the README cannot drift from what is tested.
//! They run with bash in a fresh home folder, with `hearth` on PATH as
//! `make install` leaves it and nothing of the tester's environment.
//!
//! What differs from a person's run, and only this: the `<…>` parts a
//! reader fills in are filled in; the Telegram recipe's bot talks to the
//! fake Bot API (its `api_url` is added to the section the recipe wrote);
//! the gateway's port 8787 becomes a free one; `hearth daemon`, which a
//! person leaves running in the terminal, runs in the background.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{Sandbox, assert_no_panic};
use crate::support::daemon_process::{Daemon, until};
use crate::support::telegram_fake::{FakeTelegram, Incoming, TOKEN};

const DAEMON: &str = "hearth daemon";

/// The shell blocks of recipe `name`, in order.
fn recipe(name: &str) -> Vec<String> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = format!("<!-- recipe: {name} -->");
    let body = readme
        .split_once(&start)
        .unwrap_or_else(|| panic!("no {start} in README.md"))
        .1
        .split_once("<!-- /recipe -->")
        .unwrap_or_else(|| panic!("recipe {name} is not closed"))
        .0;
    let blocks: Vec<String> = body
        .split("```sh\n")
        .skip(1)
        .map(|b| b.split_once("```").unwrap().0.to_string())
        .collect();
    assert!(!blocks.is_empty(), "recipe {name} has no sh block");
    blocks
}

/// The folder the binary is in: on PATH, as after `make install`.
fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_hearth"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A shell in `home` as a person's login has it: HOME and PATH only.
fn shell(home: &Path, script: &str) -> Command {
    // The tester's PATH stands for the person's: python3 may be pyenv's.
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let mut cmd = Command::new("bash");
    cmd.args(["-e", "-c", script])
        .current_dir(home)
        .env_clear()
        .env("HOME", home)
        .env("PATH", format!("{}:{path}", bin_dir().display()));
    cmd
}

/// Runs a block; its stdout.
fn run(home: &Path, script: &str) -> String {
    let out = shell(home, script).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_no_panic(&stderr);
    assert!(
        out.status.success(),
        "the README's\n{script}\nfailed: {stderr}"
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Splits the block that ends with `hearth daemon`: what runs before it.
fn before_daemon(block: &str) -> String {
    let body = block
        .trim_end()
        .strip_suffix(DAEMON)
        .unwrap_or_else(|| panic!("the block does not end with `{DAEMON}`:\n{block}"));
    body.to_string()
}

/// `hearth daemon` as the recipe runs it.
fn daemon(home: &Path) -> Daemon {
    let child = shell(home, DAEMON)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Daemon::watch(child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_telegram_recipe_answers_through_the_bot_api() {
    let sandbox = Sandbox::new();
    let home = sandbox.dir.path();
    let fake = FakeTelegram::start().await;
    let user = 5_550_123;
    let blocks = recipe("telegram");
    let first = blocks[0]
        .replace("<the token from BotFather>", TOKEN)
        .replace("<your user id>", &user.to_string());
    assert!(
        !first.contains("<the ") && !first.contains("<your "),
        "a part left to fill in: {first}"
    );
    run(home, &before_daemon(&first));
    // The fake Bot API instead of Telegram's.
    let config = home.join(".config/hearth/config.toml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "[channels.telegram]\n",
        &format!("[channels.telegram]\napi_url = \"{}\"\n", fake.url),
    );
    std::fs::write(&config, text).unwrap();
    let daemon = daemon(home);
    daemon.wait_log("listening on", Duration::from_secs(120));
    fake.inject(Incoming::text(user, "Hello!"));
    until("the bot's reply", Duration::from_secs(120), || {
        !fake.chat(user).is_empty()
    })
    .await;
    // The control: someone not in allowed_users is not answered by the model.
    let stranger = 7_770_001;
    fake.inject(Incoming::text(stranger, "Hello!"));
    until("the refusal", Duration::from_secs(60), || {
        !fake.chat(stranger).is_empty()
    })
    .await;
    assert!(
        fake.chat(stranger)[0].contains("private assistant"),
        "{:?}",
        fake.chat(stranger)
    );
    let (_, log) = daemon.term();
    assert!(!log.contains(TOKEN), "the token is never logged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_recipe_serves_a_script_and_the_page_in_chromium() {
    let sandbox = Sandbox::new();
    let home = sandbox.dir.path();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let blocks: Vec<String> = recipe("gateway")
        .iter()
        .map(|b| b.replace("8787", &port))
        .collect();
    assert_eq!(blocks.len(), 3, "{blocks:?}");
    run(home, &before_daemon(&blocks[0]));
    let daemon = daemon(home);
    let page = format!("http://127.0.0.1:{port}/");
    daemon.wait_log(&format!("the web page: {page}"), Duration::from_secs(120));
    // The token, as the recipe shows it to the reader.
    let shown = run(home, &blocks[1]);
    let token = shown
        .trim()
        .strip_prefix("HEARTH_GATEWAY_TOKEN=")
        .unwrap_or_else(|| panic!("{shown}"))
        .to_string();
    assert_eq!(token.len(), 48, "{shown}");
    // A script, from another shell.
    let answered = run(home, &blocks[2]);
    let answer: serde_json::Value =
        serde_json::from_str(&answered).unwrap_or_else(|e| panic!("{e}: {answered}"));
    assert_eq!(answer["chat"], "kitchen", "{answer}");
    assert!(
        !answer["reply"].as_str().unwrap_or("").is_empty(),
        "{answer}"
    );
    // The control: without the token, the script is refused.
    let refused = shell(
        home,
        &blocks[2].replace(
            ". ~/.config/hearth/secrets.env\n",
            "HEARTH_GATEWAY_TOKEN=wrong\n",
        ),
    )
    .output()
    .unwrap();
    assert!(
        String::from_utf8_lossy(&refused.stdout).contains("error"),
        "{refused:?}"
    );
    // Three API clients' conversations (each its own KV row in the box).
    let client = reqwest::Client::new();
    let listed: serde_json::Value = client
        .get(format!("{page}v1/models"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let plain = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|m| m["id"].as_str().filter(|id| id.contains("SmolLM2")))
        .unwrap_or_else(|| panic!("{listed}"))
        .to_string();
    for i in 0..3 {
        let body = serde_json::json!({
            "model": plain,
            "messages": [{"role": "user", "content": format!("Question number {i}: what is {i} plus {i}?")}],
            "max_tokens": 4,
        });
        let answered = client
            .post(format!("{page}v1/chat/completions"))
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(answered.status(), 200);
    }
    // The page, in Chromium on a phone's screen: a new conversation of its
    // own (not the script's), the script's apart and named, nothing wider
    // than the screen and no word broken in two.
    let shots = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/web-shots");
    std::fs::create_dir_all(&shots).unwrap();
    let seen = crate::support::ways_in::python(
        "page_first_use.py",
        &[&page, &token, shots.to_str().unwrap()],
        "",
    )
    .await;
    let opened = seen["opened"].as_array().unwrap();
    assert!(
        opened.len() == 1 && opened[0][0] == "notice",
        "after signing in: {seen}"
    );
    let messages = seen["messages"].as_array().unwrap();
    assert!(
        messages
            .iter()
            .any(|m| m[0] == "assistant" && !m[1].as_str().unwrap().is_empty()),
        "{seen}"
    );
    let own = seen["own"].as_array().unwrap();
    let other = seen["other"].as_array().unwrap();
    assert!(
        own.len() == 1 && own[0].as_str().unwrap().starts_with("Hello!"),
        "the page's own: {seen}"
    );
    assert!(
        other.len() == 1 && other[0].as_str().unwrap().starts_with("kitchen: Hello!"),
        "the script's, apart: {seen}"
    );
    for layout in ["chat_layout", "list_layout", "box_layout"] {
        let l = &seen[layout];
        assert_eq!(l["width"], 390, "{seen}");
        assert!(
            l["scroll"] == false && l["wide"].as_array().unwrap().is_empty(),
            "{layout}: wider than the screen: {l}"
        );
        assert!(
            l["broken"].as_array().unwrap().is_empty(),
            "{layout}: words broken in two: {l}"
        );
    }
    assert_eq!(
        seen["header_rows"], 1,
        "the phone's header is one row: {seen}"
    );
    daemon.term();
}

#[test]
fn the_mcp_recipe_starts_the_time_server_from_its_venv() {
    let sandbox = Sandbox::new();
    let home = sandbox.dir.path();
    let blocks = recipe("mcp");
    assert_eq!(blocks.len(), 1);
    let listed = run(home, &blocks[0]);
    assert!(
        listed.contains("time: ready") && listed.contains("time__get_current_time"),
        "{listed}"
    );
    // The control: the same config with the server's program gone fails,
    // and says so.
    std::fs::remove_file(home.join(".local/share/mcp-time/bin/mcp-server-time")).unwrap();
    let out = shell(home, "hearth mcp list").output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && said.contains("time: FAILED"),
        "{said}"
    );
}
