//! An MCP server configured as Python servers' READMEs write it: `uvx
//! PACKAGE`. The reference time server from PyPI, at the version `make
//! test-clients` pins, with no `reads` and no `network`: hearth fetches it
//! once, in the sandbox with the network allowed for that step only, into
//! the server's own uv cache, then runs it with uv offline; its tool
//! answers. A package that does not exist is named with uv's reason. A
//! second start, with the index out of reach, does not fetch again. Under
//! bubblewrap and Landlock. The first start needs the Python package index,
//! as `uvx` itself does. `uvx` is the one `make test-clients` installs,
//! named by its path (as found on `PATH` otherwise).

use std::path::PathBuf;
use std::sync::Arc;

use hearth::channels::Answer;
use hearth::mcp::ServerState;
use serde_json::json;

use crate::support::mcp::{config_text, failure, mcp_daemon};
use crate::support::{Parrot, call};

const PACKAGE: &str = "mcp-server-time==2026.10.19";

fn uvx() -> PathBuf {
    let uvx = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/pyclients/bin/uvx");
    assert!(
        uvx.is_file(),
        "{} is missing: run `make test-clients`",
        uvx.display()
    );
    uvx
}

fn servers(uvx: &std::path::Path) -> Vec<String> {
    let uvx = uvx.display();
    vec![
        format!(
            "[mcp.servers.time]\ncommand = \"{uvx}\"\nargs = [\"{PACKAGE}\"]\nstart_timeout_secs = 30\n"
        ),
        format!(
            "[mcp.servers.nothing]\ncommand = \"{uvx}\"\nargs = [\"mcp-server-no-such-thing-41\"]\n"
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uvx_server_is_fetched_once_then_runs_offline_under_both_sandboxes() {
    let _serial = super::sandbox::SERIAL.lock().await;
    let uvx = uvx();
    for sandbox in ["bubblewrap", "landlock"] {
        let home = tempfile::tempdir().unwrap();
        let text = config_text(sandbox, &servers(&uvx));
        let mut d = mcp_daemon(home.path(), &text, Arc::new(Parrot::default())).await;
        let status = d.hub.status();
        let time = status.iter().find(|s| s.name == "time").unwrap();
        assert_eq!(time.state, ServerState::Ready, "{sandbox}: {status:?}");
        let why = failure(&d.hub, "nothing").await;
        assert!(
            why.contains("uv could not fetch mcp-server-no-such-thing-41")
                && why.contains("not found in the package registry"),
            "{sandbox}: {why}"
        );
        d.channel.answer_approvals([Some(Answer::Once)]);
        let now = d
            .say(
                "ada",
                &call("time__get_current_time", json!({"timezone": "UTC"})),
            )
            .await;
        assert!(now.contains("\"timezone\": \"UTC\""), "{sandbox}: {now}");
        d.hub.stop();
        d.daemon.stop().await;
        let folder = d.config.data_dir.join("mcp/time");
        let marker = folder.join(".hearth-fetched");
        let fetched = std::fs::read_to_string(&marker).unwrap();
        let written = std::fs::metadata(&marker).unwrap().modified().unwrap();
        assert!(fetched.contains(PACKAGE), "{fetched}");
        // The cache is the server's own: in its folder, not the user's.
        assert!(folder.join(".cache/uv").is_dir(), "{sandbox}");

        // Started again with the index out of reach (a proxy that is not
        // there): fetched already, it is not fetched again (its record is
        // not written again) and runs from the cache, uv offline.
        let offline = text.replace(
            "start_timeout_secs = 30\n",
            "start_timeout_secs = 30\nenv = { HTTPS_PROXY = \"http://127.0.0.1:9\", HTTP_PROXY = \"http://127.0.0.1:9\", ALL_PROXY = \"http://127.0.0.1:9\" }\n",
        );
        let d = mcp_daemon(home.path(), &offline, Arc::new(Parrot::default())).await;
        let status = d.hub.status();
        let time = status.iter().find(|s| s.name == "time").unwrap();
        assert_eq!(
            time.state,
            ServerState::Ready,
            "{sandbox} again: {status:?}"
        );
        let rewritten = std::fs::metadata(&marker).unwrap().modified().unwrap();
        assert_eq!(written, rewritten, "{sandbox}: fetched again");
        d.hub.stop();
        d.daemon.stop().await;
    }
}
