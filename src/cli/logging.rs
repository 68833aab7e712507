//! Logging to stderr through `tracing`.
//!
//! `RUST_LOG` wins when set; otherwise `--verbose` means debug for hearth and
//! llama.cpp, and the config's `[log] level` applies.

use tracing_subscriber::EnvFilter;

pub fn init(verbose: bool, level: &str) {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.is_empty() => {
            EnvFilter::try_new(spec).unwrap_or_else(|_| EnvFilter::new("warn"))
        }
        _ if verbose => EnvFilter::new("debug"),
        _ => EnvFilter::try_new(level).unwrap_or_else(|_| EnvFilter::new("warn")),
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(true)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
