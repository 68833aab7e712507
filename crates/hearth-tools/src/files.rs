//! File tools, all confined to the workspace: the security policy judges
//! the path, and [`confined::open`] opens it without following a link out.
//! Reads stop at what the result can show; `glob` walks off the async
//! runtime, without following links, under a deadline.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::confined::{self, Access};
use super::{Tool, ToolContext, ToolResult, arg_str};
use futures::future::BoxFuture;

/// How long one `glob` may walk.
const GLOB_DEADLINE: Duration = Duration::from_secs(5);
/// Entries one `glob` looks at, at most.
const GLOB_MAX_VISITED: usize = 200_000;
/// Wildcards one `glob` pattern may hold.
const GLOB_MAX_WILDCARDS: usize = 8;
/// Matches one `glob` returns, at most.
const GLOB_MAX_FOUND: usize = 1_000;

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

    fn read_only(&self) -> bool {
        true
    }

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
            let limit = (ctx.output_cap as u64 + 1) * 4;
            let workspace = ctx.policy.workspace().to_path_buf();
            let shown = display(ctx, &path);
            let read = blocking(move || Ok(confined::read_start(&workspace, &path, limit)?)).await;
            match read {
                Ok((bytes, len)) => {
                    let mut text = String::from_utf8_lossy(&bytes).into_owned();
                    if len > bytes.len() as u64 {
                        text.push_str(&format!(
                            "\n[file is {len} bytes; only the first {} read]",
                            bytes.len()
                        ));
                    }
                    ToolResult::ok(text)
                }
                Err(e) => ToolResult::error(format!("cannot read {shown}: {e}")),
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
            let workspace = ctx.policy.workspace().to_path_buf();
            let shown = display(ctx, &path);
            let bytes = content.as_bytes().to_vec();
            let len = bytes.len();
            match blocking(move || write_checked(&workspace, &path, &bytes, append)).await {
                Ok(()) => ToolResult::ok(format!("wrote {len} bytes to {shown}")),
                Err(e) => ToolResult::error(format!("cannot write {shown}: {e}")),
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
            let workspace = ctx.policy.workspace().to_path_buf();
            let shown = display(ctx, &path);
            let (old, new) = (old.to_string(), new.to_string());
            let edited = blocking(move || {
                let (bytes, len) = confined::read_start(&workspace, &path, EDIT_LIMIT)?;
                if len > bytes.len() as u64 {
                    return Err(FileError::TooLarge);
                }
                let text = String::from_utf8(bytes).map_err(|_| FileError::NotText)?;
                match text.matches(&old).count() {
                    0 => Err(FileError::NotFound),
                    1 => write_checked(
                        &workspace,
                        &path,
                        text.replacen(&old, &new, 1).as_bytes(),
                        false,
                    ),
                    n => Err(FileError::Ambiguous(n)),
                }
            })
            .await;
            match edited {
                Ok(()) => ToolResult::ok(format!("edited {shown}")),
                Err(e) => ToolResult::error(format!("cannot edit {shown}: {e}")),
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

    fn read_only(&self) -> bool {
        true
    }

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
            let workspace = ctx.policy.workspace().to_path_buf();
            let listed = blocking(move || {
                Ok(confined::read_dir(&workspace, &path).map(|entries| {
                    entries
                        .flatten()
                        .map(|entry| {
                            let mut name = entry.file_name().to_string_lossy().into_owned();
                            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                                name.push('/');
                            }
                            name
                        })
                        .collect::<Vec<_>>()
                })?)
            })
            .await;
            let mut names = match listed {
                Ok(names) => names,
                Err(e) => return ToolResult::error(e.to_string()),
            };
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

    fn read_only(&self) -> bool {
        true
    }

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
            // Matching backtracks over each wildcard: many of them make one
            // name cost exponential time, which no deadline between names
            // could stop.
            let wildcards = pattern.matches(['*', '?', '[']).count();
            if pattern.len() > 512 || wildcards > GLOB_MAX_WILDCARDS {
                return ToolResult::error(format!(
                    "the pattern has {wildcards} wildcards; use at most {GLOB_MAX_WILDCARDS} (and 512 characters)"
                ));
            }
            let pattern = match glob::Pattern::new(pattern) {
                Ok(p) => p,
                Err(e) => return ToolResult::error(format!("invalid pattern: {e}")),
            };
            let root = ctx.policy.workspace().to_path_buf();
            let (found, note) = match blocking(move || Ok(walk(&root, &pattern))).await {
                Ok(walked) => walked,
                Err(e) => return ToolResult::error(e.to_string()),
            };
            let mut text = if found.is_empty() {
                "no matches".to_string()
            } else {
                found.join("\n")
            };
            if let Some(note) = note {
                text.push_str(&format!("\n[{note}]"));
            }
            ToolResult::ok(text)
        })
    }
}

/// Workspace files whose relative path matches `pattern`, sorted, and a
/// note when the walk stopped early. Symlinks are never followed, so a
/// link loop costs one entry.
fn walk(root: &Path, pattern: &glob::Pattern) -> (Vec<String>, Option<String>) {
    let options = glob::MatchOptions {
        require_literal_separator: true,
        ..Default::default()
    };
    let started = Instant::now();
    let mut found = Vec::new();
    let mut pending: Vec<PathBuf> = vec![PathBuf::new()];
    let mut visited = 0usize;
    let mut note = None;
    'walk: while let Some(relative) = pending.pop() {
        let Ok(entries) = confined::read_dir(root, &root.join(&relative)) else {
            continue;
        };
        for entry in entries.flatten() {
            visited += 1;
            if visited > GLOB_MAX_VISITED || started.elapsed() > GLOB_DEADLINE {
                note = Some(format!(
                    "stopped after {visited} entries in {:.1} s; narrow the pattern",
                    started.elapsed().as_secs_f32()
                ));
                break 'walk;
            }
            let path = relative.join(entry.file_name());
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(path.clone());
            }
            if pattern.matches_path_with(&path, options) && found.len() < GLOB_MAX_FOUND {
                found.push(path.display().to_string());
            }
        }
    }
    if found.len() >= GLOB_MAX_FOUND && note.is_none() {
        note = Some(format!("only the first {GLOB_MAX_FOUND} matches"));
    }
    found.sort();
    (found, note)
}

/// Why a file tool's work failed; the text goes to the model.
#[derive(Debug, thiserror::Error)]
enum FileError {
    #[error(transparent)]
    Confined(#[from] confined::ConfinedError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("the file is over {EDIT_LIMIT} bytes; too large to edit")]
    TooLarge,
    #[error("the file is not UTF-8 text")]
    NotText,
    #[error("`old` does not occur in the file; read it first and copy the text exactly")]
    NotFound,
    #[error("`old` occurs {0} times; include more context so it occurs once")]
    Ambiguous(usize),
    #[error("the file task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Runs blocking file work off the async runtime.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, FileError> + Send + 'static,
) -> Result<T, FileError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| Err(FileError::Task(e)))
}

/// Bytes of a file `file_edit` takes on.
const EDIT_LIMIT: u64 = 4 << 20;

/// Writes (or appends) `bytes` to a workspace file, through the checks.
fn write_checked(
    workspace: &Path,
    path: &Path,
    bytes: &[u8],
    append: bool,
) -> Result<(), FileError> {
    let mut file = confined::open(workspace, path, Access::Write { append })?;
    Ok(file.write_all(bytes)?)
}

/// A path as the model should see it: relative to the workspace.
fn display(ctx: &ToolContext, path: &Path) -> String {
    path.strip_prefix(ctx.policy.workspace())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}
