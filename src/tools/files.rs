//! File tools, all confined to the workspace by the security policy.

use serde_json::{Value, json};

use super::{BoxFuture, Tool, ToolContext, ToolResult, arg_str};

/// Files larger than this are read in part.
const READ_LIMIT: usize = 256 * 1024;

macro_rules! tool_basics {
    ($name:literal, $description:literal) => {
        fn name(&self) -> &str {
            $name
        }
        fn description(&self) -> &str {
            $description
        }
    };
}

pub struct FileRead;

impl Tool for FileRead {
    tool_basics!("file_read", "Read a text file in the workspace.");

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    }

    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let path = match arg_str(&args, "path").map(|p| ctx.policy.resolve(p, false)) {
                Ok(Ok(p)) => p,
                Ok(Err(e)) => return ToolResult::error(e.to_string()),
                Err(e) => return e,
            };
            match tokio::fs::read(&path).await {
                Ok(bytes) => {
                    let shown = &bytes[..bytes.len().min(READ_LIMIT)];
                    let mut text = String::from_utf8_lossy(shown).into_owned();
                    if bytes.len() > READ_LIMIT {
                        text.push_str(&format!(
                            "\n[file is {} bytes; only the first {READ_LIMIT} read]",
                            bytes.len()
                        ));
                    }
                    ToolResult::ok(text)
                }
                Err(e) => ToolResult::error(format!("cannot read {}: {e}", display(ctx, &path))),
            }
        })
    }
}

pub struct FileWrite;

impl Tool for FileWrite {
    tool_basics!(
        "file_write",
        "Write (or append to) a text file in the workspace."
    );

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "content": {"type": "string"},
            "append": {"type": "boolean"}
        }, "required": ["path", "content"]})
    }

    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let (path, content) = match (arg_str(&args, "path"), arg_str(&args, "content")) {
                (Ok(p), Ok(c)) => (p, c),
                (Err(e), _) | (_, Err(e)) => return e,
            };
            let path = match ctx.policy.resolve(path, true) {
                Ok(p) => p,
                Err(e) => return ToolResult::error(e.to_string()),
            };
            if let Some(dir) = path.parent()
                && let Err(e) = tokio::fs::create_dir_all(dir).await
            {
                return ToolResult::error(format!("cannot create {}: {e}", display(ctx, dir)));
            }
            let append = args.get("append").and_then(Value::as_bool).unwrap_or(false);
            let written = if append {
                use tokio::io::AsyncWriteExt;
                match tokio::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .await
                {
                    Ok(mut f) => f.write_all(content.as_bytes()).await,
                    Err(e) => Err(e),
                }
            } else {
                tokio::fs::write(&path, content).await
            };
            match written {
                Ok(()) => ToolResult::ok(format!(
                    "wrote {} bytes to {}",
                    content.len(),
                    display(ctx, &path)
                )),
                Err(e) => ToolResult::error(format!("cannot write {}: {e}", display(ctx, &path))),
            }
        })
    }
}

pub struct FileEdit;

impl Tool for FileEdit {
    tool_basics!(
        "file_edit",
        "Replace one exact occurrence of `old` with `new` in a workspace file."
    );

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "old": {"type": "string"},
            "new": {"type": "string"}
        }, "required": ["path", "old", "new"]})
    }

    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let (path, old, new) = match (
                arg_str(&args, "path"),
                arg_str(&args, "old"),
                arg_str(&args, "new"),
            ) {
                (Ok(p), Ok(o), Ok(n)) => (p, o, n),
                (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return e,
            };
            if old.is_empty() {
                return ToolResult::error("`old` must not be empty");
            }
            let path = match ctx.policy.resolve(path, true) {
                Ok(p) => p,
                Err(e) => return ToolResult::error(e.to_string()),
            };
            let text = match tokio::fs::read_to_string(&path).await {
                Ok(t) => t,
                Err(e) => {
                    return ToolResult::error(format!("cannot read {}: {e}", display(ctx, &path)));
                }
            };
            match text.matches(old).count() {
                0 => ToolResult::error(
                    "`old` does not occur in the file; read it first and copy the text exactly",
                ),
                1 => match tokio::fs::write(&path, text.replacen(old, new, 1)).await {
                    Ok(()) => ToolResult::ok(format!("edited {}", display(ctx, &path))),
                    Err(e) => {
                        ToolResult::error(format!("cannot write {}: {e}", display(ctx, &path)))
                    }
                },
                n => ToolResult::error(format!(
                    "`old` occurs {n} times; include more context so it occurs once"
                )),
            }
        })
    }
}

pub struct ListDir;

impl Tool for ListDir {
    tool_basics!(
        "list_dir",
        "List a folder in the workspace (folders end with /)."
    );

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}})
    }

    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let requested = args.get("path").and_then(Value::as_str).unwrap_or(".");
            let path = match ctx.policy.resolve(requested, false) {
                Ok(p) => p,
                Err(e) => return ToolResult::error(e.to_string()),
            };
            let mut entries = match tokio::fs::read_dir(&path).await {
                Ok(e) => e,
                Err(e) => {
                    return ToolResult::error(format!("cannot list {}: {e}", display(ctx, &path)));
                }
            };
            let mut names = Vec::new();
            while let Ok(Some(entry)) = entries.next_entry().await {
                let mut name = entry.file_name().to_string_lossy().into_owned();
                if entry.file_type().await.is_ok_and(|t| t.is_dir()) {
                    name.push('/');
                }
                names.push(name);
            }
            names.sort();
            ToolResult::ok(if names.is_empty() {
                "(empty)".to_string()
            } else {
                names.join("\n")
            })
        })
    }
}

pub struct Glob;

impl Tool for Glob {
    tool_basics!(
        "glob",
        "Find workspace files matching a pattern such as `src/**/*.rs`."
    );

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]})
    }

    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let pattern = match arg_str(&args, "pattern") {
                Ok(p) => p,
                Err(e) => return e,
            };
            if pattern.starts_with('/') || pattern.split('/').any(|part| part == "..") {
                return ToolResult::error(
                    "the pattern must stay inside the workspace (no leading / or ..)",
                );
            }
            let root = ctx.policy.workspace().to_path_buf();
            let full = root.join(pattern).display().to_string();
            let paths = match glob::glob(&full) {
                Ok(p) => p,
                Err(e) => return ToolResult::error(format!("invalid pattern: {e}")),
            };
            let mut found: Vec<String> = paths
                .filter_map(Result::ok)
                .filter(|p| ctx.policy.resolve(&p.display().to_string(), false).is_ok())
                .filter_map(|p| p.strip_prefix(&root).ok().map(|r| r.display().to_string()))
                .take(1000)
                .collect();
            found.sort();
            ToolResult::ok(if found.is_empty() {
                "no matches".to_string()
            } else {
                found.join("\n")
            })
        })
    }
}

/// A path as the model should see it: relative to the workspace.
fn display(ctx: &ToolContext, path: &std::path::Path) -> String {
    path.strip_prefix(ctx.policy.workspace())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}
