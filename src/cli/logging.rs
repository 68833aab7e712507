//! Logging to stderr through `tracing`, and the latest warnings and errors
//! kept for the web page ([`RecentErrors`]).
//!
//! `RUST_LOG` wins when set; otherwise `--verbose` means debug for hearth and
//! llama.cpp, and the config's `[log] level` applies. Either may name parts
//! by their old paths ([`super::log_targets`]).

use std::sync::Arc;

use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use super::log_targets::translate;
use crate::metrics::errors::{Capture, RecentErrors};

/// Starts logging; the warnings and errors logged from now on.
pub fn init(verbose: bool, level: &str) -> Arc<RecentErrors> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.is_empty() => {
            EnvFilter::try_new(translate(&spec)).unwrap_or_else(|_| EnvFilter::new("warn"))
        }
        _ if verbose => EnvFilter::new("debug"),
        _ => EnvFilter::try_new(translate(level)).unwrap_or_else(|_| EnvFilter::new("warn")),
    };
    let recent = Arc::new(RecentErrors::default());
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(true)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(filter);
    let kept = Capture(recent.clone()).with_filter(LevelFilter::WARN);
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(kept)
        .try_init();
    recent
}
