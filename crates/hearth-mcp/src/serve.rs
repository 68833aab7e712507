//! `hearth mcp serve`: hearth's own capabilities for another agent or MCP
//! client, on stdin and stdout: memory (search, store, forget), the LMS's
//! upcoming items, reminders and jobs, and a question to the local model.
//!
//! The client is trusted as the command line is (it runs as the owner, on
//! the owner's box), and no further: a tool listed in `[agent] approve`
//! needs an answer nobody here can give, so it is refused; `autonomy =
//! "read_only"` allows only the tools that change nothing.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::chat::{ChatMessage, ChatRequest, SamplingParams};
use crate::config::Config;
use crate::providers::Provider;
use crate::security::Autonomy;
use crate::tools::{Tool, ToolContext, ToolRegistry, ToolResult};

/// hearth's tools as an MCP server offers them.
pub struct HearthServer {
    tools: ToolRegistry,
    context: ToolContext,
    config: Arc<Config>,
}

impl HearthServer {
    /// Offers `tools` (the services' tools the caller chose) and
    /// `ask_local_model` answered by `model`, run under `context`.
    pub fn new(
        config: &Config,
        mut tools: ToolRegistry,
        context: ToolContext,
        model: Arc<dyn Provider>,
    ) -> Self {
        tools.register(Box::new(AskLocalModel {
            model,
            sampling: SamplingParams::from(&config.generation),
        }));
        Self {
            tools,
            context,
            config: Arc::new(config.clone()),
        }
    }

    /// Why `tool` may not run for an MCP client, if it may not.
    fn refusal(&self, name: &str, tool: &dyn Tool) -> Option<String> {
        let agent = &self.config.agent;
        if agent.asks_before(name) {
            return Some(format!(
                "`{name}` needs the owner's approval (`[agent] approve` lists it) and an MCP client cannot give it, so hearth refused the call. Nothing was done"
            ));
        }
        if agent.autonomy == Autonomy::ReadOnly && !tool.read_only() {
            return Some(format!(
                "`{name}` changes things and hearth's `[agent] autonomy` is \"read_only\", so hearth refused the call. Nothing was done"
            ));
        }
        None
    }

    async fn call(&self, name: &str, args: Value) -> ToolResult {
        let Some(tool) = self.tools.get(name) else {
            return ToolResult::error(format!(
                "hearth has no tool `{name}`; it has: {}",
                self.tools.names().join(", ")
            ));
        };
        if let Some(why) = self.refusal(name, tool.as_ref()) {
            tracing::info!(tool = name, "MCP client's call refused: {why}");
            return ToolResult::error(why);
        }
        self.tools.run(name, args, &self.context).await
    }
}

impl ServerHandler for HearthServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("hearth", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "hearth, the owner's home assistant: what it remembers, the student's LMS dates, reminders, and its local model.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .tools
            .specs()
            .into_iter()
            .map(|spec| {
                let schema = match spec.parameters {
                    Value::Object(map) => map,
                    _ => serde_json::Map::new(),
                };
                rmcp::model::Tool::new(spec.name, spec.description, Arc::new(schema))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Value::Object).unwrap_or(json!({}));
        let result = self.call(&request.name, args).await;
        let content = vec![ContentBlock::text(result.content)];
        Ok(if result.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
        .into())
    }
}

/// `ask_local_model`: one question to the local model, no history.
struct AskLocalModel {
    model: Arc<dyn Provider>,
    sampling: SamplingParams,
}

impl Tool for AskLocalModel {
    fn name(&self) -> &str {
        "ask_local_model"
    }

    fn description(&self) -> &str {
        "Ask hearth's local model one question (no history, no tools); returns its answer."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"question": {"type": "string", "description": "The question"}},
            "required": ["question"]
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        _ctx: &'a ToolContext,
    ) -> futures::future::BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let question = args.get("question").and_then(Value::as_str).unwrap_or("");
            let request = ChatRequest::new(
                "mcp-ask",
                vec![ChatMessage::user(question)],
                self.sampling.clone(),
            );
            match self
                .model
                .chat(request, CancellationToken::new())
                .collect_with(|_| {})
                .await
            {
                Ok(reply) => ToolResult::ok(reply.text.trim().to_string()),
                Err(e) => ToolResult::error(format!("the local model failed: {e}")),
            }
        })
    }
}

/// Serves on stdin and stdout until the client goes.
pub async fn serve_stdio(server: HearthServer) -> anyhow::Result<()> {
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| anyhow::anyhow!("the MCP client did not initialize: {e}"))?;
    let _ = running.waiting().await;
    Ok(())
}
