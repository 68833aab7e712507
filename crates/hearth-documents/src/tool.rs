//! `documents_search`: the agent looks through the documents of the person
//! it is talking to (and of their group chat), never anyone else's.

use std::sync::Arc;

use futures::future::BoxFuture;
use hearth_tools::scope::Scopes;
use hearth_tools::{Tool, ToolContext, ToolResult};
use serde_json::{Value, json};

use super::DocumentStore;

pub struct DocumentsSearch(pub Arc<DocumentStore>);

impl Tool for DocumentsSearch {
    fn name(&self) -> &str {
        "documents_search"
    }

    fn description(&self) -> &str {
        "Search the documents this person sent (PDF, Word, web pages, text) by keywords; each passage comes with its file and page."
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
                .map_or(4, |l| l.clamp(1, 10) as usize);
            let scopes = Scopes::of_origin(ctx.origin.as_ref());
            let sees: Vec<&str> = scopes.all().collect();
            match self.0.search(&sees, query, None, limit) {
                Ok(found) if found.is_empty() => ToolResult::ok("no document passage matches"),
                Ok(found) => ToolResult::ok(
                    found
                        .iter()
                        .map(|f| format!("({}, page {}) {}", f.name, f.page, f.text))
                        .collect::<Vec<_>>()
                        .join("\n\n"),
                ),
                Err(e) => ToolResult::error(e.to_string()),
            }
        })
    }
}
