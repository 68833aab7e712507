//! Starting one server: a contained command on stdio, or a Streamable HTTP
//! endpoint; then `initialize`, within the server's start timeout.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::McpError;
use super::handler::Handler;
use super::launcher;
use super::stderr::{self, StderrTail};
use crate::config::{McpServerConfig, McpTransport};
use crate::sandbox::{Limits, Sandbox, Serving};

/// The longest message a server may send: longer ones are dropped unread,
/// so a server that floods cannot grow hearth's memory without bound.
pub(super) const MAX_MESSAGE_BYTES: usize = 4 << 20;

/// A live connection, and the process behind it when hearth started one.
pub(super) struct Connection {
    pub(super) client: RunningService<RoleClient, Handler>,
    pub(super) process: Option<Serving>,
}

/// What a server's process may use: a long-lived program (a runtime such
/// as Node reserves far more address space than it uses, so the address
/// space is wide and what the tree holds is capped at `memory_mib`).
pub(super) fn server_limits(memory_mib: u64) -> Limits {
    Limits {
        cpu_secs: 24 * 3600,
        memory_bytes: 16 << 30,
        resident_bytes: Some(memory_mib << 20),
        ..Limits::default()
    }
}

/// Connects to the server `name` as `config` says; a stdio server runs
/// in `base` narrowed to its own folder under `data_dir/mcp/`.
pub(super) async fn connect(
    name: &str,
    config: &McpServerConfig,
    base: &Sandbox,
    data_dir: &Path,
    (handler, tail): (Handler, &StderrTail),
) -> Result<Connection, McpError> {
    let timeout = Duration::from_secs(config.start_timeout_secs);
    match &config.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            reads,
            network,
            memory_mib,
        } => {
            let (sandbox, program) = contained(
                name,
                command,
                env,
                reads,
                (*network, *memory_mib),
                base,
                data_dir,
            )?;
            let env: Vec<(String, String)> =
                env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let folder = data_dir.join("mcp").join(name);
            let env =
                launcher::prepare(name, &program, args, env, *network, &sandbox, &folder).await?;
            let (process, stdin, stdout) =
                spawn_logged((name, tail), command, &sandbox, &program, args, &env)?;
            let transport =
                AsyncRwTransport::new_client(stdout, stdin).with_max_line_length(MAX_MESSAGE_BYTES);
            let client = match initialize(handler.serve(transport), timeout).await {
                Err(_) if process.out_of_memory() => return Err(McpError::OutOfMemory),
                started => started?,
            };
            Ok(Connection {
                client,
                process: Some(process),
            })
        }
        McpTransport::Http {
            url,
            headers,
            bearer,
        } => {
            let mut custom = HashMap::new();
            for (key, value) in headers {
                let header = axum::http::HeaderName::try_from(key.as_str())
                    .map_err(|_| McpError::Header(key.clone()))?;
                let value = axum::http::HeaderValue::try_from(value.expose())
                    .map_err(|_| McpError::Header(key.clone()))?;
                custom.insert(header, value);
            }
            let mut settings =
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom);
            settings.max_sse_event_size = MAX_MESSAGE_BYTES;
            settings.max_json_response_size = MAX_MESSAGE_BYTES;
            if let Some(token) = bearer {
                settings = settings.auth_header(token.expose());
            }
            tls_provider();
            let transport = StreamableHttpClientTransport::from_config(settings);
            let client = initialize(handler.serve(transport), timeout).await?;
            Ok(Connection {
                client,
                process: None,
            })
        }
    }
}

/// Starts `program` contained, its stderr into the log and `tail`: the
/// process, its stdin and its stdout.
fn spawn_logged(
    (name, tail): (&str, &StderrTail),
    command: &str,
    sandbox: &Sandbox,
    program: &str,
    args: &[String],
    env: &[(String, String)],
) -> Result<
    (
        Serving,
        tokio::process::ChildStdin,
        tokio::process::ChildStdout,
    ),
    McpError,
> {
    let mut process = sandbox
        .spawn(program, args, env)
        .map_err(|source| McpError::Spawn {
            command: command.to_string(),
            source,
        })?;
    let (stdin, stdout, stderr) = process.take_io();
    if let Some(stderr) = stderr {
        tail.clear();
        tokio::spawn(stderr::follow(name.to_string(), stderr, tail.clone()));
    }
    match (stdin, stdout) {
        (Some(stdin), Some(stdout)) => Ok((process, stdin, stdout)),
        _ => Err(McpError::Initialize(
            "its stdin or stdout is missing".into(),
        )),
    }
}

/// The sandbox a stdio server runs in (its own folder under
/// `data_dir/mcp/`, `reads` and what its program needs shown read-only),
/// and the program to run.
fn contained(
    name: &str,
    command: &str,
    env: &std::collections::BTreeMap<String, String>,
    reads: &[std::path::PathBuf],
    (network, memory_mib): (bool, u64),
    base: &Sandbox,
    data_dir: &Path,
) -> Result<(Sandbox, String), McpError> {
    let folder = data_dir.join("mcp").join(name);
    crate::file_modes::make_private_dir(&folder).map_err(|source| McpError::Folder {
        path: folder.clone(),
        source,
    })?;
    let path_var = env
        .get("PATH")
        .cloned()
        .or_else(|| std::env::var("PATH").ok());
    let found = super::resolve::resolve(command, path_var.as_deref(), dirs::home_dir().as_deref())
        .map_err(McpError::Command)?;
    let mut reads = reads.to_vec();
    let added: Vec<_> = found
        .reads
        .into_iter()
        .filter(|r| !reads.contains(r))
        .collect();
    if !added.is_empty() {
        tracing::info!(server = name, shown = ?added, "shown read-only so that its program can run");
    }
    reads.extend(added);
    let sandbox = base.for_server(&folder, network, reads, server_limits(memory_mib));
    Ok((sandbox, found.program.to_string_lossy().into_owned()))
}

async fn initialize<E: std::fmt::Display>(
    start: impl Future<Output = Result<RunningService<RoleClient, Handler>, E>>,
    timeout: Duration,
) -> Result<RunningService<RoleClient, Handler>, McpError> {
    match tokio::time::timeout(timeout, start).await {
        Err(_) => Err(McpError::StartTimeout(timeout.as_secs())),
        Ok(Err(e)) => Err(McpError::Initialize(e.to_string())),
        Ok(Ok(client)) => Ok(client),
    }
}

/// The HTTP client's TLS uses ring, as the rest of hearth does.
fn tls_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
