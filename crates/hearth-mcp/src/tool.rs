//! A server's tool in hearth's registry: `SERVER__tool`, its schema as the
//! server gave it, asking first unless the config says otherwise; a call
//! goes to whichever connection the server has now.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

use super::hub::Server;
use crate::config::MCP_SEPARATOR;
use crate::tools::{Tool, ToolContext, ToolResult};

/// The longest tool name model APIs take.
const MAX_NAME: usize = 64;

/// The registry's name for `tool` of `server`: `server__tool`, with what
/// tool-calling formats cannot carry turned to `_` and cut to 64 bytes.
pub fn exposed_name(server: &str, tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut name = format!("{server}{MCP_SEPARATOR}{clean}");
    name.truncate(MAX_NAME);
    name
}

pub(super) struct McpTool {
    pub(super) exposed: String,
    /// The name the server knows it by.
    pub(super) remote: String,
    pub(super) description: String,
    pub(super) schema: Value,
    pub(super) asks: bool,
    pub(super) read_only: bool,
    pub(super) server: Arc<Server>,
}

impl McpTool {
    pub(super) fn new(server: &Arc<Server>, tool: rmcp::model::Tool) -> Self {
        let remote = tool.name.to_string();
        let description = format!(
            "[from the MCP server `{}`] {}",
            server.name,
            tool.description.as_deref().unwrap_or("")
        );
        let read_only = tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        Self {
            exposed: exposed_name(&server.name, &remote),
            asks: server.config.asks_before(&remote),
            schema: Value::Object((*tool.input_schema).clone()),
            description,
            remote,
            // A server's word that a tool only reads is a hint: it counts
            // only where the config trusts the tool to run unasked.
            read_only: read_only && !server.config.asks_before(&tool.name),
            server: server.clone(),
        }
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.exposed
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn schema(&self) -> Value {
        self.schema.clone()
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn asks_first(&self) -> bool {
        self.asks
    }

    fn execute<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(self.server.call(&self.exposed, &self.remote, args))
    }
}

/// A result as text for the model: text as it is, other content named
/// (an image is not passed on as base64 the model would have to read).
pub(super) fn result_text(result: CallToolResult) -> ToolResult {
    let mut parts: Vec<String> = result.content.iter().map(block_text).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = parts.join("\n");
    if result.is_error.unwrap_or(false) {
        ToolResult::error(if text.is_empty() {
            "the tool failed and said nothing more".to_string()
        } else {
            text
        })
    } else {
        ToolResult::ok(text)
    }
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!(
            "[an image, {}, {} bytes: not shown]",
            i.mime_type,
            i.data.len() * 3 / 4
        ),
        ContentBlock::Audio(a) => format!(
            "[audio, {}, {} bytes: not shown]",
            a.mime_type,
            a.data.len() * 3 / 4
        ),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            other => format!("[a binary resource: {}]", resource_uri(other)),
        },
        ContentBlock::ResourceLink(link) => format!("[a link to {} ({})]", link.uri, link.name),
        _ => "[content of a kind hearth does not read]".to_string(),
    }
}

fn resource_uri(r: &ResourceContents) -> String {
    match serde_json::to_value(r) {
        Ok(v) => v
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string(),
        Err(_) => "?".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_to_what_every_tool_format_can_carry() {
        assert_eq!(
            exposed_name("time", "get_current_time"),
            "time__get_current_time"
        );
        assert_eq!(exposed_name("ev", "get.sum v2"), "ev__get_sum_v2");
        assert_eq!(exposed_name("s", &"x".repeat(100)).len(), 64);
        // No built-in tool has the separator, so none can be shadowed.
        for builtin in crate::tools::ToolRegistry::core().names() {
            assert!(!builtin.contains(MCP_SEPARATOR), "{builtin}");
        }
    }
}
