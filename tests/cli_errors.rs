//! Bad input gives one line naming the cause and the fix, a non-zero exit,
//! and never a panic.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;

use common::{Sandbox, assert_no_panic};

/// Runs `hearth ask hi` and returns the (single) stderr line.
fn failing_ask(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.args(["ask", "hi"]).output().expect("run hearth");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "expected failure, got success: {stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "nothing on stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_no_panic(&stderr);
    let lines: Vec<_> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    lines[0].to_string()
}

#[test]
fn missing_model_file() {
    let s = Sandbox::new();
    let line = failing_ask(s.hearth().env("HEARTH_MODEL", "absent-model.gguf"));
    assert!(line.contains("`absent-model.gguf` not found"), "{line}");
    assert!(line.contains("fix: run `models/fetch`"), "{line}");
}

#[test]
fn truncated_model_file() {
    let s = Sandbox::new();
    let full = std::fs::read(common::model(common::SMOLLM2)).unwrap();
    // A copy cut in the middle of its tensor data: the header reads fine,
    // the tensors do not fit. llama.cpp must refuse it without aborting.
    let cut = s.path("cut.gguf");
    std::fs::write(&cut, &full[..full.len() / 2]).unwrap();
    let line = failing_ask(s.hearth().env("HEARTH_MODEL", &cut));
    assert!(line.contains("could not load"), "{line}");
    assert!(line.contains("models/fetch"), "{line}");
    // Cut inside the header: caught before llama.cpp.
    std::fs::write(&cut, &full[..1000]).unwrap();
    let line = failing_ask(s.hearth().env("HEARTH_MODEL", &cut));
    assert!(line.contains("truncated"), "{line}");
}

#[test]
fn a_file_that_is_not_a_model() {
    let s = Sandbox::new();
    let bogus = s.path("page.gguf");
    std::fs::write(&bogus, "<html>404</html>").unwrap();
    let line = failing_ask(s.hearth().env("HEARTH_MODEL", &bogus));
    assert!(line.contains("not a usable GGUF"), "{line}");
}

#[test]
fn model_without_template_and_no_fallback() {
    let s = Sandbox::new();
    let gemma = common::model(common::GEMMA3);
    let line = failing_ask(s.hearth().env("HEARTH_MODEL", &gemma));
    assert!(line.contains("no chat template"), "{line}");
    assert!(line.contains("`[model] chat_template`"), "{line}");
}

#[test]
fn unreadable_config() {
    let s = Sandbox::new();
    // A directory where a file should be: unreadable even for root.
    let line = failing_ask(s.hearth().arg("--config").arg(s.dir.path()));
    assert!(line.contains("cannot read config"), "{line}");
    let line = failing_ask(s.hearth().env("HEARTH_CONFIG", s.path("missing.toml")));
    assert!(line.contains("missing.toml"), "{line}");
}

#[test]
fn invalid_config_names_the_key() {
    let s = Sandbox::new();
    let path = s.config("[generation]\ntemprature = 0.5\n");
    let line = failing_ask(s.hearth().arg("--config").arg(&path));
    assert!(line.contains("`generation.temprature`"), "{line}");
    let path = s.config("[model]\ncontext_size = \"large\"\n");
    let line = failing_ask(s.hearth().arg("--config").arg(&path));
    assert!(
        line.contains("`model.context_size`") && line.contains("invalid type"),
        "{line}"
    );
}

#[test]
fn empty_question() {
    let s = Sandbox::new();
    let out = s
        .hearth()
        .args(["ask", "-"])
        .write_stdin("   \n")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("question is empty"));
}

/// A context too small for hearth's system text and tools is refused at
/// start, naming both numbers, never cut; the same configuration with room
/// answers (the control).
#[test]
fn a_context_too_small_for_the_fixed_prompt_is_refused_with_both_numbers() {
    let _turn = common::engine_lock();
    let s = Sandbox::new();
    let chat = |context: u32| {
        let config = s.config(&format!(
            "[model]\npath = \"{}\"\ncontext_size = {context}\n[generation]\nmax_tokens = 64\ntemperature = 0.0\n",
            common::model(common::SMOLLM2).display()
        ));
        s.hearth()
            .arg("--config")
            .arg(config)
            .arg("chat")
            .write_stdin("Say hello.\n")
            .output()
            .expect("run hearth")
    };
    let out = chat(256);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "refused: {stderr}");
    assert_no_panic(&stderr);
    let takes = stderr
        .split("takes ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse::<u32>().ok())
        .unwrap_or_else(|| panic!("the prompt's size is named: {stderr}"));
    assert!(takes > 256 - 64, "{stderr}");
    assert!(stderr.contains("holds 256 tokens"), "{stderr}");
    assert!(stderr.contains("`[model] context_size`"), "{stderr}");
    let out = chat(2048);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the control answers: {stderr}");
    assert!(!out.stdout.is_empty(), "{stderr}");
    // The daemon stops with the same numbers once its model has loaded.
    let config = s.config(&format!(
        "[model]\npath = \"{}\"\ncontext_size = 256\n[generation]\nmax_tokens = 64\n[channels.gateway]\nlisten = \"127.0.0.1:0\"\ntoken = \"{}\"\n",
        common::model(common::SMOLLM2).display(),
        "t".repeat(40)
    ));
    let out = s
        .hearth()
        .arg("--config")
        .arg(config)
        .arg("daemon")
        .output()
        .expect("run hearth");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the daemon stops: {stderr}");
    assert_no_panic(&stderr);
    assert!(stderr.contains("holds 256 tokens"), "{stderr}");
}
