//! ACP, the Agent Client Protocol, as an editor speaks it: JSON-RPC 2.0
//! lines from a client of our own that follows the published schema
//! (initialize, session/new, session/prompt with session/update
//! notifications, session/cancel, session/request_permission).
//!
//! In process with the typist model (streams word by word, writes the
//! calls it is told to) through the real dispatcher, pipeline and tools;
//! and once through the real `hearth acp` binary on SmolLM2.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;
use crate::support;

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use hearth::channels::AcpChannel;
use hearth::config::{Config, Environment};
use hearth::daemon::Daemon;
use hearth::pipeline::RuntimeBuilder;
use hearth::tools::ToolRegistry;
use serde_json::{Value, json};
use support::*;
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};

const WAIT: Duration = Duration::from_secs(120);

/// The editor's end of the connection.
struct Client {
    lines: tokio::io::Lines<Box<dyn tokio::io::AsyncBufRead + Send + Unpin>>,
    out: Box<dyn AsyncWrite + Send + Unpin>,
    next: u64,
    /// Every line the agent wrote, as read.
    seen: Vec<Value>,
}

impl Client {
    async fn write(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.out.write_all(line.as_bytes()).await.unwrap();
        self.out.flush().await.unwrap();
    }

    async fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next += 1;
        let id = self.next;
        self.write(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.write(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// The next line the agent writes; every line must be JSON-RPC 2.0.
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("the agent writes in time")
            .unwrap()
            .expect("the agent's output is open");
        let value: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert_eq!(value["jsonrpc"], "2.0", "{value}");
        self.seen.push(value.clone());
        value
    }

    /// Reads until the answer to request `id`; the notifications and
    /// requests on the way are in `seen`.
    async fn answer(&mut self, id: u64) -> Value {
        loop {
            let v = self.next().await;
            if v.get("method").is_none() && v["id"] == id {
                return v;
            }
        }
    }

    /// `session/update`s of one kind seen so far.
    fn updates(&self, kind: &str) -> Vec<Value> {
        self.seen
            .iter()
            .filter(|v| v["method"] == "session/update")
            .map(|v| v["params"]["update"].clone())
            .filter(|u| u["sessionUpdate"] == kind)
            .collect()
    }

    fn text(&self) -> String {
        self.updates("agent_message_chunk")
            .iter()
            .map(|u| u["content"]["text"].as_str().unwrap().to_string())
            .collect()
    }

    async fn start(&mut self) -> String {
        let id = self
            .request(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}}),
            )
            .await;
        let init = self.answer(id).await;
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        assert_eq!(init["result"]["agentCapabilities"]["loadSession"], false);
        let id = self
            .request(
                "session/new",
                json!({"cwd": "/home/ada/project", "mcpServers": []}),
            )
            .await;
        let session = self.answer(id).await;
        session["result"]["sessionId"].as_str().unwrap().to_string()
    }

    async fn prompt(&mut self, session: &str, text: &str) -> u64 {
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }
}

struct InProcess {
    client: Client,
    daemon: Daemon,
    workspace: std::path::PathBuf,
    _home: tempfile::TempDir,
}

/// The ACP channel on an in-memory pipe, in a daemon with the typist.
fn in_process() -> InProcess {
    let home = tempfile::tempdir().unwrap();
    let env = Environment::with_home(home.path());
    let path = home.path().join("hearth.toml");
    std::fs::write(&path, "[agent]\napproval_timeout_secs = 10\n").unwrap();
    let cfg = Config::load_file(&path, &env).unwrap();
    let workspace = cfg.agent.workspace.clone();
    let (editor, agent) = tokio::io::duplex(1 << 16);
    let (agent_in, agent_out) = tokio::io::split(agent);
    let (editor_in, editor_out) = tokio::io::split(editor);
    let channel = Arc::new(AcpChannel::new(
        Box::new(BufReader::new(agent_in)),
        Box::new(agent_out),
    ));
    let context = hearth::cli::tools_cmd::context(&cfg, &env).unwrap();
    let tools = ToolRegistry::for_config(&cfg.agent, &context.sandbox);
    let runtime = RuntimeBuilder::new(cfg, local(Typist::new(Duration::from_millis(15))), context)
        .tools(Arc::new(tools))
        .channel(channel)
        .build()
        .unwrap();
    let reader: Box<dyn tokio::io::AsyncBufRead + Send + Unpin> =
        Box::new(BufReader::new(editor_in));
    InProcess {
        client: Client {
            lines: reader.lines(),
            out: Box::new(editor_out),
            next: 0,
            seen: Vec::new(),
        },
        daemon: Daemon::start(runtime, None),
        workspace,
        _home: home,
    }
}

#[tokio::test]
async fn a_prompt_streams_its_reply_then_ends_the_turn() {
    let InProcess {
        mut client,
        daemon,
        _home,
        ..
    } = in_process();
    let session = client.start().await;
    let id = client.prompt(&session, "the quick brown fox jumps").await;
    let answer = client.answer(id).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let chunks = client.updates("agent_message_chunk");
    assert!(chunks.len() >= 3, "streamed in pieces: {chunks:?}");
    assert!(
        client.text().contains("the quick brown fox jumps"),
        "{}",
        client.text()
    );
    assert!(
        client
            .seen
            .iter()
            .filter(|v| v["method"] == "session/update")
            .all(|v| v["params"]["sessionId"] == session.as_str())
    );
    // A second session is a conversation of its own.
    let id = client
        .request("session/new", json!({"cwd": "/tmp", "mcpServers": []}))
        .await;
    let other = client.answer(id).await["result"]["sessionId"].clone();
    assert_ne!(other, session.as_str());
    daemon.stop().await;
}

/// The editor never reads hearth's own markup: the typist repeats the
/// memory fence and a tool's result block (cut across its chunks), and
/// every `agent_message_chunk` is free of them. The control: the same
/// answer without the markup arrives word for word.
#[tokio::test]
async fn echoed_markup_never_reaches_the_editor() {
    let InProcess {
        mut client,
        daemon,
        _home,
        ..
    } = in_process();
    let session = client.start().await;
    for asked in ["ECHO TAGS", "ECHO PLAIN"] {
        client.seen.clear();
        let id = client.prompt(&session, asked).await;
        let answer = client.answer(id).await;
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
        for chunk in client.updates("agent_message_chunk") {
            let text = chunk["content"]["text"].as_str().unwrap();
            for tag in INTERNAL {
                assert!(!text.contains(tag), "{asked}: {tag} in {text:?}");
            }
        }
        assert_eq!(client.text(), PLAIN, "{asked}");
    }
    daemon.stop().await;
}

#[tokio::test]
async fn cancel_ends_the_turn_as_cancelled_and_the_session_goes_on() {
    let InProcess {
        mut client,
        daemon,
        _home,
        ..
    } = in_process();
    let session = client.start().await;
    let long = "word ".repeat(400);
    let id = client.prompt(&session, &long).await;
    let first = client.next().await;
    assert_eq!(
        first["params"]["update"]["sessionUpdate"], "agent_message_chunk",
        "{first}"
    );
    // One prompt at a time per session.
    let busy = client.prompt(&session, "me too").await;
    let refused = client.answer(busy).await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("session/cancel"),
        "{refused}"
    );
    client
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    let answer = client.answer(id).await;
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    assert!(
        client.text().len() < long.len(),
        "the reply stopped part way"
    );
    // Positive control: the next prompt is answered in full.
    client.seen.clear();
    let id = client.prompt(&session, "after the cancel").await;
    assert_eq!(client.answer(id).await["result"]["stopReason"], "end_turn");
    assert!(
        client.text().contains("after the cancel"),
        "{}",
        client.text()
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_tool_call_asks_permission_and_is_reported() {
    let InProcess {
        mut client,
        daemon,
        workspace,
        _home,
    } = in_process();
    let session = client.start().await;
    let write = |path: &str| call("file_write", json!({"path": path, "content": "hi"}));
    for (file, option) in [("yes.txt", "once"), ("no.txt", "deny")] {
        client.seen.clear();
        let id = client.prompt(&session, &write(file)).await;
        let asked = loop {
            let v = client.next().await;
            if v["method"] == "session/request_permission" {
                break v;
            }
        };
        assert_eq!(asked["params"]["sessionId"], session.as_str());
        assert_eq!(asked["params"]["toolCall"]["kind"], "edit", "{asked}");
        let kinds: Vec<&str> = asked["params"]["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert!(
            kinds.contains(&"allow_once") && kinds.contains(&"reject_once"),
            "{kinds:?}"
        );
        client
            .write(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"outcome": {"outcome": "selected", "optionId": option}}}))
            .await;
        let answer = client.answer(id).await;
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
        // The call is shown pending before the question, under the id the
        // question names, and ends completed, or failed when denied.
        let calls = client.updates("tool_call");
        assert_eq!(calls.len(), 1, "{:?}", client.seen);
        assert_eq!(calls[0]["title"], "file_write");
        assert_eq!(calls[0]["status"], "pending");
        let call_id = calls[0]["toolCallId"].clone();
        assert_eq!(asked["params"]["toolCall"]["toolCallId"], call_id);
        let end = if option == "once" {
            "completed"
        } else {
            "failed"
        };
        assert!(
            client
                .updates("tool_call_update")
                .iter()
                .any(|u| u["toolCallId"] == call_id && u["status"] == end),
            "{:?}",
            client.seen
        );
    }
    assert!(file_under(&workspace, "yes.txt"), "the allowed call ran");
    assert!(!file_under(&workspace, "no.txt"), "the denied call did not");
    daemon.stop().await;
}

#[tokio::test]
async fn bad_lines_get_json_rpc_errors_and_the_connection_lives() {
    let InProcess {
        mut client,
        daemon,
        _home,
        ..
    } = in_process();
    client.out.write_all(b"{this is not json\n").await.unwrap();
    let parse = client.next().await;
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    assert_eq!(parse["id"], Value::Null);
    client
        .write(json!({"jsonrpc": "1.0", "id": 5, "method": "initialize"}))
        .await;
    assert_eq!(client.next().await["error"]["code"], -32600);
    let id = client
        .request("session/load", json!({"sessionId": "x"}))
        .await;
    assert_eq!(client.answer(id).await["error"]["code"], -32601);
    let id = client.prompt("sess_made_up", "hi").await;
    assert_eq!(client.answer(id).await["error"]["code"], -32602);
    // An unknown notification is ignored, never answered.
    client.notify("session/whatever", json!({})).await;
    // Positive control: the connection still works.
    let session = client.start().await;
    let id = client
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": []}),
        )
        .await;
    assert_eq!(
        client.answer(id).await["error"]["code"],
        -32602,
        "an empty prompt"
    );
    let id = client.prompt(&session, "still here").await;
    assert_eq!(client.answer(id).await["result"]["stopReason"], "end_turn");
    daemon.stop().await;
}

#[tokio::test]
#[allow(clippy::await_holding_lock)] // the test's own runtime; engines take turns
async fn the_binary_is_an_acp_agent_on_smollm2() {
    let _engine_turn = common::engine_lock();
    common::model(common::SMOLLM2);
    let sandbox = common::Sandbox::new();
    let config = sandbox.config("[generation]\ntemperature = 0.0\nmax_tokens = 600\n");
    let mut child = tokio::process::Command::from(sandbox.hearth_process())
        .arg("--config")
        .arg(&config)
        .arg("acp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let reader: Box<dyn tokio::io::AsyncBufRead + Send + Unpin> =
        Box::new(BufReader::new(child.stdout.take().unwrap()));
    let mut client = Client {
        lines: reader.lines(),
        out: Box::new(child.stdin.take().unwrap()),
        next: 0,
        seen: Vec::new(),
    };
    let session = client.start().await;
    let id = client
        .prompt(&session, "What is the capital of France?")
        .await;
    let answer = client.answer(id).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let text = client.text();
    assert!(!text.trim().is_empty(), "the model's reply streamed");
    assert!(
        !text.contains("<|im_end|>") && !text.contains("<think>"),
        "{text}"
    );
    // A long reply, cancelled once it has begun.
    client.seen.clear();
    let id = client
        .prompt(
            &session,
            "Write a very long story about a dragon, with many chapters.",
        )
        .await;
    loop {
        let v = client.next().await;
        if v["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
            break;
        }
    }
    client
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    let answer = client.answer(id).await;
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    // The editor closes stdin: the agent ends cleanly. (Every line it
    // wrote was read as JSON-RPC: nothing else reaches stdout.)
    drop(client);
    let out = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .expect("hearth acp ends once stdin closes")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    common::assert_no_panic(&stderr);
    assert!(out.status.success(), "{stderr}");
}

/// `hearth acp` driven by the protocol's own Python SDK, whose models check
/// every message against the schema: a `file_write` whose long content
/// comes before its path is asked about with the path whole, under one
/// `toolCallId` from the question to the end of the call (with `rawInput`,
/// `locations` and the result as `content`); a result tag the model cut
/// short never shows; the command ends cleanly when the editor closes
/// stdin. A denial is the control: the call does not run, and its entry
/// ends as failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_protocols_own_sdk_sees_one_call_from_question_to_result() {
    use support::slow_model::{SlowModel, WRITE_AGENTS};
    let model = SlowModel::start(3, Duration::from_millis(20)).await;
    let sandbox = common::Sandbox::new();
    let workspace = sandbox.path("ws");
    let config = sandbox.config(&format!(
        "[data]\ndir = \"{}\"\n[agent]\nworkspace = \"{}\"\n[memory]\nenabled = false\n[providers.openai]\nbase_url = \"{}\"\nmodel = \"slow\"\nnative_tools = false\n[routing]\ndefault_provider = \"openai\"\n",
        sandbox.path("data").display(),
        workspace.display(),
        model.base_url
    ));
    let drive = |answer: &'static str| {
        let config = config.display().to_string();
        async move {
            ways_in::python(
                "acp_client.py",
                &[
                    env!("CARGO_BIN_EXE_hearth"),
                    &config,
                    &format!("Please {WRITE_AGENTS} now"),
                    answer,
                ],
                "",
            )
            .await
        }
    };
    let run = drive("once").await;
    assert_eq!(run["stopReason"], "end_turn", "{run}");
    assert_eq!(run["exit"], 0, "{run}");
    let stderr = run["stderr"].as_str().unwrap();
    assert!(!stderr.contains("listener failed"), "{stderr}");
    common::assert_no_panic(stderr);

    let asked = &run["permissions"][0]["toolCall"];
    let id = asked["toolCallId"].as_str().unwrap().to_string();
    assert!(
        asked["title"].as_str().unwrap().contains("AGENTS.md"),
        "the path is in the question: {asked}"
    );
    assert_eq!(asked["rawInput"]["path"], "AGENTS.md");
    assert_eq!(asked["rawInput"]["content"].as_str().unwrap().len(), 720);
    let updates = run["updates"].as_array().unwrap();
    let of_call: Vec<&Value> = updates
        .iter()
        .filter(|u| u["toolCallId"] == id.as_str())
        .collect();
    let statuses: Vec<&str> = of_call
        .iter()
        .filter_map(|u| u["status"].as_str())
        .collect();
    assert_eq!(
        statuses,
        ["pending", "in_progress", "completed"],
        "one entry from question to end: {updates:?}"
    );
    assert_eq!(of_call[0]["sessionUpdate"], "tool_call");
    assert_eq!(of_call[0]["locations"], json!([{"path": "AGENTS.md"}]));
    let result = of_call[2]["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(!result.is_empty(), "{:?}", of_call[2]);
    // Every call shown ends; nothing else has an id of its own.
    let ids: std::collections::BTreeSet<&str> = updates
        .iter()
        .filter_map(|u| u["toolCallId"].as_str())
        .collect();
    assert_eq!(ids.len(), 1, "{updates:?}");
    let said: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert!(said.contains("Saved AGENTS.md."), "{said}");
    assert!(!said.contains("tool_result"), "a cut tag showed: {said}");
    let written = std::fs::read_to_string(find(&workspace, "AGENTS.md")).unwrap();
    assert_eq!(written.len(), 720);

    // The control: denied, the call does not run and its entry fails.
    std::fs::remove_file(find(&workspace, "AGENTS.md")).unwrap();
    let run = drive("deny").await;
    let id = run["permissions"][0]["toolCall"]["toolCallId"]
        .as_str()
        .unwrap()
        .to_string();
    let statuses: Vec<&str> = run["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["toolCallId"] == id.as_str())
        .filter_map(|u| u["status"].as_str())
        .collect();
    assert_eq!(statuses, ["pending", "failed"], "{run}");
    assert!(!find(&workspace, "AGENTS.md").exists());
}

/// Where a file of that name is under `dir` (conversations have folders
/// of their own), or `dir/name` when none is.
fn find(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if entry.file_name() == name {
                return path;
            }
        }
    }
    dir.join(name)
}

/// An `image` block reaches the pipeline as a picture: this model (the
/// typist) cannot see, and says so; a block that is not base64 is refused
/// as invalid params, and the session goes on.
#[tokio::test]
async fn an_image_block_reaches_the_model_as_a_picture_and_a_bad_one_is_refused() {
    let InProcess {
        mut client,
        daemon,
        _home,
        ..
    } = in_process();
    let session = client.start().await;
    let png = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        crate::common::pictures::png(8, 8, [1, 2, 3]),
    );
    let id = client
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [
                {"type": "text", "text": "what is this?"},
                {"type": "image", "data": png, "mimeType": "image/png"}]}),
        )
        .await;
    let answer = client.answer(id).await;
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(
        client.text().contains("cannot see images"),
        "{}",
        client.text()
    );
    let id = client
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [
                {"type": "image", "data": "@@", "mimeType": "image/png"}]}),
        )
        .await;
    let refused = client.answer(id).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not base64")
    );
    // The control: the session answers text as before.
    let id = client.prompt(&session, "still here").await;
    assert_eq!(client.answer(id).await["result"]["stopReason"], "end_turn");
    daemon.stop().await;
}

/// The protocol's own Python SDK sends a picture as an `image` block (after
/// reading `promptCapabilities.image` from hearth's answer to `initialize`)
/// to `hearth acp` running SmolLM2 with the test projector: the model's
/// prompt holds the projector's tokens beside the text (hearth's own log of
/// the round). The control: the same words with no picture.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// Held across the awaits on purpose: it serialises the test binary's engines.
#[allow(clippy::await_holding_lock)]
async fn the_protocols_own_sdk_sends_a_picture_the_model_reads_as_its_tokens() {
    use crate::common::pictures::{IMAGE_TOKENS, png, projector};
    let _engine_turn = common::engine_lock();
    let sandbox = common::Sandbox::new();
    let picture = sandbox.path("red.png");
    std::fs::write(&picture, png(100, 80, [200, 30, 30])).unwrap();
    let config = sandbox.config(&format!(
        "[data]\ndir = \"{}\"\n[agent]\nworkspace = \"{}\"\n[memory]\nenabled = false\n[model]\npath = \"{}\"\nmmproj = \"{}\"\ncontext_size = 2048\n[generation]\nmax_tokens = 8\ntemperature = 0.0\n",
        sandbox.path("data").display(),
        sandbox.path("ws").display(),
        common::model(common::SMOLLM2).display(),
        projector().display()
    ))
    .display()
    .to_string();
    let prompt_tokens = |run: &Value| -> u32 {
        assert_eq!(run["stopReason"], "end_turn", "{run}");
        assert_eq!(run["exit"], 0, "{run}");
        let stderr = run["stderr"].as_str().unwrap();
        common::assert_no_panic(stderr);
        common::logged(stderr, "prompt_tokens")
    };
    let hearth = env!("CARGO_BIN_EXE_hearth");
    let question = "What is in this picture?";
    let seen = ways_in::python(
        "acp_client.py",
        &[hearth, &config, question, "deny", picture.to_str().unwrap()],
        "",
    )
    .await;
    assert_eq!(seen["imageCapability"], true, "{seen}");
    let updates = seen["updates"].as_array().unwrap();
    assert!(
        updates
            .iter()
            .any(|u| u["sessionUpdate"] == "agent_message_chunk"),
        "an answer: {updates:?}"
    );
    let words = ways_in::python(
        "acp_client.py",
        &[hearth, &config, question, "deny", ""],
        "",
    )
    .await;
    let (with_picture, without) = (prompt_tokens(&seen), prompt_tokens(&words));
    assert!(
        with_picture >= without + IMAGE_TOKENS,
        "the picture is {} tokens, not the projector's {IMAGE_TOKENS}",
        with_picture.saturating_sub(without)
    );
}
