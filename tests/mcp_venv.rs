//! MCP servers installed as people install them: the reference time
//! server as a console script in a virtual environment made by the Python
//! that is here (pyenv's on this machine, so the venv's `python` links into
//! `~/.pyenv/versions/…`), configured with only its command, as its README
//! does. hearth shows the venv and its base Python read-only itself; the
//! packages folder is listed in `reads` only because the tests keep the
//! pinned packages outside the venv. A command that is not there is named.
//! Under bubblewrap and Landlock.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use hearth::mcp::ServerState;

use crate::support::Parrot;
use crate::support::mcp::{config_text, mcp_daemon, root};

/// A venv at `dir` made by `python3`, seeing the pinned packages, with
/// `mcp-server-time` as the console script pip would write.
fn venv_with_time_server(dir: &Path) -> std::path::PathBuf {
    let made = Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(dir)
        .status()
        .unwrap();
    assert!(made.success());
    let packages = root().join("target/pyclients");
    assert!(
        packages.join(".installed").exists(),
        "run `make test-clients`"
    );
    let site = Command::new(dir.join("bin/python"))
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .unwrap();
    let site = String::from_utf8(site.stdout).unwrap();
    std::fs::write(
        Path::new(site.trim()).join("pinned.pth"),
        format!("{}\n", packages.display()),
    )
    .unwrap();
    let script = dir.join("bin/mcp-server-time");
    std::fs::write(
        &script,
        format!(
            "#!{}\nimport sys\nfrom mcp_server_time import main\nsys.exit(main())\n",
            dir.join("bin/python").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_in_a_venv_starts_from_its_command_alone_under_both_sandboxes() {
    let _serial = super::sandbox::SERIAL.lock().await;
    let venvs = tempfile::tempdir().unwrap();
    let script = venv_with_time_server(&venvs.path().join("venv"));
    let python = std::fs::canonicalize(venvs.path().join("venv/bin/python")).unwrap();
    eprintln!("the venv's python is {}", python.display());
    let packages = root().join("target/pyclients");
    for sandbox in ["bubblewrap", "landlock"] {
        let server = format!(
            "[mcp.servers.time]\ncommand = {:?}\nargs = [\"--local-timezone\", \"UTC\"]\nreads = [{:?}]\n",
            script.display().to_string(),
            packages.display().to_string(),
        );
        let missing = "[mcp.servers.gone]\ncommand = \"no-such-mcp-server-41\"\n".to_string();
        let home = tempfile::tempdir().unwrap();
        let text = config_text(sandbox, &[server, missing]);
        let d = mcp_daemon(home.path(), &text, Arc::new(Parrot::default())).await;
        let status = d.hub.status();
        let time = status.iter().find(|s| s.name == "time").unwrap();
        assert_eq!(time.state, ServerState::Ready, "{sandbox}: {status:?}");
        assert!(
            time.tools
                .iter()
                .any(|(t, _)| t == "time__get_current_time"),
            "{status:?}"
        );
        let gone = status.iter().find(|s| s.name == "gone").unwrap();
        match &gone.state {
            ServerState::Failed(why) => assert!(
                why.contains("no such file") && why.contains("no-such-mcp-server-41"),
                "{why}"
            ),
            other => panic!("{sandbox}: {other:?}"),
        }
        d.hub.stop();
    }
}
