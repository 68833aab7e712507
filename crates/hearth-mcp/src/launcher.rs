//! `npx -y PACKAGE` and `uvx PACKAGE`: a server configured as its README
//! writes it.
//!
//! Most MCP servers tell people to run them through `npx` or `uvx`, which
//! download the package on its first run. Inside the sandbox a server has
//! no network unless its section says `network = true`, so npm waited on a
//! registry it could not reach and the server never answered. Here the
//! download is a step of its own: the first time (or when the packages
//! named change) the packages are fetched into the server's own cache (its
//! folder is its `HOME`, so npm's and uv's caches are private) by the same
//! launcher with a command that runs nothing ([`packages::fetch`]), in the
//! same sandbox with the network allowed, and only for that step; the
//! server itself then runs with its package manager offline and the network
//! as its section says. A package that cannot be fetched is named with the
//! package manager's own reason.

use std::path::Path;
use std::time::Duration;

use tokio::io::AsyncReadExt as _;

use super::McpError;
use super::packages::{self, Fetch};
use crate::sandbox::Sandbox;

/// How long the download may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(300);
/// The file in the server's folder that records what was fetched.
const FETCHED: &str = ".hearth-fetched";
/// The package manager's last words kept for the error.
const REASON_CHARS: usize = 600;

/// For an `npx` or `uvx` server without the network: its packages fetched
/// (with the network for that step only), and `env` with its package
/// manager offline. Any other server's `env` as it is.
pub async fn prepare(
    name: &str,
    program: &str,
    args: &[String],
    env: Vec<(String, String)>,
    network: bool,
    sandbox: &Sandbox,
    folder: &Path,
) -> Result<Vec<(String, String)>, McpError> {
    let Some(plan) = packages::fetch(Path::new(program), args).filter(|_| !network) else {
        return Ok(env);
    };
    let fetcher = sandbox.with_network(true);
    let fetching = unless_set(&env, plan.manager.fetching());
    fetch(name, program, &plan, &fetching, &fetcher, folder).await?;
    Ok(unless_set(&fetching, plan.manager.offline()))
}

/// `env` with each of `more` that it does not set already.
fn unless_set(env: &[(String, String)], more: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env = env.to_vec();
    for (k, v) in more {
        if !env.iter().any(|(set, _)| set == k) {
            env.push((k.to_string(), v.to_string()));
        }
    }
    env
}

/// Fetches the packages of `plan` into the server's cache with the
/// network allowed, unless the same packages were fetched before. `env`
/// is the server's (a private registry's settings apply to the download
/// too).
async fn fetch(
    name: &str,
    program: &str,
    plan: &Fetch,
    env: &[(String, String)],
    sandbox: &Sandbox,
    folder: &Path,
) -> Result<(), McpError> {
    let Fetch {
        manager,
        packages,
        args,
    } = plan;
    let record = format!("{program}\n{}\n", args.join("\n"));
    let marker = folder.join(FETCHED);
    if std::fs::read_to_string(&marker).is_ok_and(|r| r == record) {
        return Ok(());
    }
    tracing::info!(
        server = name,
        ?packages,
        manager = manager.name(),
        "fetching the server's packages, network allowed for this step only"
    );
    let failed = |why: String| McpError::Fetch {
        manager: manager.name(),
        packages: packages.join(" "),
        why,
    };
    let mut process = sandbox
        .spawn(program, args, env)
        .map_err(|e| failed(e.to_string()))?;
    let (stdin, _, stderr) = process.take_io();
    drop(stdin);
    let waited = tokio::time::timeout(FETCH_TIMEOUT, async {
        // The first 64 KiB are kept; the rest is read and dropped, so a
        // chatty package manager never blocks on a full pipe.
        let mut said = Vec::new();
        if let Some(mut stderr) = stderr {
            let mut chunk = [0u8; 8192];
            while let Ok(n @ 1..) = stderr.read(&mut chunk).await {
                let room = (64usize << 10).saturating_sub(said.len());
                said.extend_from_slice(&chunk[..n.min(room)]);
            }
        }
        (process.wait().await, said)
    })
    .await;
    let (status, said) = match waited {
        Err(_) => {
            process.kill();
            return Err(failed(format!(
                "no end within {} s",
                FETCH_TIMEOUT.as_secs()
            )));
        }
        Ok((status, said)) => (status.map_err(|e| failed(e.to_string()))?, said),
    };
    if !status.success() {
        return Err(failed(reason(*manager, &String::from_utf8_lossy(&said))));
    }
    std::fs::write(&marker, record).map_err(|source| McpError::Folder {
        path: marker,
        source,
    })?;
    Ok(())
}

/// The package manager's first error lines, else its last words, cut.
fn reason(manager: packages::Manager, said: &str) -> String {
    let errors = manager.error_lines(said);
    let text = if errors.is_empty() {
        said.trim().to_string()
    } else {
        errors.join("; ")
    };
    if text.is_empty() {
        return format!("{} said nothing", manager.name());
    }
    crate::tools::cap(&text, REASON_CHARS)
}
