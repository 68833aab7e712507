//! No message lost or answered twice, whatever stops the daemon: a real
//! `hearth daemon` process against the fake Telegram Bot API and a slow
//! OpenAI-compatible model, killed with SIGKILL at the worst moments,
//! stopped with SIGTERM while replies run, cut off from Telegram for 30 s,
//! and copied mid-write as a power cut would leave its files.
//!
//! "Answered" is read from what the chat shows (the fake's stored
//! messages, edits and deletions applied), not from the daemon's word.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;
use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Sandbox, assert_no_panic};
use support::daemon_process::{Daemon, answers, config, send, until};
use support::slow_model::{SlowModel, reply_to};
use support::telegram_fake::{FakeTelegram, Hold};

const LATE: &str = "Sorry for the delay: hearth restarted";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_one_reply_runs_and_one_waits_both_are_answered_once_after_restart() {
    let fake = FakeTelegram::start().await;
    let model = SlowModel::start(10, Duration::from_millis(300)).await;
    let sandbox = Sandbox::new();
    let config = config(&sandbox, &fake, &model, "", "");
    let daemon = Daemon::start(&sandbox, &config);
    // The second queues behind the first (no interruption): received, not started.
    let second = send(&fake, 501, "first question");
    send(&fake, 501, "second question");
    until("both updates confirmed", Duration::from_secs(20), || {
        fake.confirmed_offset() > second + 1
    })
    .await;
    until("the first reply underway", Duration::from_secs(20), || {
        model.asked("first question") == 1
    })
    .await;
    let log = daemon.kill9();
    assert_eq!(answers(&fake, 501, "first question"), 0, "killed mid-reply");

    let daemon = Daemon::start(&sandbox, &config);
    until("both answered", Duration::from_secs(30), || {
        answers(&fake, 501, "first question") == 1 && answers(&fake, 501, "second question") == 1
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let chat = fake.chat(501);
    assert_eq!(chat.len(), 2, "exactly two messages: {chat:?}");
    assert!(
        chat[0].contains("first question") && chat[1].contains("second question"),
        "in order: {chat:?}"
    );
    assert!(
        chat.iter().all(|m| m.contains(LATE)),
        "each says it is late: {chat:?}"
    );
    let log = log + daemon.term().1.as_str();
    assert_no_panic(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_with_a_half_streamed_draft_the_draft_goes_and_one_reply_stays() {
    let fake = FakeTelegram::start().await;
    let model = SlowModel::start(12, Duration::from_millis(300)).await;
    let sandbox = Sandbox::new();
    let config = config(&sandbox, &fake, &model, "stream_mode = \"partial\"", "");
    let daemon = Daemon::start(&sandbox, &config);
    send(&fake, 502, "stream this answer");
    fake.wait_for("editMessageText", 1, Duration::from_secs(20))
        .await;
    let draft = fake.chat(502);
    assert_eq!(draft.len(), 1, "one draft: {draft:?}");
    let full = reply_to("stream this answer");
    assert!(draft[0].len() < full.len(), "half written: {draft:?}");
    let log = daemon.kill9();

    let daemon = Daemon::start(&sandbox, &config);
    until("the final answer", Duration::from_secs(30), || {
        fake.chat(502)
            .iter()
            .any(|m| m.contains(&full) && m.contains(LATE))
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let chat = fake.chat(502);
    assert_eq!(
        chat.len(),
        1,
        "the half draft was removed, one reply stays: {chat:?}"
    );
    assert_eq!(
        model.asked("stream this answer"),
        2,
        "asked again: the draft died"
    );
    // The question is in the prompt once, however often it was started.
    assert!(chat[0].ends_with(&full), "{chat:?}");
    assert_no_panic(&(log + daemon.term().1.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_between_two_parts_only_the_missing_part_follows_and_the_model_is_not_asked_again() {
    let fake = FakeTelegram::start().await;
    let model = SlowModel::start(4, Duration::from_millis(50)).await;
    let sandbox = Sandbox::new();
    let config = config(&sandbox, &fake, &model, "", "");
    // The second part (its paragraphs 8+) is held before Telegram takes it.
    fake.hold(Hold {
        chat_id: 503,
        containing: "Paragraph 15.".into(),
        applied: false,
    });
    let daemon = Daemon::start(&sandbox, &config);
    send(&fake, 503, "a LONG answer please");
    until("the second part held", Duration::from_secs(30), || {
        fake.holding()
    })
    .await;
    assert_eq!(fake.chat(503).len(), 1, "the first part arrived");
    // Killed once the first part is recorded: a kill between its arrival
    // and its record sends it again, the one duplicate the inbox allows
    // (`killed_after_telegram_took_a_reply_but_before_it_answered_…`). A
    // loaded machine once put the kill in that window here.
    until("the first part recorded", Duration::from_secs(30), || {
        parts_recorded(&sandbox) >= 1
    })
    .await;
    let log = daemon.kill9();

    let daemon = Daemon::start(&sandbox, &config);
    until("the second part", Duration::from_secs(30), || {
        fake.chat(503).len() >= 2
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let chat = fake.chat(503);
    assert_eq!(chat.len(), 2, "each part once: {chat:?}");
    assert!(chat[0].contains("Paragraph 0.") && !chat[0].contains("Paragraph 15."));
    assert!(chat[1].contains("Paragraph 15.") && !chat[1].contains("Paragraph 0."));
    assert_eq!(
        model.asked("a LONG answer"),
        1,
        "the recorded reply was sent on, not made again"
    );
    assert_no_panic(&(log + daemon.term().1.as_str()));
}

/// The one window no record can close: Telegram took the message and the
/// daemon died before its answer came back. The part is sent again once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_telegram_took_a_reply_but_before_it_answered_the_reply_comes_twice_at_most() {
    let fake = FakeTelegram::start().await;
    let model = SlowModel::start(2, Duration::from_millis(50)).await;
    let sandbox = Sandbox::new();
    let config = config(&sandbox, &fake, &model, "", "");
    fake.hold(Hold {
        chat_id: 504,
        containing: "Reply to: sent but not recorded".into(),
        applied: true,
    });
    let daemon = Daemon::start(&sandbox, &config);
    send(&fake, 504, "sent but not recorded");
    until(
        "the reply held after delivery",
        Duration::from_secs(30),
        || fake.holding(),
    )
    .await;
    let log = daemon.kill9();
    send(&fake, 504, "and a later question");

    let daemon = Daemon::start(&sandbox, &config);
    until(
        "the later question answered",
        Duration::from_secs(30),
        || answers(&fake, 504, "and a later question") == 1,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        answers(&fake, 504, "sent but not recorded"),
        2,
        "{:?}",
        fake.chat(504)
    );
    assert_eq!(
        model.asked("sent but not recorded"),
        1,
        "sent again from the record"
    );
    assert_eq!(fake.chat(504).len(), 3);
    assert_no_panic(&(log + daemon.term().1.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_past_the_grace_leaves_three_running_replies_for_the_next_start() {
    let fake = FakeTelegram::start().await;
    let model = SlowModel::start(10, Duration::from_millis(800)).await;
    let sandbox = Sandbox::new();
    let config = config(
        &sandbox,
        &fake,
        &model,
        "",
        "[daemon]\nshutdown_grace_secs = 1\n",
    );
    let daemon = Daemon::start(&sandbox, &config);
    for user in [511, 512, 513] {
        send(&fake, user, &format!("slow question from {user}"));
    }
    until("three replies running", Duration::from_secs(20), || {
        model.requests() == 3
    })
    .await;
    let started = Instant::now();
    let (code, log) = daemon.term();
    assert_eq!(code, Some(0), "{log}");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "the grace is 1 s"
    );
    for user in [511, 512, 513] {
        assert_eq!(fake.chat(user).len(), 0, "not answered before the stop");
    }

    let daemon = Daemon::start(&sandbox, &config);
    until("all three answered", Duration::from_secs(40), || {
        [511, 512, 513]
            .iter()
            .all(|u| answers(&fake, *u, &format!("slow question from {u}")) == 1)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    for user in [511, 512, 513] {
        assert_eq!(fake.chat(user).len(), 1, "{:?}", fake.chat(user));
    }
    assert_no_panic(&(log + daemon.term().1.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_30_s_outage_and_a_blocked_chat_the_others_answered_once_the_blocked_one_failed() {
    let fake = FakeTelegram::start().await;
    let model = SlowModel::start(6, Duration::from_millis(300)).await;
    let sandbox = Sandbox::new();
    let config = config(&sandbox, &fake, &model, "", "");
    fake.block_chat(523);
    let daemon = Daemon::start(&sandbox, &config);
    // A reply is being written when Telegram goes away.
    send(&fake, 521, "before the outage");
    until("the reply underway", Duration::from_secs(20), || {
        model.asked("before the outage") == 1
    })
    .await;
    fake.set_down(true);
    let outage = Instant::now();
    for (user, text) in [
        (521, "during the outage"),
        (522, "also during it"),
        (523, "from the blocked chat"),
    ] {
        send(&fake, user, text);
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    tokio::time::sleep(Duration::from_secs(30).saturating_sub(outage.elapsed())).await;
    fake.set_down(false);
    until("the three answers", Duration::from_secs(150), || {
        answers(&fake, 521, "before the outage") == 1
            && answers(&fake, 521, "during the outage") == 1
            && answers(&fake, 522, "also during it") == 1
    })
    .await;
    until("the blocked chat tried", Duration::from_secs(30), || {
        !fake
            .calls_of("sendMessage")
            .iter()
            .all(|c| c.i64("chat_id") != Some(523))
    })
    .await;
    // Nothing retries forever: a refusal is final.
    tokio::time::sleep(Duration::from_secs(8)).await;
    let to_blocked = fake
        .calls_of("sendMessage")
        .iter()
        .filter(|c| c.i64("chat_id") == Some(523))
        .count();
    assert_eq!(to_blocked, 1, "one try, no retries after a 403");
    assert_eq!(fake.chat(521).len(), 2, "{:?}", fake.chat(521));
    assert_eq!(fake.chat(522).len(), 1, "{:?}", fake.chat(522));

    // Visible to the owner while the daemon runs.
    let listed = sandbox
        .hearth()
        .args(["--config", config.to_str().unwrap(), "inbox"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(listed.contains("1 failed"), "{listed}");
    let failed: Vec<&str> = listed.lines().filter(|l| l.contains("telegram/")).collect();
    assert_eq!(failed.len(), 1, "{listed}");
    assert!(
        failed[0].contains("from the blocked chat") && failed[0].contains("blocked"),
        "{listed}"
    );
    let doctor = sandbox
        .hearth()
        .args(["--config", config.to_str().unwrap(), "doctor"])
        .output()
        .unwrap();
    let doctor = String::from_utf8_lossy(&doctor.stdout).to_string();
    assert!(
        doctor.contains("WARN inbox") && doctor.contains("1 failed"),
        "{doctor}"
    );
    let log = daemon.term().1;
    assert!(log.contains("bot was blocked by the user"), "{log}");
    assert_no_panic(&log);
}

/// A power cut leaves the files as they were at one instant, minus what
/// the kernel had not written. Copies of the data dir taken while the
/// daemon writes (files copied one by one, as `cp -r` does) must always
/// open as a sound store, or be refused plainly: never used damaged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_of_the_data_dir_taken_mid_write_start_sound_or_are_refused_never_used_damaged() {
    let fake = FakeTelegram::start().await;
    let model = SlowModel::start(1, Duration::from_millis(1)).await;
    let sandbox = Sandbox::new();
    let config = config(&sandbox, &fake, &model, "", "");
    let daemon = Daemon::start(&sandbox, &config);
    let data = sandbox.path("data");
    let mut copies = Vec::new();
    for round in 0..6 {
        for n in 0..15 {
            send(&fake, 530 + n, &format!("round {round} message {n}"));
        }
        tokio::time::sleep(Duration::from_millis(150 + 40 * round)).await;
        let copy = sandbox.path(&format!("copy{round}"));
        common::copy_dir(&data, &copy);
        copies.push(copy);
    }
    let log = daemon.term().1;
    assert_no_panic(&log);
    let mut started = 0;
    for copy in &copies {
        let check = Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args(["--config", config.to_str().unwrap(), "inbox", "--all"])
            .env("HOME", sandbox.path("."))
            .env("HEARTH_DATA_DIR", copy)
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&check.stdout).to_string()
            + String::from_utf8_lossy(&check.stderr).as_ref();
        assert_no_panic(&out);
        let db = copy.join("history.sqlite3");
        let sound = rusqlite::Connection::open(&db)
            .and_then(|c| c.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0)))
            .map(|r| r == "ok")
            .unwrap_or(false);
        let config = sandbox.path("loopback.toml");
        std::fs::write(
            &config,
            "[model]\npath = \"/nonexistent/none.gguf\"\n[daemon]\nloopback_channel = true\n",
        )
        .unwrap();
        let daemon = Command::new(env!("CARGO_BIN_EXE_hearth"))
            .args(["--config", config.to_str().unwrap(), "daemon"])
            .env("HOME", sandbox.path("."))
            .env("HEARTH_DATA_DIR", copy)
            .env_remove("RUST_LOG")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let daemon = Daemon::watch(daemon);
        if sound {
            assert!(check.status.success(), "{out}");
            daemon.wait_log("listening on", Duration::from_secs(30));
            let (code, log) = daemon.term();
            assert_eq!(code, Some(0), "{log}");
            started += 1;
        } else {
            assert!(!check.status.success() && out.contains("damaged"), "{out}");
            let (code, log) = daemon.term();
            assert!(code != Some(0) && log.contains("damaged"), "{log}");
        }
    }
    assert!(started > 0, "no copy was sound");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_removed_from_allowed_users_while_down_is_not_answered_after_restart() {
    let fake = FakeTelegram::start().await;
    let model = SlowModel::start(10, Duration::from_millis(300)).await;
    let sandbox = Sandbox::new();
    let both = config(&sandbox, &fake, &model, "", "");
    let text = std::fs::read_to_string(&both).unwrap();
    std::fs::write(
        &both,
        text.replace(
            r#"allowed_users = ["*"]"#,
            r#"allowed_users = ["601", "602"]"#,
        ),
    )
    .unwrap();
    let daemon = Daemon::start(&sandbox, &both);
    send(&fake, 601, "question of the one who stays");
    let last = send(&fake, 602, "question of the one who is removed");
    until("both updates confirmed", Duration::from_secs(20), || {
        fake.confirmed_offset() > last
    })
    .await;
    let log = daemon.kill9();
    assert_eq!(answers(&fake, 602, "question of the one who is removed"), 0);
    let asked_before = model.asked("question of the one who is removed");

    // While hearth is down, the owner removes 602.
    let text = std::fs::read_to_string(&both).unwrap();
    std::fs::write(
        &both,
        text.replace(
            r#"allowed_users = ["601", "602"]"#,
            r#"allowed_users = ["601"]"#,
        ),
    )
    .unwrap();
    let daemon = Daemon::start(&sandbox, &both);
    until(
        "the one who stays is answered",
        Duration::from_secs(30),
        || answers(&fake, 601, "question of the one who stays") == 1,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        fake.chat(602).is_empty(),
        "the removed sender got: {:?}",
        fake.chat(602)
    );
    assert_eq!(
        model.asked("question of the one who is removed"),
        asked_before,
        "nor was the model asked again"
    );
    daemon.wait_log("its sender is no longer allowed", Duration::from_secs(5));
    let log = log + daemon.term().1.as_str();
    assert_no_panic(&log);
}

/// `hearth ARGS…` on `config` with `stdin`, run to its end in a thread;
/// killed after 60 s (a start that should have been refused and was not).
async fn run_beside(
    sandbox: &Sandbox,
    config: &Path,
    args: &[&str],
    stdin: &str,
) -> std::process::Output {
    use std::io::Write;
    let mut child = sandbox
        .hearth_process()
        .arg("--config")
        .arg(config)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    let pid = child.id() as i32;
    let watchdog = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(60)).await;
        // SAFETY: a signal to our own child, which may have ended.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    });
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    watchdog.abort();
    out
}

/// Two daemons on one data folder would both take up the inbox: the
/// second used to read the first one's in-flight messages as leftovers of
/// a crash and answer them again. Now it refuses at once and names the
/// first; `hearth chat` beside the running daemon works and leaves its
/// messages alone; every Telegram message is answered once, and not as
/// late. The control: once the first daemon stops, a daemon starts there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_daemon_on_one_data_folder_is_refused_and_nothing_is_answered_twice() {
    let fake = FakeTelegram::start().await;
    let model = SlowModel::start(10, Duration::from_millis(300)).await;
    let sandbox = Sandbox::new();
    let config = config(&sandbox, &fake, &model, "", "");
    let first = Daemon::start(&sandbox, &config);
    let questions = ["one in flight", "two waiting", "three waiting"];
    for q in questions {
        send(&fake, 601, q);
    }
    until("the first reply underway", Duration::from_secs(20), || {
        model.asked("one in flight") == 1
    })
    .await;

    let started = Instant::now();
    let second = run_beside(&sandbox, &config, &["daemon"], "").await;
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(
        stderr.contains("another hearth daemon is using the data folder")
            && stderr.contains(&format!("pid {}", first.child.id()))
            && stderr.contains("[data] dir"),
        "{stderr}"
    );
    assert_no_panic(&stderr);

    // The terminal beside the daemon: answered, and the daemon's messages
    // are left to it.
    let chat = run_beside(&sandbox, &config, &["chat"], "hello from the terminal\n").await;
    let said = String::from_utf8_lossy(&chat.stdout);
    assert!(
        chat.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&chat.stderr)
    );
    assert!(
        said.contains(&reply_to("hello from the terminal")),
        "{said}"
    );

    until("every question answered", Duration::from_secs(60), || {
        questions.iter().all(|q| answers(&fake, 601, q) >= 1)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    for q in questions {
        assert_eq!(answers(&fake, 601, q), 1, "{q}: {:?}", fake.chat(601));
        assert_eq!(model.asked(q), 1, "{q} was asked twice");
    }
    assert!(
        fake.chat(601).iter().all(|m| !m.contains(LATE)),
        "nothing restarted: {:?}",
        fake.chat(601)
    );
    let (code, log) = first.term();
    assert_eq!(code, Some(0), "{log}");
    let again = Daemon::start(&sandbox, &config);
    assert_no_panic(&(log + again.term().1.as_str()));
}

/// A gateway port that another program holds stops the start within
/// seconds, with the fix; the control is the same config on a free port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_port_stops_the_start_with_the_fix() {
    let fake = FakeTelegram::start().await;
    let model = SlowModel::start(1, Duration::from_millis(10)).await;
    let sandbox = Sandbox::new();
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    let gateway = |port: u16| {
        format!(
            "[channels.gateway]\nlisten = \"127.0.0.1:{port}\"\nallow_loopback_without_token = true\n"
        )
    };
    let taken = config(&sandbox, &fake, &model, "", &gateway(port));
    let started = Instant::now();
    let out = run_beside(&sandbox, &taken, &["daemon"], "").await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(
        stderr.contains(&format!("cannot listen on 127.0.0.1:{port}"))
            && stderr.contains("[channels.gateway] listen"),
        "{stderr}"
    );
    assert!(!stderr.contains("listening on"), "{stderr}");
    assert_no_panic(&stderr);
    // Positive control: a free port starts.
    drop(holder);
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let config = config(&sandbox, &fake, &model, "", &gateway(port));
    let daemon = Daemon::start(&sandbox, &config);
    assert_no_panic(&daemon.term().1);
}

/// The reply parts the daemon's inbox has committed as delivered.
fn parts_recorded(sandbox: &Sandbox) -> i64 {
    let path = sandbox.path("data").join("history.sqlite3");
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    rusqlite::Connection::open_with_flags(path, flags)
        .and_then(|c| c.query_row("SELECT count(*) FROM inbox_parts", [], |r| r.get(0)))
        .unwrap_or(0)
}
