//! An MCP server configured as its README writes it: `npx -y PACKAGE`.
//! The npm reference server, at the version `make test-mcp` pins, with no
//! `reads` and no `network`: hearth fetches the package once, in the
//! sandbox with the network allowed for that step only, into the server's
//! own cache, then runs it with npm offline; its tool answers. A package
//! that does not exist is named with npm's reason. A second start finds the
//! package fetched and does not fetch again. Under bubblewrap and Landlock.
//! The first start needs the npm registry, as `npx` itself does.

use std::sync::Arc;

use hearth::channels::Answer;
use hearth::mcp::ServerState;
use serde_json::json;

use crate::support::mcp::{config_text, failure, mcp_daemon};
use crate::support::{Parrot, call};

const PACKAGE: &str = "@modelcontextprotocol/server-everything@2026.8.31";

fn servers() -> Vec<String> {
    vec![
        format!("[mcp.servers.everything]\ncommand = \"npx\"\nargs = [\"-y\", \"{PACKAGE}\"]\nstart_timeout_secs = 30\n"),
        "[mcp.servers.nothing]\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-no-such-thing-41\"]\n".to_string(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_npx_server_is_fetched_once_then_runs_offline_under_both_sandboxes() {
    let _serial = super::sandbox::SERIAL.lock().await;
    for sandbox in ["bubblewrap", "landlock"] {
        let home = tempfile::tempdir().unwrap();
        let text = config_text(sandbox, &servers());
        let mut d = mcp_daemon(home.path(), &text, Arc::new(Parrot::default())).await;
        let status = d.hub.status();
        let everything = status.iter().find(|s| s.name == "everything").unwrap();
        assert_eq!(
            everything.state,
            ServerState::Ready,
            "{sandbox}: {status:?}"
        );
        let why = failure(&d.hub, "nothing").await;
        assert!(
            why.contains("npm could not fetch @modelcontextprotocol/server-no-such-thing-41")
                && why.contains("404"),
            "{sandbox}: {why}"
        );
        d.channel.answer_approvals([Some(Answer::Once)]);
        let echo = d
            .say(
                "ada",
                &call("everything__echo", json!({"message": "via npx"})),
            )
            .await;
        assert!(echo.contains("Echo: via npx"), "{sandbox}: {echo}");
        d.hub.stop();
        d.daemon.stop().await;
        let folder = d.config.data_dir.join("mcp/everything");
        let marker = folder.join(".hearth-fetched");
        let fetched = std::fs::read_to_string(&marker).unwrap();
        let written = std::fs::metadata(&marker).unwrap().modified().unwrap();
        assert!(fetched.contains(PACKAGE), "{fetched}");
        // The cache is the server's own: in its folder, not the user's.
        assert!(folder.join(".npm/_npx").is_dir(), "{sandbox}");

        // Started again with the registry out of reach (a proxy that is not
        // there): fetched already, it is not fetched again (its record is
        // not written again) and runs from the cache.
        let offline = text.replace(
            "start_timeout_secs = 30\n",
            "start_timeout_secs = 30\nenv = { npm_config_https_proxy = \"http://127.0.0.1:9\", npm_config_proxy = \"http://127.0.0.1:9\" }\n",
        );
        let d = mcp_daemon(home.path(), &offline, Arc::new(Parrot::default())).await;
        let status = d.hub.status();
        let everything = status.iter().find(|s| s.name == "everything").unwrap();
        assert_eq!(
            everything.state,
            ServerState::Ready,
            "{sandbox} again: {status:?}"
        );
        let rewritten = std::fs::metadata(&marker).unwrap().modified().unwrap();
        assert_eq!(written, rewritten, "{sandbox}: fetched again");
        d.hub.stop();
        d.daemon.stop().await;
    }
}
