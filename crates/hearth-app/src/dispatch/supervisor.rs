//! Listener supervision: a listener that fails is restarted after 2 s,
//! then 4, 8, … up to 60 s; a run that stayed up for a minute resets the
//! wait. While it runs, a heartbeat checks the platform every 30 s. Every
//! change is written to the [`StatusBoard`] for `/status`.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::channels::{Channel, Intake};
use crate::metrics::Metrics;
use crate::pipeline::{ListenerState, StatusBoard};
use crate::retry::RetryPolicy;

/// Restarts wait 2 s, then 4, 8, … up to a minute.
pub const RESTARTS: RetryPolicy = RetryPolicy::new(Duration::from_secs(2), Duration::from_secs(60));
/// A run this long counts as healthy: the next failure waits 2 s again.
pub const HEALTHY_RUN: Duration = Duration::from_secs(60);
pub const HEARTBEAT: Duration = Duration::from_secs(30);

/// Runs `channel.listen` until `shutdown`, until the bus closes or until
/// its input ends, restarting it with backoff whenever it fails.
pub async fn supervise(
    channel: Arc<dyn Channel>,
    bus: Intake,
    status: Arc<StatusBoard>,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) {
    let name = channel.name().to_string();
    let mut backoff = RESTARTS.backoff();
    loop {
        status.update(&name, |h| h.state = ListenerState::Running);
        let started = tokio::time::Instant::now();
        let result = tokio::select! {
            r = channel.listen(bus.clone()) => r,
            _ = heartbeat(channel.as_ref(), &name, &status) => Ok(()),
            _ = shutdown.cancelled() => break,
        };
        if started.elapsed() >= HEALTHY_RUN {
            backoff.reset();
        }
        let error = match result {
            Ok(()) if bus.is_closed() => break,
            // A listener that returns without an error has come to the end
            // of its input (an editor or a terminal closed stdin): done, not
            // failed. The network listeners return only when the bus closes.
            Ok(()) => {
                tracing::info!(channel = name, "the listener's input ended");
                break;
            }
            Err(e) => e.to_string(),
        };
        metrics.channel_error(&name, "listen");
        let wait = backoff.failed();
        tracing::warn!(
            channel = name,
            error,
            wait_secs = wait.as_secs(),
            "listener failed; restarting"
        );
        status.update(&name, |h| {
            h.state = ListenerState::Backoff {
                wait_secs: wait.as_secs(),
            };
            h.restarts += 1;
            h.last_error = Some(error);
        });
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.cancelled() => break,
        }
    }
    status.update(&name, |h| h.state = ListenerState::Stopped);
}

/// Checks the platform every 30 s; never ends.
async fn heartbeat(channel: &dyn Channel, name: &str, status: &StatusBoard) {
    let mut tick = tokio::time::interval(HEARTBEAT);
    tick.tick().await;
    loop {
        tick.tick().await;
        let reachable = channel.health_check().await;
        status.update(name, |h| h.reachable = reachable);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_wait_two_seconds_doubling_to_a_minute() {
        let mut b = RESTARTS.backoff();
        let waits: Vec<u64> = (0..7).map(|_| b.failed().as_secs()).collect();
        assert_eq!(waits, [2, 4, 8, 16, 32, 60, 60]);
        b.reset();
        assert_eq!(b.failed().as_secs(), 2);
    }
}
