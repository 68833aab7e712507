//! `hearth daemon`: every configured channel, supervised, feeding one
//! dispatcher that runs the pipeline; SIGINT/SIGTERM stop it gracefully.
//! Before the listeners start, what the last run left in the durable
//! inbox is taken up ([`crate::dispatch::recovery`]).
//!
//! [`Daemon`] is the assembled whole, also for tests and the bench:
//! build a [`Runtime`](crate::pipeline::Runtime), hand it to
//! [`Daemon::start`], and [`Daemon::stop`] it.

mod background;
pub mod brief;
pub mod course_files;
pub mod deadlines;
pub mod heartbeat;
pub mod local_models;
pub mod providers;
pub mod services;
mod sweeper;

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use background::LoadedModel;
pub use course_files::CourseFiles;
pub use heartbeat::Heartbeat;
pub use local_models::LocalModels;
pub use providers::Providers;
pub use services::{ServiceError, Services};
pub use sweeper::sweep_once;

use crate::channels::Intake;
use crate::dispatch::{Delivery, Dispatcher, InboxSink, Report, bus, recovery, supervise};
use crate::pipeline::Runtime;

/// A running daemon: listeners, the dispatcher, and a delivery handle.
pub struct Daemon {
    runtime: Arc<Runtime>,
    delivery: Delivery,
    shutdown: CancellationToken,
    dispatcher: JoinHandle<()>,
    listeners: Vec<JoinHandle<()>>,
    resend: JoinHandle<()>,
    sweeper: JoinHandle<()>,
}

impl Daemon {
    /// Starts the dispatch loop, takes up what the inbox holds, then
    /// starts a supervised listener per channel, the resend loop and the
    /// retention sweeps.
    pub fn start(runtime: Arc<Runtime>, reports: Option<mpsc::UnboundedSender<Report>>) -> Self {
        let (tx, rx) = bus();
        let shutdown = CancellationToken::new();
        let intake = Intake::new(Arc::new(InboxSink::new(
            runtime.inbox().clone(),
            runtime.channels().filter(|c| c.durable()).cloned(),
            tx.clone(),
        )));
        let mut dispatcher = Dispatcher::new(runtime.clone());
        if let Some(reports) = reports {
            dispatcher = dispatcher.with_reports(reports);
        }
        let dispatcher = tokio::spawn(dispatcher.run(rx, shutdown.clone()));
        // Listeners wait until the messages of the last run are queued, so
        // those are answered first.
        let ready = CancellationToken::new();
        // Only a runtime whose channels record into the inbox owns it: `hearth
        // chat` and `hearth acp` (whose messages are never recorded) leave a
        // daemon's entries alone, even when it runs beside them.
        let owns_inbox = !runtime.durable_channels().is_empty();
        let recovering = (runtime.clone(), ready.clone());
        tokio::spawn(async move {
            let (runtime, ready) = recovering;
            if owns_inbox {
                recovery::take_up(&runtime, &tx).await;
            }
            ready.cancel();
        });
        let listeners = runtime
            .channels()
            .map(|channel| {
                let listen = supervise(
                    channel.clone(),
                    intake.clone(),
                    runtime.status().clone(),
                    runtime.metrics().clone(),
                    shutdown.clone(),
                );
                let (ready, shutdown) = (ready.clone(), shutdown.clone());
                tokio::spawn(async move {
                    tokio::select! {
                        _ = ready.cancelled() => listen.await,
                        _ = shutdown.cancelled() => {}
                    }
                })
            })
            .collect();
        let resend = if owns_inbox {
            tokio::spawn(recovery::resend_loop(runtime.clone(), shutdown.clone()))
        } else {
            tokio::spawn(async {})
        };
        // Every runtime keeps its stores within `[retention]`, `hearth
        // chat` and `hearth acp` too (a sweep beside a daemon is one more
        // SQLite writer, and forgets only what the daemon would).
        let sweeper = tokio::spawn(sweeper::sweep_loop(runtime.clone(), shutdown.clone()));
        Self {
            delivery: Delivery::new(runtime.clone(), intake),
            runtime,
            shutdown,
            dispatcher,
            listeners,
            resend,
            sweeper,
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
    /// configured grace (the rest stay in the inbox for the next start),
    /// and waits for everything to end and be recorded.
    pub async fn stop(self) {
        self.shutdown.cancel();
        let _ = self.dispatcher.await;
        for listener in self.listeners {
            let _ = listener.await;
        }
        let _ = self.resend.await;
        let _ = self.sweeper.await;
        if let Err(e) = self.runtime.inbox().flush().await {
            tracing::error!(error = %e, "cannot write the inbox's last records");
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
