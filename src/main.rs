//! The `hearth` binary: parse the command line, run it, report errors in one line.

use std::process::ExitCode;

use clap::Parser;
use hearth::cli::{Cli, run};

fn main() -> ExitCode {
    // A user never sees a Rust backtrace: a bug is reported in one line.
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown cause".to_string());
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("hearth: internal error: {message}{place}; please report it");
    }));

    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("hearth: error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hearth: error: {}", describe(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, leaving out a cause that the
/// message before it already quotes.
fn describe(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let part = cause.to_string();
        if !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
