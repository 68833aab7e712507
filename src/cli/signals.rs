//! The signals that stop a command run by hand (`ask`, `chat`, `acp`), so
//! that each one is caught, named on stderr and ends with the shell's exit
//! code for it (128 + its number), never in silence.

use std::process::ExitCode;

/// A stop signal that arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Interrupt,
    Terminate,
    Hangup,
}

impl Stop {
    pub fn name(self) -> &'static str {
        match self {
            Self::Interrupt => "SIGINT (Ctrl-C)",
            Self::Terminate => "SIGTERM",
            Self::Hangup => "SIGHUP (the terminal closed)",
        }
    }

    pub fn signal(self) -> i32 {
        match self {
            Self::Interrupt => libc::SIGINT,
            Self::Terminate => libc::SIGTERM,
            Self::Hangup => libc::SIGHUP,
        }
    }

    /// 128 + the signal's number, as a shell reports a command it killed.
    pub fn exit_code(self) -> ExitCode {
        ExitCode::from(128 + self.signal() as u8)
    }
}

/// Waits for SIGINT, SIGTERM or SIGHUP. Where the handlers cannot be set
/// up, waits for Ctrl-C alone (and says so once in the log).
pub async fn stop() -> Stop {
    use tokio::signal::unix::{SignalKind, signal};
    let handlers = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    );
    match handlers {
        (Ok(mut int), Ok(mut term), Ok(mut hup)) => tokio::select! {
            _ = int.recv() => Stop::Interrupt,
            _ = term.recv() => Stop::Terminate,
            _ = hup.recv() => Stop::Hangup,
        },
        _ => {
            tracing::warn!("cannot catch SIGTERM and SIGHUP here; only Ctrl-C is caught");
            let _ = tokio::signal::ctrl_c().await;
            Stop::Interrupt
        }
    }
}
