//! A tool server's memory is capped where a `memory` cgroup can be made
//! (as root here): what its whole process tree holds, not one process's
//! address space. A server whose child holds more than its `memory_mib`
//! loses that child; one that holds it itself is ended, and its status
//! says why and which key to raise. The control beside it, with room,
//! holds the same amount. Under bubblewrap and Landlock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hearth::mcp::ServerState;
use hearth::sandbox::memory::MemoryRoot;
use serde_json::json;

use crate::support::mcp::{config_text, hostile, mcp_daemon};
use crate::support::{Parrot, call};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_over_its_memory_cap_is_ended_and_named_one_within_it_runs() {
    let _serial = super::sandbox::SERIAL.lock().await;
    let capped = MemoryRoot::find().is_some();
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    assert!(
        capped || !root,
        "root here, and no memory cgroup could be made"
    );
    if !capped {
        eprintln!("no memory cgroup can be made as this user: only RLIMIT_AS applies");
        return;
    }
    for sandbox in ["bubblewrap", "landlock"] {
        let servers = [
            hostile("small", "hungry", "memory_mib = 160\napprove = \"never\""),
            hostile("roomy", "hungry", "memory_mib = 768\napprove = \"never\""),
        ];
        let home = tempfile::tempdir().unwrap();
        let mut d = mcp_daemon(
            home.path(),
            &config_text(sandbox, &servers),
            Arc::new(Parrot::default()),
        )
        .await;
        let status = d.hub.status();
        assert!(
            status.iter().all(|s| s.state == ServerState::Ready),
            "{sandbox}: {status:?}"
        );
        // Control: with room, a child holds 400 MiB.
        let roomy = d.say("ada", &call("roomy__eat", json!({"mib": 400}))).await;
        assert!(roomy.contains("HELD"), "{sandbox}: {roomy}");
        // Over the cap: the child is ended, the server answers on.
        let small = d.say("ada", &call("small__eat", json!({"mib": 400}))).await;
        assert!(
            !small.contains("HELD") && small.contains("the child died (code -9)"),
            "{sandbox}: {small}"
        );
        let fine = d.say("ada", &call("small__eat", json!({"mib": 8}))).await;
        assert!(fine.contains("HELD"), "{sandbox}: {fine}");
        // The server itself over the cap: ended, and its status says why.
        let pid = d.hub.status()[1].pid;
        let gone = d
            .say(
                "ada",
                &call("small__eat", json!({"mib": 400, "here": true})),
            )
            .await;
        assert!(!gone.contains("HELD HERE"), "{sandbox}: {gone}");
        let started = Instant::now();
        let mut seen = Vec::new();
        let named = loop {
            let status = d.hub.status();
            let small = status.iter().find(|s| s.name == "small").unwrap();
            if let ServerState::Failed(why) = &small.state {
                break why.clone();
            }
            seen.push(format!("{:?} {:?}", small.state, small.pid));
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{sandbox}: {seen:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(
            named.contains(hearth::mcp::OUT_OF_MEMORY) && named.contains("memory_mib"),
            "{sandbox}: {named}"
        );
        assert_ne!(pid, None);
        d.hub.stop();
        d.daemon.stop().await;
    }
}
