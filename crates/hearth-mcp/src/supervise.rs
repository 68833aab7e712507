//! One server's supervisor: start it, list its tools, follow its list
//! changes, and when it fails or dies, start it again after a pause that
//! doubles up to five minutes (reset once it has run for a minute).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::Peer;
use rmcp::service::RoleClient;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::connect::{Connection, connect};
use super::handler::Handler;
use super::hub::{Server, ServerState, offered};
use crate::retry::RetryPolicy;
use crate::sandbox::Sandbox;

const RESTART: RetryPolicy = RetryPolicy::new(Duration::from_secs(1), Duration::from_secs(300));

/// A run this long counts as healthy: the next failure waits the least.
const HEALTHY: Duration = Duration::from_secs(60);

pub(super) async fn run(
    server: Arc<Server>,
    sandbox: Sandbox,
    data_dir: PathBuf,
    stop: CancellationToken,
) {
    let mut backoff = RESTART.backoff();
    loop {
        // After a failure the server shows as failed, with that attempt's
        // stderr, until the next attempt is ready or fails in its turn.
        let failed_stderr = server.stderr.lines();
        server.live.send_modify(|l| {
            l.attempts += 1;
            if matches!(l.state, ServerState::Failed(_)) {
                l.failed_stderr = Some(failed_stderr);
            }
        });
        let changed = Arc::new(Notify::new());
        let handler = Handler {
            server: server.name.clone(),
            tools_changed: changed.clone(),
        };
        let attempt = tokio::select! {
            c = connect(&server.name, &server.config, &sandbox, &data_dir, (handler, &server.stderr)) => c,
            _ = stop.cancelled() => return,
        };
        let started = Instant::now();
        let why = match attempt {
            Err(e) => format!("{e}; {}", e.fix()),
            Ok(connection) => serve(&server, connection, &changed, &stop).await,
        };
        if stop.is_cancelled() {
            return;
        }
        if started.elapsed() >= HEALTHY {
            backoff.reset();
        }
        let pause = backoff.failed();
        tracing::warn!(
            server = server.name,
            "MCP server is not running: {why}; starting it again in {} s",
            pause.as_secs()
        );
        server.live.send_modify(|l| {
            l.state = ServerState::Failed(why.clone());
            l.failed_stderr = None;
            l.peer = None;
            l.tools.clear();
            l.pid = None;
            l.failures = backoff.failures();
        });
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = stop.cancelled() => return,
        }
    }
}

/// Serves one connection until it ends; says why it ended.
async fn serve(
    server: &Arc<Server>,
    connection: Connection,
    changed: &Notify,
    stop: &CancellationToken,
) -> String {
    let Connection {
        client,
        mut process,
    } = connection;
    let peer = client.peer().clone();
    let cancel = client.cancellation_token();
    let mut ended = tokio::spawn(client.waiting());
    let why = match list(server, &peer).await {
        Err(e) => e,
        Ok(tools) => {
            let count = tools.len();
            server.live.send_modify(|l| {
                l.state = ServerState::Ready;
                l.peer = Some(peer.clone());
                l.tools = tools;
                l.pid = process.as_ref().and_then(|p| p.id());
            });
            tracing::info!(server = server.name, tools = count, "MCP server ready");
            loop {
                tokio::select! {
                    _ = changed.notified() => match list(server, &peer).await {
                        Ok(tools) => server.live.send_modify(|l| l.tools = tools),
                        Err(e) => tracing::warn!(server = server.name, "{e}"),
                    },
                    status = exited(&mut process) => break status,
                    _ = &mut ended => break match &process {
                        Some(p) if p.out_of_memory() => super::OUT_OF_MEMORY.to_string(),
                        _ => "the connection closed".to_string(),
                    },
                    _ = stop.cancelled() => break String::new(),
                }
            }
        }
    };
    cancel.cancel();
    if let Some(p) = &process {
        p.kill();
    }
    why
}

/// Its tools, as the registry offers them.
async fn list(
    server: &Arc<Server>,
    peer: &Peer<RoleClient>,
) -> Result<Vec<Arc<dyn crate::tools::Tool>>, String> {
    let timeout = Duration::from_secs(server.config.start_timeout_secs);
    match tokio::time::timeout(timeout, peer.list_all_tools()).await {
        Err(_) => Err(format!(
            "listing its tools took over {} s",
            timeout.as_secs()
        )),
        Ok(Err(e)) => Err(format!("listing its tools failed: {e}")),
        Ok(Ok(tools)) => Ok(offered(server, tools)),
    }
}

/// How the server's process ended (never, for an HTTP server).
async fn exited(process: &mut Option<crate::sandbox::Serving>) -> String {
    match process {
        Some(p) => {
            let status = match p.wait().await {
                Ok(status) => status.to_string(),
                Err(e) => e.to_string(),
            };
            if p.out_of_memory() {
                format!("{} ({status})", super::OUT_OF_MEMORY)
            } else {
                format!("the server exited ({status})")
            }
        }
        None => std::future::pending().await,
    }
}
