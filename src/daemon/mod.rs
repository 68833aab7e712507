//! `hearth daemon`: every configured channel, supervised, feeding one
//! dispatcher that runs the pipeline; SIGINT/SIGTERM stop it gracefully.
//!
//! [`Daemon`] is the assembled whole, also for tests and the bench:
//! build a [`Runtime`](crate::pipeline::Runtime), hand it to
//! [`Daemon::start`], and [`Daemon::stop`] it.

mod background;
pub mod channels;
pub mod local_models;
pub mod providers;
pub mod services;

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use background::LoadedModel;
pub use channels::{BuildError, LoopbackChannel, build_channels};
pub use local_models::LocalModels;
pub use providers::Providers;
pub use services::{ServiceError, Services};

use crate::dispatch::{Delivery, Dispatcher, Report, bus, supervise};
use crate::pipeline::Runtime;

/// A running daemon: listeners, the dispatcher, and a delivery handle.
pub struct Daemon {
    runtime: Arc<Runtime>,
    delivery: Delivery,
    shutdown: CancellationToken,
    dispatcher: JoinHandle<()>,
    listeners: Vec<JoinHandle<()>>,
}

impl Daemon {
    /// Starts a supervised listener per channel and the dispatch loop.
    pub fn start(runtime: Arc<Runtime>, reports: Option<mpsc::UnboundedSender<Report>>) -> Self {
        let (tx, rx) = bus();
        let shutdown = CancellationToken::new();
        let listeners = runtime
            .channels()
            .map(|channel| {
                tokio::spawn(supervise(
                    channel.clone(),
                    tx.clone(),
                    runtime.status().clone(),
                    shutdown.clone(),
                ))
            })
            .collect();
        let mut dispatcher = Dispatcher::new(runtime.clone());
        if let Some(reports) = reports {
            dispatcher = dispatcher.with_reports(reports);
        }
        let dispatcher = tokio::spawn(dispatcher.run(rx, shutdown.clone()));
        Self {
            delivery: Delivery::new(runtime.clone(), tx),
            runtime,
            shutdown,
            dispatcher,
            listeners,
        }
    }

    /// For background jobs: deliver texts and run prompts into chats.
    pub fn delivery(&self) -> Delivery {
        self.delivery.clone()
    }

    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Stops taking messages, lets in-flight replies finish within the
    /// configured grace, and waits for everything to end.
    pub async fn stop(self) {
        self.shutdown.cancel();
        let _ = self.dispatcher.await;
        for listener in self.listeners {
            let _ = listener.await;
        }
    }
}

/// Installs the SIGINT (Ctrl-C) and SIGTERM handlers now, and returns
/// what resolves at the first of them. Called before the daemon says it is
/// listening, so a signal sent right after that line is never missed.
pub fn signalled() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let handlers =
            signal(SignalKind::interrupt()).and_then(|i| Ok((i, signal(SignalKind::terminate())?)));
        async move {
            match handlers {
                Ok((mut interrupt, mut term)) => {
                    tokio::select! {
                        _ = interrupt.recv() => {}
                        _ = term.recv() => {}
                    }
                }
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
