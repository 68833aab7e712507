//! The running and queued messages of each sender and scope: what a new
//! message from the same sender interrupts, and what `/stop` cancels.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio_util::sync::CancellationToken;

use crate::channels::ChannelMessage;

/// Messages with equal keys interrupt each other: channel, sender, and the
/// scope (the interruption scope, else the chat and thread).
pub fn scope_key(message: &ChannelMessage) -> String {
    let scope = message.interruption_scope_id.clone().unwrap_or_else(|| {
        format!(
            "{}/{}",
            message.reply_target,
            message.thread_ts.as_deref().unwrap_or("")
        )
    });
    format!("{}|{}|{scope}", message.channel, message.sender)
}

/// Why a run was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    Superseded,
    Stopped,
}

/// One running (or waiting) message.
#[derive(Debug, Clone)]
pub struct Run {
    pub id: u64,
    /// Cancels the run.
    pub cancel: CancellationToken,
    /// Cancelled by the run itself when it has ended.
    pub done: CancellationToken,
    reason: std::sync::Arc<Mutex<Option<CancelReason>>>,
}

impl Run {
    pub fn cancel(&self, reason: CancelReason) {
        self.reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(reason);
        self.cancel.cancel();
    }

    pub fn reason(&self) -> Option<CancelReason> {
        *self.reason.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[derive(Debug, Default)]
pub struct Tracker {
    /// Per key, the runs not yet ended, oldest first.
    runs: Mutex<HashMap<String, Vec<Run>>>,
    ids: AtomicU64,
}

impl Tracker {
    /// Registers a new run for `key`, returning it and the latest run before
    /// it (which it interrupts or queues behind).
    pub fn begin(&self, key: &str, parent: &CancellationToken) -> (Run, Option<Run>) {
        let run = Run {
            id: self.ids.fetch_add(1, Ordering::SeqCst),
            cancel: parent.child_token(),
            done: CancellationToken::new(),
            reason: Default::default(),
        };
        let mut runs = self.lock();
        let queue = runs.entry(key.to_string()).or_default();
        let previous = queue.last().cloned();
        queue.push(run.clone());
        (run, previous)
    }

    /// Forgets `run`, which has ended.
    pub fn end(&self, key: &str, run: &Run) {
        let mut runs = self.lock();
        if let Some(queue) = runs.get_mut(key) {
            queue.retain(|r| r.id != run.id);
            if queue.is_empty() {
                runs.remove(key);
            }
        }
        run.done.cancel();
    }

    /// Cancels every running and queued message of `key` (`/stop`);
    /// whether there was one.
    pub fn stop(&self, key: &str) -> bool {
        let runs = self.lock();
        let live: Vec<&Run> = runs
            .get(key)
            .into_iter()
            .flatten()
            .filter(|r| !r.done.is_cancelled())
            .collect();
        for run in &live {
            run.cancel(CancelReason::Stopped);
        }
        !live.is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Run>>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_cancels_the_running_message_and_those_queued_behind_it() {
        let tracker = Tracker::default();
        let root = CancellationToken::new();
        let (first, none) = tracker.begin("k", &root);
        let (second, previous) = tracker.begin("k", &root);
        assert!(none.is_none());
        assert_eq!(previous.map(|r| r.id), Some(first.id));
        let (other, _) = tracker.begin("other", &root);

        assert!(tracker.stop("k"));
        assert_eq!(first.reason(), Some(CancelReason::Stopped));
        assert_eq!(second.reason(), Some(CancelReason::Stopped));
        assert!(!other.cancel.is_cancelled());

        tracker.end("k", &first);
        tracker.end("k", &second);
        assert!(!tracker.stop("k"), "nothing is left to stop");
        assert!(first.done.is_cancelled() && second.done.is_cancelled());
    }
}
