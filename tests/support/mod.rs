//! Shared by the integration tests (`mod support;` in a test file): fakes of
//! the services hearth talks to, each speaking the real protocol on
//! 127.0.0.1, and helpers that build a runtime for the pipeline tests.
#![allow(dead_code)]
// Test helpers fail loudly: an unwrap is the clearest report here.
#![allow(clippy::unwrap_used)]

pub mod api_daemon;
pub mod daemon_process;
pub mod hub_fake;
pub mod lms_fake;
pub mod mail;
pub mod mcp;
pub mod parrot;
pub mod pipeline;
pub mod radicale;
pub mod slow_model;
pub mod synapse;
pub mod telegram_bot;
pub mod telegram_fake;
pub mod typist;
pub mod ways_in;

#[allow(unused_imports)]
pub use parrot::*;
#[allow(unused_imports)]
pub use pipeline::*;
#[allow(unused_imports)]
pub use typist::*;

/// `hearth --config CONFIG ARGS` in the sandbox, run off the test's runtime.
pub async fn hearth_with(
    s: &crate::common::Sandbox,
    config: &std::path::Path,
    args: &[&str],
) -> std::process::Output {
    let mut cmd = s.hearth_process();
    cmd.arg("--config").arg(config).args(args);
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

/// What a command printed, stdout then stderr; never a panic.
pub fn said(out: &std::process::Output) -> String {
    let t = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    crate::common::assert_no_panic(&t);
    t
}

/// Whether a file named `name` lies anywhere under `dir`.
pub fn file_under(dir: &std::path::Path, name: &str) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            let path = e.path();
            path.file_name().is_some_and(|n| n == name)
                || (path.is_dir() && file_under(&path, name))
        })
}
