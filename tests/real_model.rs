//! End to end on the real default model (SmolLM2-135M), through the binary:
//! greedy determinism, named sessions across invocations, the piped chat,
//! Ctrl-C during a reply, and the Gemma 3 model through the built-in
//! `gemma` template, and what memory keeps from real turns.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;

use common::{Sandbox, assert_no_panic};
use hearth::chat::Role;
use hearth::history::HistoryStore;

const GREEDY: &str = "[generation]\ntemperature = 0.0\nmax_tokens = 96\n";

fn ask(s: &Sandbox, config: &std::path::Path, args: &[&str], stdin: &str) -> String {
    let started = std::time::Instant::now();
    let out = s
        .hearth()
        .arg("--config")
        .arg(config)
        .arg("ask")
        .args(args)
        .write_stdin(stdin)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_no_panic(&stderr);
    // The status says what stderr cannot: a signal (the harness's 300 s
    // limit kills with SIGKILL), or a code.
    assert!(
        out.status.success(),
        "hearth ask failed ({:?} after {:.1} s): {stderr}",
        out.status,
        started.elapsed().as_secs_f32()
    );
    String::from_utf8(out.stdout).expect("utf-8 reply")
}

#[test]
fn greedy_generation_is_deterministic_and_answers() {
    let _engine_turn = common::engine_lock();
    common::model(common::SMOLLM2);
    let s = Sandbox::new();
    let config = s.config(GREEDY);
    let first = ask(&s, &config, &["-"], "What is the capital of France?\n");
    let second = ask(&s, &config, &["What is the capital of France?"], "");
    assert!(!first.trim().is_empty());
    assert_eq!(first, second, "greedy decoding must repeat itself exactly");
    assert!(first.contains("Paris"), "{first}");
}

#[test]
fn a_named_session_continues_across_invocations() {
    let _engine_turn = common::engine_lock();
    common::model(common::SMOLLM2);
    let s = Sandbox::new();
    let config = s.config(GREEDY);
    ask(
        &s,
        &config,
        &["--session", "trip", "My name is Ada and I live in Lisbon."],
        "",
    );
    let recalled = ask(&s, &config, &["--session", "trip", "What is my name?"], "");
    let fresh = ask(&s, &config, &["--session", "other", "What is my name?"], "");
    // Greedy decoding is deterministic, so a different answer to the same
    // question means the earlier turn was part of the prompt.
    assert_ne!(
        recalled, fresh,
        "the session's earlier turn reached the model"
    );

    let store = HistoryStore::open(&HistoryStore::path_in(&s.path("data"))).unwrap();
    let turns = store.load("cli_trip", 50).unwrap();
    let roles: Vec<Role> = turns.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::User, Role::Assistant]
    );
    assert_eq!(turns[0].content, "My name is Ada and I live in Lisbon.");
    assert_eq!(turns[3].content, recalled.trim());
}

#[test]
fn chat_reads_one_message_per_line_when_piped() {
    let _engine_turn = common::engine_lock();
    common::model(common::SMOLLM2);
    let s = Sandbox::new();
    let config = s.config(GREEDY);
    let out = s
        .hearth()
        .arg("--config")
        .arg(&config)
        .arg("chat")
        .write_stdin("What is the capital of France?\n/new\n/help\n/nonsense\nHello\n")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Paris"), "{stdout}");
    assert!(stdout.contains("(new conversation)"), "{stdout}");
    assert!(stdout.contains("/quit"), "help was shown: {stdout}");
    assert!(stdout.contains("unknown command /nonsense"), "{stdout}");
    let after_help = stdout
        .split("unknown command /nonsense")
        .nth(1)
        .unwrap_or_default();
    assert!(
        !after_help.trim().is_empty(),
        "the last message got a reply: {stdout}"
    );
    assert!(
        !stdout.contains("llama"),
        "llama.cpp logs stay off the chat screen: {stdout}"
    );
}

#[test]
fn ctrl_c_stops_the_reply_and_the_chat_goes_on() {
    let _engine_turn = common::engine_lock();
    use std::io::{Read, Write};
    use std::process::Stdio;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    common::model(common::SMOLLM2);
    let s = Sandbox::new();
    let config = s.config("[generation]\ntemperature = 0.0\nmax_tokens = 400\n");
    let mut child = s
        .hearth_process()
        .arg("--config")
        .arg(&config)
        .args(["chat", "--session", "story"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let out = Arc::new(Mutex::new(Vec::new()));
    let reader = {
        let out = out.clone();
        let mut stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 256];
            while let Ok(n @ 1..) = stdout.read(&mut buf) {
                out.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    writeln!(
        stdin,
        "Write a very long story about a dragon and a knight."
    )
    .unwrap();
    let t0 = Instant::now();
    while out.lock().unwrap().len() < 20 {
        assert!(t0.elapsed() < Duration::from_secs(120), "no reply began");
        std::thread::sleep(Duration::from_millis(20));
    }
    let interrupted = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "Ctrl-C during a reply must not end the chat"
    );
    writeln!(stdin, "What is the capital of France?").unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_no_panic(&stderr);
    assert!(status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.lock().unwrap()).into_owned();
    assert!(stdout.contains("Stopped."), "{stdout}");

    // The stopped turn is recorded as stopped; the next one was answered.
    let store = HistoryStore::open(&HistoryStore::path_in(&s.path("data"))).unwrap();
    let turns: Vec<(Role, String)> = store
        .load("cli_story_user", 50)
        .unwrap()
        .into_iter()
        .map(|m| (m.role, m.content))
        .collect();
    assert_eq!(turns.len(), 4, "{turns:?}");
    assert_eq!(turns[1], (Role::Assistant, "[Stopped by the user]".into()));
    assert_eq!(turns[2].1, "What is the capital of France?");
    assert_eq!(turns[3].0, Role::Assistant);
    assert!(
        !turns[3].1.is_empty() && stdout.contains(turns[3].1.trim()),
        "{stdout}"
    );
}

#[test]
fn gemma_without_metadata_template_runs_with_the_builtin_one() {
    let _engine_turn = common::engine_lock();
    let gemma = common::model(common::GEMMA3);
    let s = Sandbox::new();
    let config = s.config(&format!(
        "[model]\npath = \"{}\"\nchat_template = \"gemma\"\n{GREEDY}",
        gemma.display()
    ));
    let reply = ask(&s, &config, &["What is the capital of France?"], "");
    assert!(!reply.trim().is_empty());
}

/// SmolLM2 behind QwQ's template, which opens the think block itself: the
/// small model never closes it, so the reply is all hidden thought. `ask`
/// says so and names the ways out instead of "an empty reply"; the control
/// is the same question under a template without a think block.
#[test]
fn a_reply_that_only_thought_says_what_happened_and_the_way_out() {
    let _engine_turn = common::engine_lock();
    common::model(common::SMOLLM2);
    let template = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/templates/Qwen-QwQ-32B.jinja");
    assert!(template.is_file(), "{} is missing", template.display());
    let s = Sandbox::new();
    let base = format!(
        "[model]\nchat_template = \"{}\"\n[generation]\ntemperature = 0.0\nmax_tokens = 24\n",
        template.display()
    );
    let config = s.config(&base);
    let out = s
        .hearth()
        .args(["--config", config.to_str().unwrap(), "ask", "What is 2+2?"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("only thought") && stderr.contains("reasoning = \"off\""),
        "{stderr}"
    );
    assert!(!stderr.contains("empty reply"), "{stderr}");
    // The control: the same model and question under a template that does
    // not open a think block is answered.
    let config = s.config(
        "[model]\nchat_template = \"chatml\"\n[generation]\ntemperature = 0.0\nmax_tokens = 24\n",
    );
    let reply = ask(&s, &config, &["What is 2+2?"], "");
    assert!(!reply.trim().is_empty());
}

/// `hearth ask` stopped by a signal says which, and ends with the shell's
/// code for it (128 + its number), whether the model is still loading or
/// already writing; it never ends in silence. The control: left alone, the
/// same question is answered.
#[test]
fn ask_stopped_by_a_signal_says_so() {
    let _engine_turn = common::engine_lock();
    common::model(common::SMOLLM2);
    let s = Sandbox::new();
    let config = s.config("[generation]\ntemperature = 0.0\nmax_tokens = 4000\n");
    for (signal, code, name) in [
        (libc::SIGTERM, 143, "SIGTERM"),
        (libc::SIGINT, 130, "SIGINT"),
        (libc::SIGHUP, 129, "SIGHUP"),
    ] {
        // While the model loads (the signals are caught), and once it writes.
        for (wait_for, after_ms) in [("stop signals are caught", 0), ("engine ready", 1_000)] {
            use std::io::BufRead;
            let mut child = s
                .hearth_process()
                .args(["--config", config.to_str().unwrap(), "ask"])
                .arg("Write a very long story about a lighthouse keeper.")
                .env("RUST_LOG", "hearth=debug")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
            let mut log = String::new();
            for line in lines.by_ref() {
                let line = line.unwrap();
                log.push_str(&line);
                log.push('\n');
                if line.contains(wait_for) {
                    break;
                }
            }
            assert!(log.contains(wait_for), "{log}");
            std::thread::sleep(std::time::Duration::from_millis(after_ms));
            // SAFETY: a signal to our own child.
            unsafe { libc::kill(child.id() as i32, signal) };
            for line in lines {
                log.push_str(&line.unwrap());
                log.push('\n');
            }
            let out = child.wait_with_output().unwrap();
            let stderr = log;
            assert_eq!(
                out.status.code(),
                Some(code),
                "{name} after {after_ms} ms: {stderr}"
            );
            assert!(
                stderr.contains(&format!("stopped by {name}")),
                "{name} after {after_ms} ms: {stderr}"
            );
            assert_no_panic(&stderr);
        }
    }
    let config = s.config("[generation]\ntemperature = 0.0\nmax_tokens = 16\n");
    let reply = ask(&s, &config, &["Say hello."], "");
    assert!(!reply.trim().is_empty());
}

/// What memory keeps from real turns with SmolLM2 (the model answers and,
/// in the background, is asked for facts): the person's statement is kept;
/// their questions, a short word and everything the assistant said are
/// not, in any category. The outside run stored "The capital of France is
/// Paris." as a core fact after only the question.
#[test]
fn memory_keeps_statements_and_never_questions_or_the_assistant_s_words() {
    let _engine_turn = common::engine_lock();
    common::model(common::SMOLLM2);
    let s = Sandbox::new();
    let config = s.config(GREEDY);
    let said = [
        "What is the capital of France?",
        "list_to_json",
        "Can you tell me how to turn a list into JSON in Python?",
        "how do I reverse a string in python",
        // The control: a statement the person made.
        "My name is Ada and I keep three goats on my farm in Porto.",
    ];
    let out = s
        .hearth()
        .arg("--config")
        .arg(&config)
        .arg("chat")
        .write_stdin(said.join("\n") + "\n")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Paris"), "the model answered: {stdout}");
    let list = s
        .hearth()
        .arg("--config")
        .arg(&config)
        .args(["memory", "list"])
        .output()
        .unwrap();
    let kept = String::from_utf8_lossy(&list.stdout).to_lowercase();
    assert!(
        list.status.success(),
        "{}",
        String::from_utf8_lossy(&list.stderr)
    );
    assert!(
        kept.contains("three goats"),
        "the statement is kept: {kept}"
    );
    for never in [
        "paris",
        "capital",
        "list_to_json",
        "json",
        "reverse",
        "def ",
        "import",
    ] {
        assert!(
            !kept.contains(never),
            "{never:?} was kept:\n{kept}\nthe chat:\n{stdout}"
        );
    }
}
