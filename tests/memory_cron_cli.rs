//! `hearth memory` and `hearth cron` as a user runs them, on the real
//! binary with its own data dir.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;

use common::{Sandbox, assert_no_panic};

fn run(s: &Sandbox, args: &[&str]) -> (bool, String, String) {
    let out = s.hearth().args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_no_panic(&stderr);
    (out.status.success(), stdout, stderr)
}

#[test]
fn memory_list_search_forget() {
    let s = Sandbox::new();
    {
        let store = hearth::memory::MemoryStore::open(&hearth::memory::MemoryStore::path_in(
            &s.path("data"),
        ))
        .unwrap();
        store
            .store(
                "telegram:42",
                "bike",
                "My bike is a red Brompton",
                hearth::memory::Category::Core,
            )
            .unwrap();
        store
            .store(
                "local",
                "wifi",
                "The guest wifi password is on the fridge",
                hearth::memory::Category::Custom,
            )
            .unwrap();
    }
    let (ok, out, _) = run(&s, &["memory", "list"]);
    assert!(ok && out.contains("bike") && out.contains("wifi"), "{out}");
    let (ok, out, _) = run(&s, &["memory", "list", "--category", "core"]);
    assert!(ok && out.contains("bike") && !out.contains("wifi"), "{out}");
    let (ok, _, err) = run(&s, &["memory", "list", "--category", "weird"]);
    assert!(!ok && err.contains("core, daily"), "{err}");
    let (ok, out, _) = run(&s, &["memory", "search", "red \"bike\" OR ("]);
    assert!(
        ok && out.starts_with("0.") && out.contains("telegram:42"),
        "{out}"
    );
    let (ok, _, err) = run(&s, &["memory", "forget", "bike", "--scope", "local"]);
    assert!(!ok && err.contains("no memory"), "{err}");
    let (ok, _, _) = run(&s, &["memory", "forget", "bike", "--scope", "telegram:42"]);
    assert!(ok);
    let (_, out, _) = run(&s, &["memory", "search", "bike"]);
    assert_eq!(out.trim(), "nothing matches");
}

#[test]
fn cron_add_list_remove() {
    let s = Sandbox::new();
    let (ok, out, err) = run(
        &s,
        &[
            "cron",
            "add",
            "--cron",
            "0 9 * * 1-5",
            "--tz",
            "Asia/Seoul",
            "--channel",
            "telegram",
            "--to",
            "555",
            "Stand-up summary",
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("#1") && out.contains("Asia/Seoul"), "{out}");
    let (ok, _, err) = run(
        &s,
        &[
            "cron",
            "add",
            "--every",
            "6h",
            "--channel",
            "telegram",
            "--to",
            "555",
            "--lms",
        ],
    );
    assert!(ok, "{err}");
    let (ok, out, _) = run(&s, &["cron", "list"]);
    assert!(
        ok && out.contains("Stand-up summary") && out.contains("LMS poll"),
        "{out}"
    );
    let (ok, _, err) = run(
        &s,
        &[
            "cron",
            "add",
            "--cron",
            "99 * * * *",
            "--channel",
            "t",
            "--to",
            "1",
            "x",
        ],
    );
    assert!(!ok && err.contains("cron expression"), "{err}");
    let (ok, _, err) = run(
        &s,
        &[
            "cron",
            "add",
            "--at",
            "2001-01-01 09:00",
            "--channel",
            "t",
            "--to",
            "1",
            "x",
        ],
    );
    assert!(!ok && err.contains("passed"), "{err}");
    let (ok, _, _) = run(&s, &["cron", "remove", "1"]);
    assert!(ok);
    let (ok, _, err) = run(&s, &["cron", "remove", "1"]);
    assert!(!ok && err.contains("no job #1"), "{err}");
    let (_, out, _) = run(&s, &["cron", "list"]);
    assert!(
        !out.contains("Stand-up") && out.contains("LMS poll"),
        "{out}"
    );
}

/// `hearth tools list` and `tools run` have the tools a conversation has:
/// memory and jobs beside the core ones, run by hand in the `local` scope.
#[test]
fn tools_list_and_run_have_the_memory_and_job_tools() {
    let s = Sandbox::new();
    let (ok, out, err) = run(&s, &["tools", "list"]);
    assert!(ok, "{err}");
    for tool in [
        "file_read",
        "memory_store",
        "memory_recall",
        "cron_add",
        "cron_list",
    ] {
        assert!(out.contains(tool), "{tool} is not listed: {out}");
    }
    let (ok, out, err) = run(
        &s,
        &[
            "tools",
            "run",
            "memory_store",
            r#"{"key": "kettle", "content": "The kettle descaler is under the sink"}"#,
        ],
    );
    assert!(ok, "{out}{err}");
    let (ok, out, _) = run(&s, &["memory", "list"]);
    assert!(
        ok && out.contains("kettle") && out.contains("local"),
        "{out}"
    );
    // The control: with memory off, the tool is not there to run.
    let config = s.config("[memory]\nenabled = false\n");
    let (ok, out, _) = run(&s, &["--config", config.to_str().unwrap(), "tools", "list"]);
    assert!(
        ok && !out.contains("memory_store") && out.contains("cron_add"),
        "{out}"
    );
    let (ok, _, err) = run(
        &s,
        &[
            "--config",
            config.to_str().unwrap(),
            "tools",
            "run",
            "memory_store",
            r#"{"key": "x", "content": "y"}"#,
        ],
    );
    assert!(!ok && err.contains("memory_store"), "{err}");
}
