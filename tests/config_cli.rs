//! `hearth config check` and `hearth doctor` as a user runs them.

mod common;

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
