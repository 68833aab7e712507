//! `npx -y PACKAGE`: a server configured as its README writes it.
//!
//! Most MCP servers tell people to run them through `npx`, which downloads
//! the package on its first run. Inside the sandbox a server has no network
//! unless its section says `network = true`, so npm waited on a registry it
//! could not reach and the server never answered. Here the download is a
//! step of its own: the first time (or when the packages named change) the
//! packages are fetched into the server's own npm cache (its folder is its
//! `HOME`, so the cache is private) by `npx --call true` in the same sandbox
//! with the network allowed, and only for that step; the server itself then
//! runs with npm offline and the network as its section says. A package
//! that cannot be fetched is named with npm's own reason.

use std::path::Path;
use std::time::Duration;

use tokio::io::AsyncReadExt as _;

use super::McpError;
use crate::sandbox::Sandbox;

/// How long the download may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(300);
/// The file in the server's folder that records what was fetched.
const FETCHED: &str = ".hearth-fetched";
/// npm's last words kept for the error.
const REASON_CHARS: usize = 600;

/// npm's settings for the run after the fetch: from the cache only.
pub const OFFLINE: &[(&str, &str)] = &[
    ("npm_config_offline", "true"),
    ("npm_config_update_notifier", "false"),
];

/// The packages an `npx` command runs, when `program` is `npx`: those of
/// `--package`/`-p`, else its first word that is not an option.
pub fn npx_packages(program: &Path, args: &[String]) -> Option<Vec<String>> {
    if program.file_name()? != "npx" {
        return None;
    }
    let mut packages = Vec::new();
    let mut first = None;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word == "--" {
            first = words.next();
            break;
        } else if word == "-p" || word == "--package" {
            packages.extend(words.next().cloned());
        } else if let Some(p) = word.strip_prefix("--package=") {
            packages.push(p.to_string());
        } else if word == "-c" || word == "--call" {
            words.next();
        } else if !word.starts_with('-') {
            first = Some(word);
            break;
        }
    }
    if packages.is_empty() {
        packages.push(first?.clone());
    }
    Some(packages)
}

/// For an `npx` server without the network: its packages fetched (with
/// the network for that step only), and `env` with npm offline. Any other
/// server's `env` as it is.
pub async fn prepare(
    name: &str,
    program: &str,
    args: &[String],
    mut env: Vec<(String, String)>,
    network: bool,
    sandbox: &Sandbox,
    folder: &Path,
) -> Result<Vec<(String, String)>, McpError> {
    let Some(packages) = npx_packages(Path::new(program), args).filter(|_| !network) else {
        return Ok(env);
    };
    let fetcher = sandbox.with_network(true);
    fetch(name, program, &packages, &env, &fetcher, folder).await?;
    let offline: Vec<(String, String)> = OFFLINE
        .iter()
        .filter(|(k, _)| !env.iter().any(|(set, _)| set == k))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    env.extend(offline);
    Ok(env)
}

/// Fetches `packages` into the server's cache with the network allowed,
/// unless the same packages were fetched before. `env` is the server's
/// (a private registry's settings apply to the download too).
async fn fetch(
    name: &str,
    program: &str,
    packages: &[String],
    env: &[(String, String)],
    sandbox: &Sandbox,
    folder: &Path,
) -> Result<(), McpError> {
    let mut args = vec!["--yes".to_string()];
    args.extend(packages.iter().map(|p| format!("--package={p}")));
    args.extend(["--call".to_string(), "true".to_string()]);
    let record = format!("{program}\n{}\n", args.join("\n"));
    let marker = folder.join(FETCHED);
    if std::fs::read_to_string(&marker).is_ok_and(|r| r == record) {
        return Ok(());
    }
    tracing::info!(
        server = name,
        ?packages,
        "fetching the server's packages with npm, network allowed for this step only"
    );
    let failed = |why: String| McpError::Fetch {
        packages: packages.join(" "),
        why,
    };
    let mut process = sandbox
        .spawn(program, &args, env)
        .map_err(|e| failed(e.to_string()))?;
    let (stdin, _, stderr) = process.take_io();
    drop(stdin);
    let waited = tokio::time::timeout(FETCH_TIMEOUT, async {
        // The first 64 KiB are kept; the rest is read and dropped, so a
        // chatty npm never blocks on a full pipe.
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
        return Err(failed(reason(&String::from_utf8_lossy(&said))));
    }
    std::fs::write(&marker, record).map_err(|source| McpError::Folder {
        path: marker,
        source,
    })?;
    Ok(())
}

/// npm's first error lines (`npm error …`), else its last words, cut.
fn reason(said: &str) -> String {
    let errors: Vec<&str> = said
        .lines()
        .filter_map(|l| l.strip_prefix("npm error "))
        .filter(|l| l.trim().len() > 3 && !l.contains("complete log"))
        .take(2)
        .collect();
    let text = if errors.is_empty() {
        said.trim().to_string()
    } else {
        errors.join("; ")
    };
    if text.is_empty() {
        return "npm said nothing".into();
    }
    crate::tools::cap(&text, REASON_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn the_packages_npx_would_run_are_read_as_npm_reads_them() {
        let npx = Path::new("/usr/bin/npx");
        let cases = [
            (
                "-y @modelcontextprotocol/server-filesystem /home/ada",
                vec!["@modelcontextprotocol/server-filesystem"],
            ),
            (
                "--yes -q mcp-weather@1.2.0 --port 3",
                vec!["mcp-weather@1.2.0"],
            ),
            ("-p a -p b@2 serve --x", vec!["a", "b@2"]),
            ("--package=a -y serve", vec!["a"]),
            ("-y -- pkg -y", vec!["pkg"]),
        ];
        for (args, expected) in cases {
            assert_eq!(
                npx_packages(npx, &words(args)),
                Some(expected.into_iter().map(String::from).collect()),
                "{args}"
            );
        }
        assert_eq!(npx_packages(npx, &words("-y")), None);
        assert_eq!(
            npx_packages(Path::new("/usr/bin/node"), &words("server.js")),
            None
        );
    }

    #[test]
    fn npm_s_reason_is_its_error_lines() {
        let said = "npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/x\nnpm error 404\nnpm error A complete log of this run can be found in: /x.log\n";
        assert_eq!(
            reason(said),
            "code E404; 404 Not Found - GET https://registry.npmjs.org/x"
        );
        assert_eq!(reason(""), "npm said nothing");
    }
}
