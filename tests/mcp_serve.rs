//! `hearth mcp serve`, driven by the official MCP Python SDK's client: it
//! lists hearth's tools and calls them; a tool the owner must approve is
//! refused (nobody can approve for an MCP client), beside the same call
//! allowed when the config does not ask; `ask_local_model` answers with
//! the real small model.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use serde_json::{Value, json};

use crate::common::{Sandbox, engine_lock, model};
use crate::support::ways_in::python;

async fn serve(s: &Sandbox, config: &str, calls: Value) -> Value {
    let config = s.config(config);
    let args = [
        env!("CARGO_BIN_EXE_hearth").to_string(),
        config.display().to_string(),
        s.path("data").display().to_string(),
        s.dir.path().display().to_string(),
        calls.to_string(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    python("mcp_client.py", &args, "").await
}

fn tool(out: &Value, i: usize) -> (&str, bool) {
    let c = &out["calls"][i];
    (
        c["text"].as_str().unwrap(),
        c["is_error"].as_bool().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::await_holding_lock)]
async fn the_official_client_lists_and_calls_hearths_tools_and_approval_is_not_bypassed() {
    let _engine = engine_lock();
    let s = Sandbox::new();
    let model = model("SmolLM2-135M-Instruct.Q4_1.gguf");
    let base = format!(
        "[model]\npath = {}\n[generation]\nmax_tokens = 24\n[memory]\nenabled = true\n[scheduler]\nenabled = true\n",
        serde_json::to_string(&model.display().to_string()).unwrap()
    );
    let calls = json!([
        ["memory_store", {"content": "The boiler code is 4417"}],
        ["memory_recall", {"query": "boiler code"}],
        ["cron_add", {"in": "1h", "prompt": "check the boiler", "channel": "telegram", "to": "1"}],
        ["ask_local_model", {"question": "Say hello."}],
        ["shell", {"command": "id"}],
    ]);
    // `[agent] approve` lists cron_add: refused, nothing scheduled.
    let asking = format!("{base}[agent]\napprove = [\"cron_add\"]\n");
    let out = serve(&s, &asking, calls.clone()).await;
    assert_eq!(out["server"], "hearth");
    let names: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for name in [
        "memory_store",
        "memory_recall",
        "cron_add",
        "ask_local_model",
    ] {
        assert!(names.contains(&name), "{name}: {names:?}");
    }
    // hearth's own commands and files are not offered.
    assert!(
        !names.contains(&"shell") && !names.contains(&"file_write"),
        "{names:?}"
    );
    let (stored, failed) = tool(&out, 0);
    assert!(!failed, "{stored}");
    let (recalled, failed) = tool(&out, 1);
    assert!(!failed && recalled.contains("4417"), "{recalled}");
    let (cron, failed) = tool(&out, 2);
    assert!(
        failed && cron.contains("needs the owner's approval"),
        "{cron}"
    );
    let (answer, failed) = tool(&out, 3);
    assert!(!failed && !answer.trim().is_empty(), "{answer}");
    let (shell, failed) = tool(&out, 4);
    assert!(failed && shell.contains("no tool `shell`"), "{shell}");
    let jobs = crate::support::said(&s.hearth().args(["cron", "list"]).output().unwrap());
    assert!(!jobs.contains("check the boiler"), "{jobs}");
    // Control: not listed in `approve`, the same call schedules the job.
    let out = serve(&s, &base, json!([calls[2].clone()])).await;
    let (cron, failed) = tool(&out, 0);
    assert!(!failed, "{cron}");
    let jobs = crate::support::said(&s.hearth().args(["cron", "list"]).output().unwrap());
    assert!(jobs.contains("check the boiler"), "{jobs}");
}
