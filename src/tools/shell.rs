//! The shell tool: one command line in the workspace, under the policy.

use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use super::{BoxFuture, Tool, ToolContext, ToolResult, arg_str};

pub struct Shell;

impl Tool for Shell {
    fn name(&self) -> &str {
        "shell"
    }

    fn description(&self) -> &str {
        "Run a shell command in the workspace. Only allowlisted commands; output is capped."
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
            // A clean environment: no inherited secrets for the command to print.
            let mut child = match tokio::process::Command::new("sh")
                .arg("-c")
                .arg(command)
                .current_dir(ctx.policy.workspace())
                .env_clear()
                .env("PATH", "/usr/local/bin:/usr/bin:/bin")
                .env("LANG", "C.UTF-8")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
            {
                Ok(c) => c,
                Err(e) => return ToolResult::error(format!("cannot start the shell: {e}")),
            };
            // Read at most a little more than the cap: a huge output is cut,
            // never buffered whole.
            let limit = (ctx.output_cap as u64 + 1) * 4;
            let mut out = Vec::new();
            let mut err = Vec::new();
            let stdout = child.stdout.take().map(|s| s.take(limit));
            let stderr = child.stderr.take().map(|s| s.take(limit));
            let read_out = async {
                if let Some(mut s) = stdout {
                    let _ = s.read_to_end(&mut out).await;
                }
            };
            let read_err = async {
                if let Some(mut s) = stderr {
                    let _ = s.read_to_end(&mut err).await;
                }
            };
            tokio::join!(read_out, read_err);
            let _ = child.start_kill();
            let status = child.wait().await;
            let mut text = String::from_utf8_lossy(&out).into_owned();
            if !err.is_empty() {
                text.push_str(&format!("\n[stderr]\n{}", String::from_utf8_lossy(&err)));
            }
            match status {
                Ok(s) if s.success() => ToolResult::ok(text),
                Ok(s) => {
                    ToolResult::error(format!("exit status {}\n{text}", s.code().unwrap_or(-1)))
                }
                Err(e) => ToolResult::error(format!("the command failed: {e}")),
            }
        })
    }
}
