//! `hearth chat` at a terminal asks before a tool call that needs approval:
//! the binary on a pseudo-terminal, its model an OpenAI-compatible fake on
//! 127.0.0.1 (the local model is absent, so the fallback answers) that
//! writes a `file_write` call and then repeats what the tool said.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::response::IntoResponse;
use serde_json::{Value, json};

/// Replies like the parrot: `CALL <call>` → the call; a tool result → what
/// it says. Streams one delta, as chat completions do.
async fn completions(axum::Json(body): axum::Json<Value>) -> axum::response::Response {
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    // `ECHO …` streams the parrot's markup (or the control) a word at a time.
    if last.contains("ECHO TAGS") || last.contains("ECHO PLAIN") {
        let text = if last.contains("ECHO TAGS") {
            crate::support::TAGGED
        } else {
            crate::support::PLAIN
        };
        let mut events: String = text
            .split_inclusive(' ')
            .map(|word| {
                let delta = json!({"choices": [{"index": 0, "delta": {"content": word}, "finish_reason": null}]});
                format!("data: {delta}\n\n")
            })
            .collect();
        let stop = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
        events.push_str(&format!("data: {stop}\n\ndata: [DONE]\n\n"));
        return ([("content-type", "text/event-stream")], events).into_response();
    }
    let text = if let Some(open) = last.find("<tool_result") {
        let body = &last[open..];
        let body = &body[body.find('>').map_or(0, |i| i + 1)..];
        format!(
            "The tool says: {}",
            body.split("</tool_result>").next().unwrap_or_default()
        )
    } else if let Some(i) = last.find("CALL ") {
        last[i + 5..].to_string()
    } else {
        format!("You wrote: {last}")
    };
    let delta =
        json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    let stop = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    (
        [("content-type", "text/event-stream")],
        format!("data: {delta}\n\ndata: {stop}\n\ndata: [DONE]\n\n"),
    )
        .into_response()
}

fn fake_openai() -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let app =
                axum::Router::new().route("/v1/chat/completions", axum::routing::post(completions));
            axum::serve(listener, app).await.unwrap();
        });
    });
    format!("http://{}/v1", rx.recv().unwrap())
}

/// A config whose local model is absent, so the fake at `url` answers,
/// with tool calls read as XML and the workspace at `workspace`.
fn fallback_config(
    s: &common::Sandbox,
    url: &str,
    workspace: &std::path::Path,
) -> std::path::PathBuf {
    s.config(&format!(
        "[model]\npath = \"/nonexistent/model.gguf\"\n\
         [providers.openai]\nbase_url = \"{url}\"\nmodel = \"gpt-test\"\n\
         [routing]\nfallback = [\"openai\"]\n\
         [agent]\nworkspace = \"{}\"\ntool_dispatcher = \"xml\"\n",
        workspace.display()
    ))
}

/// A pseudo-terminal: (the side the test holds, the side hearth gets).
fn pty() -> (std::fs::File, OwnedFd) {
    let (mut controller, mut terminal) = (0, 0);
    // SAFETY: openpty writes two new descriptors into the integers given;
    // null name, termios and window size are allowed.
    let rc = unsafe {
        libc::openpty(
            &mut controller,
            &mut terminal,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned by nobody else.
    unsafe {
        (
            std::fs::File::from_raw_fd(controller),
            OwnedFd::from_raw_fd(terminal),
        )
    }
}

struct Screen(Arc<Mutex<String>>);

impl Screen {
    fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }

    /// Waits until the screen shows `want` `n` times.
    fn wait_for(&self, want: &str, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.text().matches(want).count() < n {
            assert!(
                Instant::now() < deadline,
                "`{want}` ×{n} never appeared:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn chat_asks_y_n_at_the_terminal_and_a_no_leaves_the_workspace_alone() {
    let s = common::Sandbox::new();
    let url = fake_openai();
    let workspace = s.path("ws");
    let config = fallback_config(&s, &url, &workspace);
    let (mut controller, terminal) = pty();
    let mut child = s
        .hearth_process()
        .arg("--config")
        .arg(&config)
        .arg("chat")
        .stdin(Stdio::from(terminal.try_clone().unwrap()))
        .stdout(Stdio::from(terminal.try_clone().unwrap()))
        .stderr(Stdio::from(terminal))
        .spawn()
        .unwrap();
    let screen = Screen(Arc::default());
    let mut reader = controller.try_clone().unwrap();
    let shown = screen.0.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            shown
                .lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    screen.wait_for("/help for commands", 1);
    let write = |path: &str| {
        format!(
            "CALL <tool_call>{}</tool_call>\n",
            json!({"name": "file_write", "arguments": {"path": path, "content": "hi"}})
        )
    };
    let file = |path: &str| workspace.join("cli/default").join(path);

    // No: nothing is written, and the answer says it could not be done.
    controller.write_all(write("no.txt").as_bytes()).unwrap();
    screen.wait_for("[y = once", 1);
    assert!(
        screen.text().contains("Allow `file_write`"),
        "{}",
        screen.text()
    );
    controller.write_all(b"n\n").unwrap();
    screen.wait_for("could not do it", 1);
    assert!(screen.text().contains("→ denied"), "{}", screen.text());
    assert!(!file("no.txt").exists());

    // Yes: it runs.
    controller.write_all(write("yes.txt").as_bytes()).unwrap();
    screen.wait_for("[y = once", 2);
    controller.write_all(b"y\n").unwrap();
    screen.wait_for("→ allowed once", 1);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !file("yes.txt").exists() {
        assert!(Instant::now() < deadline, "{}", screen.text());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(std::fs::read_to_string(file("yes.txt")).unwrap(), "hi");

    // The model repeats hearth's markup: the terminal never shows it.
    controller.write_all(b"ECHO TAGS\n").unwrap();
    screen.wait_for("Noted, 1 < 2.", 1);
    for tag in crate::support::INTERNAL {
        assert!(!screen.text().contains(tag), "{tag}:\n{}", screen.text());
    }

    controller.write_all(b"/quit\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{}", screen.text());
            break;
        }
        assert!(
            Instant::now() < deadline,
            "chat did not end: {}",
            screen.text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    common::assert_no_panic(&screen.text());
}

#[test]
fn piped_chat_cannot_approve_so_the_call_does_not_run() {
    let s = common::Sandbox::new();
    let url = fake_openai();
    let workspace = s.path("ws");
    let config = fallback_config(&s, &url, &workspace);
    let line = format!(
        "CALL <tool_call>{}</tool_call>\ny\n",
        json!({"name": "file_write", "arguments": {"path": "piped.txt", "content": "hi"}})
    );
    let out = s
        .hearth()
        .arg("--config")
        .arg(&config)
        .arg("chat")
        .write_stdin(line)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("cannot ask"), "{stdout}");
    assert!(!workspace.join("cli/default/piped.txt").exists());
    // The `y` line was a message of its own, not an answer.
    assert!(stdout.contains("You wrote: y"), "{stdout}");
}

/// A piped `hearth chat` prints what the model said without hearth's
/// markup when the model repeats it, streamed a word at a time; the
/// control (the same answer, no markup) prints word for word. (`hearth ask`
/// runs only the local model; its unit test covers what it prints.)
#[test]
fn the_command_line_never_prints_echoed_markup() {
    let s = common::Sandbox::new();
    let url = fake_openai();
    let config = fallback_config(&s, &url, &s.path("ws"));
    let run = |args: &[&str], stdin: &str| {
        let out = s
            .hearth()
            .arg("--config")
            .arg(&config)
            .args(args)
            .write_stdin(stdin.to_string())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for asked in ["ECHO TAGS", "ECHO PLAIN"] {
        let chatted = run(&["chat"], &format!("{asked}\n"));
        for tag in crate::support::INTERNAL {
            assert!(!chatted.contains(tag), "{asked}: {tag} in {chatted}");
        }
        assert!(
            chatted.contains(crate::support::PLAIN),
            "{asked}: {chatted}"
        );
    }
}
