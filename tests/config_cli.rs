//! `hearth config check` and `hearth doctor` as a user runs them.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;

use std::path::Path;
use std::process::Output;

use common::{Sandbox, assert_no_panic};

/// `hearth config check FILE`.
fn config_check(s: &Sandbox, path: &Path) -> Output {
    s.hearth()
        .args(["config", "check"])
        .arg(path)
        .output()
        .unwrap()
}

/// `hearth --config FILE ARGS…` with a PATH on which no bwrap is found.
fn without_bwrap(s: &Sandbox, path: &Path, args: &[&str]) -> Output {
    s.hearth()
        .arg("--config")
        .arg(path)
        .args(args)
        .env("PATH", "/nonexistent")
        .output()
        .unwrap()
}

#[test]
fn config_check_prints_resolved_config_with_secrets_masked() {
    let s = Sandbox::new();
    let path = s.config("[model]\ncontext_size = 2048\n[providers.openai]\napi_key = \"sk-file-secret-0123456789\"\n");
    let out = s
        .hearth()
        .args(["config", "check"])
        .arg(&path)
        .env("HEARTH_TELEGRAM_TOKEN", "123456:env-secret-ABCDEFGHIJ")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("context_size = 2048"), "{stdout}");
    assert!(
        stdout.contains("bot_token = \"12***(28 chars)\""),
        "{stdout}"
    );
    assert!(
        !stdout.contains("env-secret") && !stdout.contains("file-secret"),
        "{stdout}"
    );
    // The printed config is itself valid TOML.
    toml::from_str::<toml::Value>(&stdout).expect("valid TOML");
}

#[test]
fn config_check_rejects_a_bad_file() {
    let s = Sandbox::new();
    let path = s.config("[model]\nthreads = -1\n");
    let out = config_check(&s, &path);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("`model.threads`"), "{stderr}");
    assert_no_panic(&stderr);
}

#[test]
fn doctor_reports_every_line() {
    let s = Sandbox::new();
    common::model(common::SMOLLM2);
    let out = s.hearth().arg("doctor").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in [
        "cpu", "ram", "backend", "cpucode", "gpu", "config", "data", "tools", "sandbox", "model",
        "load",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.split_whitespace().nth(1) == Some(name)),
            "no `{name}` line in:\n{stdout}"
        );
    }
    let has_nvidia = std::process::Command::new("nvidia-smi")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_nvidia {
        assert!(stdout.contains("no GPU present"), "{stdout}");
    }
    assert!(
        stdout.contains("ok   sandbox bubblewrap: the workspace only; no network"),
        "{stdout}"
    );
}

#[test]
fn doctor_names_each_cloud_provider_and_its_role_without_contacting_it() {
    let s = Sandbox::new();
    common::model(common::SMOLLM2);
    let line = |config: &str| {
        let path = s.config(config);
        let out = s
            .hearth()
            .args(["--config", path.to_str().unwrap(), "doctor"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some("cloud"))
            .unwrap_or_else(|| panic!("no cloud line in:\n{stdout}"))
            .to_string()
    };
    assert!(line("").contains("none configured"));
    // Addresses nothing listens on: doctor must not contact them.
    let both = line(
        "[providers.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"gpt-x\"\n[providers.anthropic]\nbase_url = \"http://127.0.0.1:9\"\nmodel = \"claude-x\"\napi_key = \"sk-ant-test\"\n[routing]\nfallback = [\"anthropic\"]\n",
    );
    assert!(
        both.contains("openai `gpt-x`")
            && both.contains("unused: no [routing] entry names \"openai\""),
        "{both}"
    );
    assert!(
        both.contains("anthropic `claude-x` at http://127.0.0.1:9 with an API key, a fallback"),
        "{both}"
    );
    assert!(
        !both.contains("sk-ant-test"),
        "the key is never printed: {both}"
    );
}

#[test]
fn doctor_says_why_no_sandbox_runs_and_how_to_fix_it() {
    let s = Sandbox::new();
    // bubblewrap forced, and not to be found: the shell is not offered.
    let path = s.config(
        "[agent]
sandbox = \"bubblewrap\"\n",
    );
    let out = without_bwrap(&s, &path, &["doctor"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    let line = stdout
        .lines()
        .find(|l| l.contains(" sandbox "))
        .unwrap_or_else(|| panic!("no sandbox line: {stdout}"));
    assert!(line.starts_with("FAIL"), "{line}");
    assert!(
        line.contains("not installed") && line.contains("apt-get install bubblewrap"),
        "{line}"
    );
    let listed = without_bwrap(&s, &path, &["tools", "list"]);
    let tools = String::from_utf8_lossy(&listed.stdout);
    assert!(
        tools.contains("file_read") && !tools.contains("shell"),
        "{tools}"
    );
}

#[test]
fn secrets_inside_urls_and_type_errors_are_never_printed() {
    let s = Sandbox::new();
    let path = s.config(
        "[lms]\n[[lms.sources]]\nkind = \"ical\"\nname = \"cal\"\nurl = \"https://ada:hunter22@cal.example.edu/feed.ics?authtoken=tok-0123456789abcdef&course=7\"\n",
    );
    let out = config_check(&s, &path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("cal.example.edu/feed.ics") && stdout.contains("course=7"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("tok-0123456789abcdef") && !stdout.contains("hunter22"),
        "{stdout}"
    );

    let path = s.config("[channels.telegram]\nbot_token = 7712345678\n");
    let out = config_check(&s, &path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("bot_token") && !stderr.contains("7712345678"),
        "{stderr}"
    );
}

#[test]
fn secrets_inside_provider_urls_are_masked_by_config_check_and_doctor() {
    let s = Sandbox::new();
    common::model(common::SMOLLM2);
    let path = s.config(
        "[providers.openai]\nbase_url = \"http://ada:hunter22pass@127.0.0.1:9/v1?api_key=sk-query-0123456789&region=eu\"\nmodel = \"gpt-x\"\n[providers.anthropic]\nbase_url = \"http://bob:s3cr3t-anth@127.0.0.1:9\"\nmodel = \"claude-x\"\n[routing]\nfallback = [\"openai\", \"anthropic\"]\n",
    );
    let checked = config_check(&s, &path);
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let doctor = s
        .hearth()
        .args(["--config", path.to_str().unwrap(), "doctor"])
        .output()
        .unwrap();
    for (what, out) in [("config check", &checked), ("doctor", &doctor)] {
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for secret in ["hunter22pass", "sk-query-0123456789", "s3cr3t-anth"] {
            assert!(!text.contains(secret), "{what} printed {secret}: {text}");
        }
        // Positive control: the rest of the address is there.
        assert!(text.contains("127.0.0.1:9"), "{what}: {text}");
    }
    let stdout = String::from_utf8_lossy(&checked.stdout);
    assert!(stdout.contains("region=eu"), "{stdout}");
}

/// Runs `command` for at most 20 s; `None` when it was still running.
fn within_20s(mut command: std::process::Command) -> Option<Output> {
    use std::process::Stdio;
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Some(child.wait_with_output().unwrap())
}

#[test]
fn a_fifo_as_the_config_is_refused_at_once_by_every_way_of_naming_it() {
    let s = Sandbox::new();
    let fifo = s.path("config.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a path in our own temp dir.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let default = s.path(".config/hearth/config.toml");
    std::fs::create_dir_all(default.parent().unwrap()).unwrap();
    let d = std::ffi::CString::new(default.to_str().unwrap()).unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { libc::mkfifo(d.as_ptr(), 0o600) }, 0);
    let mut by_flag = s.hearth_process();
    by_flag.args(["--config", fifo.to_str().unwrap(), "inbox"]);
    let mut by_env = s.hearth_process();
    by_env.env("HEARTH_CONFIG", &fifo).args(["inbox"]);
    let mut by_default = s.hearth_process();
    by_default.args(["inbox"]);
    let mut checked = s.hearth_process();
    checked.args(["config", "check", fifo.to_str().unwrap()]);
    for (what, command) in [
        ("--config", by_flag),
        ("HEARTH_CONFIG", by_env),
        ("the default path", by_default),
        ("config check", checked),
    ] {
        let out = within_20s(command).unwrap_or_else(|| panic!("{what}: hearth hung on a FIFO"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{what}: {stderr}");
        assert!(stderr.contains("not a regular file"), "{what}: {stderr}");
        assert_no_panic(&stderr);
    }
    // Positive control: the same command with a plain file runs.
    std::fs::remove_file(&default).unwrap();
    let path = s.config("[log]\nlevel = \"warn\"\n");
    let mut plain = s.hearth_process();
    plain.args(["--config", path.to_str().unwrap(), "inbox"]);
    let out = within_20s(plain).expect("a plain config is read");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_old_workspace_inside_the_data_dir_is_moved_out_once() {
    let s = Sandbox::new();
    let old = s.path("data/workspace");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::write(old.join("notes.txt"), "kept").unwrap();
    let read = || {
        s.hearth()
            .args(["tools", "run", "file_read", r#"{"path": "notes.txt"}"#])
            .output()
            .unwrap()
    };
    let out = read();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "kept\n");
    assert!(!old.exists(), "the old workspace is gone from the data dir");
    assert!(s.path("hearth-workspace/notes.txt").is_file());
    // A second start finds the new one and moves nothing.
    std::fs::create_dir_all(&old).unwrap();
    let out = read();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "kept\n");
    assert!(old.is_dir(), "nothing was moved over the workspace in use");
}

#[test]
fn doctor_names_the_fix_for_a_missing_model() {
    let s = Sandbox::new();
    let out = s
        .hearth()
        .arg("doctor")
        .env("HEARTH_MODEL", "gone.gguf")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        stdout.contains("FAIL model") && stdout.contains("models/fetch"),
        "{stdout}"
    );
}

#[test]
fn version() {
    let out = Sandbox::new().hearth().arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("hearth {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn tools_run_under_the_policy_with_exit_codes() {
    let s = Sandbox::new();
    let run = |args: &[&str]| {
        s.hearth()
            .args(["tools", "run"])
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["file_write", r#"{"path": "a.txt", "content": "hello"}"#]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&["file_read", r#"{"path": "a.txt"}"#]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n");
    assert!(
        s.path("hearth-workspace/a.txt").is_file(),
        "the default workspace is beside the data dir"
    );
    assert!(
        !s.path("data/workspace").exists(),
        "nothing of the workspace is inside the data dir"
    );
    for (tool, args) in [
        ("shell", r#"{"command": "rm -rf /"}"#),
        ("file_read", r#"{"path": "../../x"}"#),
        ("nope", "{}"),
    ] {
        let out = run(&[tool, args]);
        assert!(!out.status.success(), "{tool} {args}");
        assert_no_panic(&String::from_utf8_lossy(&out.stderr));
        assert!(!out.stderr.is_empty());
    }
}

#[test]
fn config_check_fails_on_a_model_file_that_is_not_there() {
    let s = Sandbox::new();
    let path = s
        .config("[model]\npath = \"/nonexistent/missing.gguf\"\n[generation]\ntemperature = 0.2\n");
    let out = config_check(&s, &path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("model.path") && stderr.contains("missing.gguf"),
        "{stderr}"
    );
    assert!(!stderr.contains("config ok"), "{stderr}");
    // Positive control: the test model, by name.
    common::model(common::SMOLLM2);
    let path = s.config(&format!("[model]\npath = \"{}\"\n", common::SMOLLM2));
    let out = config_check(&s, &path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn config_check_names_every_problem_at_once() {
    let s = Sandbox::new();
    let path = s.config(
        "[model]\ncontxt_size = 1\n[generaton]\nx = 1\n[scheduler]\nmax_jobs = 0\n[agent]\nsandbox = \"chroot\"\n",
    );
    let out = config_check(&s, &path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    for key in [
        "model.contxt_size",
        "generaton",
        "scheduler.max_jobs",
        "agent.sandbox",
    ] {
        assert!(stderr.contains(key), "{key} not named: {stderr}");
    }
}
