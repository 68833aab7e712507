//! `hearth config check` and `hearth doctor` as a user runs them.

mod common;

use common::{Sandbox, assert_no_panic};

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
    let out = s
        .hearth()
        .args(["config", "check"])
        .arg(&path)
        .output()
        .unwrap();
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
    for name in ["cpu", "ram", "gpu", "config", "data", "model", "load"] {
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
