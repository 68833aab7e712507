//! The memory tools: `memory_store`, `memory_recall`, `memory_forget`.
//!
//! Each works in the scope of the chat the call came from
//! ([`hearth_tools::ToolContext::origin`]): the sender's own memory, and in
//! a group chat also the group's shared one. Calls from no chat (the
//! command line) use the `local` scope.

use std::sync::Arc;

use serde_json::{Value, json};

use super::scope::Scopes;
use super::{Category, MemoryStore, consolidate};
use futures::future::BoxFuture;
use hearth_tools::{Tool, ToolContext, ToolResult};

/// The three memory tools over one store, ready to register.
pub fn memory_tools(store: Arc<MemoryStore>) -> Vec<Box<dyn Tool>> {
    vec![
        Box::new(MemoryStoreTool(Arc::clone(&store))),
        Box::new(MemoryRecallTool(Arc::clone(&store))),
        Box::new(MemoryForgetTool(store)),
    ]
}

pub struct MemoryStoreTool(pub Arc<MemoryStore>);
pub struct MemoryRecallTool(pub Arc<MemoryStore>);
pub struct MemoryForgetTool(pub Arc<MemoryStore>);

impl Tool for MemoryStoreTool {
    fn name(&self) -> &str {
        "memory_store"
    }

    fn description(&self) -> &str {
        "Remember a fact for later conversations. `shared` keeps it for the whole group chat."
    }

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "content": {"type": "string"},
            "key": {"type": "string"},
            "category": {"type": "string", "enum": ["core", "daily", "conversation", "custom"]},
            "shared": {"type": "boolean"}
        }, "required": ["content"]})
    }

    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let content = args.get("content").and_then(Value::as_str).unwrap_or("");
            let category = match args.get("category").and_then(Value::as_str) {
                None => Category::Core,
                Some(c) => match c.parse() {
                    Ok(c) => c,
                    Err(e) => return ToolResult::error(e),
                },
            };
            let key = match args.get("key").and_then(Value::as_str) {
                Some(k) if !k.trim().is_empty() => k.trim().to_string(),
                _ => consolidate::fact_key(content),
            };
            let scopes = Scopes::of_origin(ctx.origin.as_ref());
            let shared = args.get("shared").and_then(Value::as_bool).unwrap_or(false);
            let scope = match (&scopes.group, shared) {
                (Some(group), true) => group.as_str(),
                (None, true) => {
                    return ToolResult::error("`shared` needs a group chat; this chat is private");
                }
                _ => scopes.sender.as_str(),
            };
            match self.0.store(scope, &key, content, category) {
                Ok(()) => ToolResult::ok(format!("remembered as `{key}` ({category})")),
                Err(e) => ToolResult::error(e.to_string()),
            }
        })
    }
}

impl Tool for MemoryRecallTool {
    fn name(&self) -> &str {
        "memory_recall"
    }

    fn description(&self) -> &str {
        "Search what was remembered about this user (and this group) by keywords."
    }

    fn read_only(&self) -> bool {
        true
    }

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"}
        }, "required": ["query"]})
    }

    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let query = args.get("query").and_then(Value::as_str).unwrap_or("");
            let limit = args
                .get("limit")
                .and_then(Value::as_u64)
                .map_or(5, |l| l.clamp(1, 20) as usize);
            let scopes = Scopes::of_origin(ctx.origin.as_ref());
            let mut found = Vec::new();
            for scope in scopes.all() {
                match self.0.recall(query, limit, scope) {
                    Ok(hits) => found.extend(hits),
                    Err(e) => return ToolResult::error(e.to_string()),
                }
            }
            found.sort_by(|a, b| b.score.total_cmp(&a.score));
            found.truncate(limit);
            if found.is_empty() {
                return ToolResult::ok("nothing remembered matches");
            }
            let lines: Vec<String> = found
                .iter()
                .map(|r| {
                    format!(
                        "[{:.2}] {} ({}): {}",
                        r.score, r.entry.key, r.entry.category, r.entry.content
                    )
                })
                .collect();
            ToolResult::ok(lines.join("\n"))
        })
    }
}

impl Tool for MemoryForgetTool {
    fn name(&self) -> &str {
        "memory_forget"
    }

    fn description(&self) -> &str {
        "Forget one remembered entry by its key (as memory_recall shows it)."
    }

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]})
    }

    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let key = args.get("key").and_then(Value::as_str).unwrap_or("");
            let scopes = Scopes::of_origin(ctx.origin.as_ref());
            for scope in scopes.all() {
                match self.0.forget(scope, key) {
                    Ok(true) => return ToolResult::ok(format!("forgot `{key}`")),
                    Ok(false) => {}
                    Err(e) => return ToolResult::error(e.to_string()),
                }
            }
            ToolResult::error(format!("nothing is remembered under `{key}` here"))
        })
    }
}
