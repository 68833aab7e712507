//! Every configured server and what it offers now: the registry's
//! [`ToolSource`] for MCP tools, and the state `hearth mcp list` and
//! `hearth doctor` show.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmcp::Peer;
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, ServerResult};
use rmcp::service::{PeerRequestOptions, RoleClient, ServiceError};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::stderr::StderrTail;
use super::tool::{McpTool, result_text};
use crate::config::{McpConfig, McpServerConfig};
use crate::sandbox::Sandbox;
use crate::tools::{Tool, ToolResult, ToolSource};

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    Starting,
    Ready,
    /// Why it is not running; it is started again after a pause.
    Failed(String),
}

/// One server, as `hearth mcp list` shows it.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    pub name: String,
    pub state: ServerState,
    /// Its tools as the model sees them: name and description.
    pub tools: Vec<(String, String)>,
    /// Starts that failed or ended, in a row.
    pub failures: u32,
    /// Its process, when hearth started one and it runs.
    pub pid: Option<u32>,
    /// The last lines its process wrote to stderr (its latest start; while
    /// a failed server is started again, the start that failed).
    pub stderr: Vec<String>,
}

/// What a server has now.
#[derive(Clone)]
pub(super) struct Live {
    pub(super) state: ServerState,
    pub(super) peer: Option<Peer<RoleClient>>,
    pub(super) tools: Vec<Arc<dyn Tool>>,
    pub(super) pid: Option<u32>,
    /// Attempts to start it so far.
    pub(super) attempts: u32,
    pub(super) failures: u32,
    /// A failed attempt's last stderr lines, kept while the next one runs
    /// (until then they are the tail's own).
    pub(super) failed_stderr: Option<Vec<String>>,
}

/// One configured server.
pub(super) struct Server {
    pub(super) name: String,
    pub(super) config: McpServerConfig,
    pub(super) live: watch::Sender<Live>,
    /// The last lines its process wrote to stderr.
    pub(super) stderr: StderrTail,
}

impl Server {
    fn new(name: &str, config: &McpServerConfig) -> Arc<Self> {
        let (live, _) = watch::channel(Live {
            state: ServerState::Starting,
            peer: None,
            tools: Vec::new(),
            pid: None,
            attempts: 0,
            failures: 0,
            failed_stderr: None,
        });
        Arc::new(Self {
            name: name.to_string(),
            config: config.clone(),
            live,
            stderr: StderrTail::default(),
        })
    }

    fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let live = self.live.borrow();
        match (&live.peer, &live.state) {
            (Some(peer), ServerState::Ready) => Ok(peer.clone()),
            (_, ServerState::Failed(why)) => {
                Err(format!("it failed ({why}) and is being restarted"))
            }
            _ => Err("it is starting".to_string()),
        }
    }

    /// Calls `remote`; no answer nor progress for the server's timeout
    /// abandons the call, and the model hears why.
    pub(super) async fn call(&self, exposed: &str, remote: &str, args: Value) -> ToolResult {
        let peer = match self.peer() {
            Ok(p) => p,
            Err(why) => {
                return ToolResult::error(format!(
                    "`{exposed}` cannot run now: the MCP server `{}` is not running: {why}. Try again later or do without it",
                    self.name
                ));
            }
        };
        let arguments = match args {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                return ToolResult::error(format!("`{exposed}` takes an object, not {other}"));
            }
        };
        let params = CallToolRequestParams::new(remote.to_string()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // rmcp restarts the wait at each progress notification of this call.
        let idle = Duration::from_secs(self.config.timeout_secs);
        let options = PeerRequestOptions::with_timeout(idle).reset_timeout_on_progress();
        let outcome = match peer.send_request_with_option(request, options).await {
            Ok(handle) => handle.await_response().await,
            Err(e) => Err(e),
        };
        let outcome = match outcome {
            Ok(ServerResult::CallToolResult(result)) => Ok(result),
            Ok(_) => Err(ServiceError::UnexpectedResponse),
            Err(ServiceError::Timeout { .. }) => {
                return ToolResult::error(format!(
                    "`{exposed}` timed out: the MCP server `{}` sent no answer nor progress for {} s, so the call was abandoned",
                    self.name,
                    idle.as_secs()
                ));
            }
            Err(e) => Err(e),
        };
        self.outcome(exposed, outcome)
    }

    fn outcome(
        &self,
        exposed: &str,
        outcome: Result<rmcp::model::CallToolResult, ServiceError>,
    ) -> ToolResult {
        match outcome {
            Ok(result) => result_text(result),
            Err(ServiceError::McpError(e)) => ToolResult::error(format!(
                "the MCP server `{}` refused `{exposed}`: {}",
                self.name, e.message
            )),
            Err(e) => ToolResult::error(format!(
                "`{exposed}` failed: the MCP server `{}` went away during the call ({e}); it is being restarted",
                self.name
            )),
        }
    }

    fn status(&self) -> ServerStatus {
        let live = self.live.borrow();
        ServerStatus {
            name: self.name.clone(),
            state: live.state.clone(),
            tools: live
                .tools
                .iter()
                .map(|t| (t.name().to_string(), t.description().to_string()))
                .collect(),
            failures: live.failures,
            pid: live.pid,
            stderr: match &live.failed_stderr {
                Some(lines) if matches!(live.state, ServerState::Failed(_)) => lines.clone(),
                _ => self.stderr.lines(),
            },
        }
    }
}

/// Every enabled server, each kept running by its supervisor until the
/// hub is dropped.
pub struct McpHub {
    servers: Vec<Arc<Server>>,
    stop: CancellationToken,
}

impl McpHub {
    /// Starts a supervisor for each enabled server; stdio servers run in
    /// `sandbox` narrowed to a folder under `data_dir/mcp/`. Returns at
    /// once: servers start in the background.
    pub fn start(config: &McpConfig, sandbox: &Sandbox, data_dir: &Path) -> Arc<Self> {
        let stop = CancellationToken::new();
        let servers: Vec<Arc<Server>> = config
            .enabled()
            .map(|(name, c)| Server::new(name, c))
            .collect();
        for server in &servers {
            tokio::spawn(super::supervise::run(
                server.clone(),
                sandbox.clone(),
                data_dir.to_path_buf(),
                stop.clone(),
            ));
        }
        Arc::new(Self { servers, stop })
    }

    /// Waits until every server has been tried once (ready or failed).
    pub async fn settled(&self) {
        for server in &self.servers {
            let mut live = server.live.subscribe();
            let _ = live
                .wait_for(|l| l.attempts > 0 && l.state != ServerState::Starting)
                .await;
        }
    }

    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers.iter().map(|s| s.status()).collect()
    }

    /// Stops every server.
    pub fn stop(&self) {
        self.stop.cancel();
    }
}

impl Drop for McpHub {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl ToolSource for McpHub {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.servers
            .iter()
            .flat_map(|s| s.live.borrow().tools.clone())
            .collect()
    }
}

/// The server's tools the config offers, as registry tools; a second tool
/// whose name comes out the same is left out.
pub(super) fn offered(server: &Arc<Server>, tools: Vec<rmcp::model::Tool>) -> Vec<Arc<dyn Tool>> {
    let mut out: Vec<Arc<dyn Tool>> = Vec::new();
    for tool in tools {
        if !server.config.offers(&tool.name) {
            continue;
        }
        let t = McpTool::new(server, tool);
        if out.iter().any(|o| o.name() == t.name()) {
            tracing::warn!(
                server = server.name,
                tool = t.remote,
                "two tools share the name {}; the second is left out",
                t.exposed
            );
            continue;
        }
        out.push(Arc::new(t));
    }
    out
}
