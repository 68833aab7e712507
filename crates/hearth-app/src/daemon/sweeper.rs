//! The daemon's retention sweeps: when it starts and every
//! [`SWEEP_EVERY`](crate::retention::SWEEP_EVERY) after, with the
//! `[retention]` limits in force then (a reloaded config applies at the
//! next sweep). A sweep that fails (a full disk) is logged and tried again
//! at the next.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::pipeline::Runtime;

/// One sweep of the data folder `dir` now, logged; what it forgot. For
/// commands that run without a daemon (`hearth ask`) and the daemon's loop.
pub async fn sweep_once(
    dir: std::path::PathBuf,
    limits: crate::config::RetentionConfig,
) -> Option<crate::retention::Swept> {
    let now = chrono::Utc::now().timestamp();
    let swept =
        tokio::task::spawn_blocking(move || crate::retention::sweep(&dir, &limits, now)).await;
    match swept {
        Ok(Ok(s)) => {
            if s.total() > 0 {
                tracing::info!(
                    history = s.history,
                    memory = s.memory,
                    inbox = s.inbox,
                    lms = s.lms,
                    documents = s.documents,
                    "retention: forgot records past [retention]'s limits"
                );
            }
            Some(s)
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "retention: sweep failed; trying again later");
            None
        }
        Err(e) => {
            tracing::warn!(error = %e, "retention: sweep stopped");
            None
        }
    }
}

pub async fn sweep_loop(runtime: Arc<Runtime>, stop: CancellationToken) {
    loop {
        let config = runtime.config();
        let (dir, limits) = (config.data_dir.clone(), config.retention);
        if let Some(s) = sweep_once(dir, limits).await {
            runtime.inbox().forget_known(&s.inbox_keys);
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(crate::retention::SWEEP_EVERY) => {}
        }
    }
}
