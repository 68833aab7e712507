//! The shell tool: one command line in the workspace, under the policy's
//! allowlist (a first, advisory layer) and always inside the OS sandbox,
//! which is what actually contains it.

use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolResult, arg_str};
use futures::future::BoxFuture;

pub struct Shell;

impl Tool for Shell {
    fn name(&self) -> &str {
        "shell"
    }

    fn description(&self) -> &str {
        "Run a shell command in the workspace (sandboxed: only workspace files, no network). Only allowlisted commands; output is capped."
    }

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]})
    }

    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let command = match arg_str(&args, "command") {
                Ok(c) => c,
                Err(e) => return e,
            };
            if let Err(e) = ctx.policy.check_command(command) {
                return ToolResult::error(format!("refused: {e}"));
            }
            let finished = match ctx.sandbox.run(command, ctx.output_cap).await {
                Ok(f) => f,
                Err(e) => return ToolResult::error(e.to_string()),
            };
            let mut text = String::from_utf8_lossy(&finished.stdout).into_owned();
            if !finished.stderr.is_empty() {
                text.push_str(&format!(
                    "\n[stderr]\n{}",
                    String::from_utf8_lossy(&finished.stderr)
                ));
            }
            if finished.cut {
                text.push_str("\n[output cut: the command was stopped there]");
            }
            let status = finished.status;
            if status.success() {
                ToolResult::ok(text)
            } else if let Some(code) = status.code() {
                ToolResult::error(format!("exit status {code}\n{text}"))
            } else {
                use std::os::unix::process::ExitStatusExt;
                let signal = status.signal().unwrap_or(0);
                ToolResult::error(format!(
                    "killed by signal {signal} (a limit on CPU, memory, file size or processes?)\n{text}"
                ))
            }
        })
    }
}
