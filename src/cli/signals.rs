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

/// The stop signals, caught from the moment [`catch`] returns.
pub struct Stops(Option<[tokio::signal::unix::Signal; 3]>);

/// Catches SIGINT, SIGTERM and SIGHUP now (a signal that arrives from here
/// on is never the default kill). Where the handlers cannot be set up,
/// only Ctrl-C is caught, and the log says so.
pub fn catch() -> Stops {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) {
        (Ok(int), Ok(term), Ok(hup)) => {
            tracing::debug!("stop signals are caught");
            Stops(Some([int, term, hup]))
        }
        _ => {
            tracing::warn!("cannot catch SIGTERM and SIGHUP here; only Ctrl-C is caught");
            Stops(None)
        }
    }
}

impl Stops {
    /// The next stop signal.
    pub async fn next(&mut self) -> Stop {
        match &mut self.0 {
            Some([int, term, hup]) => tokio::select! {
                _ = int.recv() => Stop::Interrupt,
                _ = term.recv() => Stop::Terminate,
                _ = hup.recv() => Stop::Hangup,
            },
            None => {
                let _ = tokio::signal::ctrl_c().await;
                Stop::Interrupt
            }
        }
    }
}

/// Waits for the next stop signal (caught from the first poll on).
pub async fn stop() -> Stop {
    catch().next().await
}
