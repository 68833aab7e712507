//! A full disk under a running daemon: its data folder on a 16 MiB tmpfs
//! (mounted in a user and mount namespace of the daemon's own, so no root
//! is needed and nothing outlives it), filled to the last byte while
//! Telegram messages arrive, then freed.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;
use crate::support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Sandbox, assert_no_panic};
use support::daemon_process::{Daemon, answers, config, send, until};
use support::slow_model::SlowModel;
use support::telegram_fake::FakeTelegram;

/// `hearth daemon` with its data folder on a tmpfs of `mib` MiB that only
/// it sees; the folder is reached from here through `/proc/PID/root`.
fn start_on_tmpfs(sandbox: &Sandbox, config: &Path, mib: u32) -> (Daemon, PathBuf) {
    let data = sandbox.path("data");
    std::fs::create_dir_all(&data).unwrap();
    let hearth = sandbox.hearth_process();
    let mut cmd = Command::new("unshare");
    cmd.args(["--user", "--map-root-user", "--mount", "sh", "-c"])
        .arg(format!(
            "mount -t tmpfs -o size={mib}m,mode=0700 hearth-data \"$0\" && exec \"$@\""
        ))
        .arg(&data)
        .arg(hearth.get_program())
        .args(["--config", config.to_str().unwrap(), "daemon"])
        .env_clear()
        .envs(hearth.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let daemon = Daemon::watch(cmd.spawn().unwrap());
    daemon.wait_log("listening on", Duration::from_secs(60));
    let seen = PathBuf::from(format!("/proc/{}/root", daemon.child.id()))
        .join(data.strip_prefix("/").unwrap());
    (daemon, seen)
}

/// Writes `filler` until the disk refuses a byte more; how many it took.
fn fill(filler: &Path) -> u64 {
    let mut f = std::fs::File::create(filler).unwrap();
    let block = vec![0x5a_u8; 64 << 10];
    let mut written = 0u64;
    loop {
        match f.write(&block) {
            Ok(0) => break,
            Ok(n) => written += n as u64,
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
                break;
            }
        }
    }
    // The last partial block, byte by byte.
    while f.write(&[0x5a]).is_ok_and(|n| n == 1) {
        written += 1;
    }
    let _ = f.sync_all();
    written
}

/// SQLite's verdict on a copy of the database `name` in `data` (taken
/// with its log while the daemon is idle: SQLite resolves `/proc/PID/root`
/// to this namespace's `/`, so the file cannot be opened where it is).
fn integrity(data: &Path, name: &str, copy: &Path) -> String {
    std::fs::create_dir_all(copy).unwrap();
    for suffix in ["", "-wal"] {
        let from = data.join(format!("{name}{suffix}"));
        if from.exists() {
            std::fs::copy(&from, copy.join(format!("{name}{suffix}"))).unwrap();
        }
    }
    rusqlite::Connection::open(copy.join(name))
        .and_then(|c| c.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0)))
        .unwrap_or_else(|e| format!("cannot check: {e}"))
}

fn user_turns(copy: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(copy.join("history.sqlite3")).unwrap();
    conn.prepare("SELECT content FROM messages WHERE role = 'user' ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn notices(fake: &FakeTelegram, chat: i64) -> usize {
    fake.chat(chat)
        .iter()
        .filter(|m| m.contains("cannot store your message"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_is_told_damages_nothing_and_the_message_is_answered_once_space_returns() {
    let fake = FakeTelegram::start().await;
    let model = SlowModel::start(2, Duration::from_millis(20)).await;
    let sandbox = Sandbox::new();
    let config = config(&sandbox, &fake, &model, "", "");
    let (daemon, data) = start_on_tmpfs(&sandbox, &config, 16);

    // Positive control: with room, a message is answered.
    send(&fake, 601, "before the disk filled");
    until("the first answer", Duration::from_secs(30), || {
        answers(&fake, 601, "before the disk filled") == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Full: the sender is told once, and nothing is answered meanwhile.
    let filler = data.join("filler");
    let took = fill(&filler);
    assert!(took > 1 << 20, "the tmpfs had room to fill: {took}");
    send(&fake, 602, "while the disk is full");
    until("the notice", Duration::from_secs(30), || {
        notices(&fake, 602) == 1
    })
    .await;
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert_eq!(notices(&fake, 602), 1, "told once: {:?}", fake.chat(602));
    assert_eq!(
        answers(&fake, 602, "while the disk is full"),
        0,
        "not answered while it cannot be kept: {:?}\n{}",
        fake.chat(602),
        daemon.log()
    );

    // Space again: answered once, without a restart, and later messages too.
    std::fs::remove_file(&filler).unwrap();
    until(
        "the answer once space returned",
        Duration::from_secs(60),
        || answers(&fake, 602, "while the disk is full") == 1,
    )
    .await;
    send(&fake, 603, "after space returned");
    until("a later message answered", Duration::from_secs(30), || {
        answers(&fake, 603, "after space returned") == 1
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(answers(&fake, 602, "while the disk is full"), 1);
    assert_eq!(answers(&fake, 601, "before the disk filled"), 1);

    // No store damaged, every turn kept.
    let copy = sandbox.path("copy");
    for db in [
        "history.sqlite3",
        "memory.sqlite3",
        "scheduler.sqlite3",
        "lms.sqlite3",
    ] {
        if data.join(db).exists() {
            assert_eq!(integrity(&data, db, &copy), "ok", "{db}");
        }
    }
    let turns = user_turns(&copy);
    for asked in [
        "before the disk filled",
        "while the disk is full",
        "after space returned",
    ] {
        assert_eq!(
            turns.iter().filter(|t| t.contains(asked)).count(),
            1,
            "{asked}: {turns:?}"
        );
    }
    let log = daemon.term().1;
    assert_no_panic(&log);
    assert!(log.contains("could not be recorded; trying again"), "{log}");
}

fn inbox_states(copy: &Path) -> Vec<(String, String)> {
    let conn = rusqlite::Connection::open(copy.join("history.sqlite3")).unwrap();
    conn.prepare("SELECT message, state FROM inbox ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The disk fills after a message arrived, while its reply is being
/// made. The reply is not sent until it can be recorded (the sender is
/// told once that it waits), then it is sent once and its record ends
/// `answered`: a restart would not answer it again. Before, the reply went
/// out unrecorded and its record stayed open, so a restart answered twice.
/// The control: a message with room is answered and recorded alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_that_fills_while_a_reply_is_made_sends_it_once_and_records_it() {
    let fake = FakeTelegram::start().await;
    // Three seconds a reply: time to fill the disk after its arrival.
    let model = SlowModel::start(30, Duration::from_millis(100)).await;
    let sandbox = Sandbox::new();
    let config = config(&sandbox, &fake, &model, "stream_mode = \"off\"\n", "");
    let (daemon, data) = start_on_tmpfs(&sandbox, &config, 16);

    send(&fake, 611, "with room to spare");
    until("the first answer", Duration::from_secs(30), || {
        answers(&fake, 611, "with room to spare") == 1
    })
    .await;

    send(&fake, 612, "the disk fills meanwhile");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let filler = data.join("filler");
    let took = fill(&filler);
    assert!(took > 1 << 20, "the tmpfs had room to fill: {took}");
    let told = || {
        fake.chat(612)
            .iter()
            .filter(|m| m.contains("Your answer is ready"))
            .count()
    };
    until(
        "the sender told their reply waits",
        Duration::from_secs(30),
        || told() == 1,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        answers(&fake, 612, "the disk fills meanwhile"),
        0,
        "not sent while it cannot be recorded: {:?}\n{}",
        fake.chat(612),
        daemon.log()
    );
    assert_eq!(told(), 1, "told once: {:?}", fake.chat(612));

    std::fs::remove_file(&filler).unwrap();
    until(
        "the reply once space returned",
        Duration::from_secs(60),
        || answers(&fake, 612, "the disk fills meanwhile") == 1,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(answers(&fake, 612, "the disk fills meanwhile"), 1);

    let copy = sandbox.path("copy");
    assert_eq!(integrity(&data, "history.sqlite3", &copy), "ok");
    let states = inbox_states(&copy);
    for asked in ["with room to spare", "the disk fills meanwhile"] {
        let state: Vec<&str> = states
            .iter()
            .filter(|(m, _)| m.contains(asked))
            .map(|(_, s)| s.as_str())
            .collect();
        assert_eq!(state, ["answered"], "{asked}: {states:?}");
    }
    let log = daemon.term().1;
    assert_no_panic(&log);
}
