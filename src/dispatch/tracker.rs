//! The running message of each sender and scope: what a new message from
//! the same sender interrupts, and what `/stop` cancels.

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
    runs: Mutex<HashMap<String, Run>>,
    ids: AtomicU64,
}

impl Tracker {
    /// Registers a new run for `key`, returning it and the run it replaces.
    pub fn begin(&self, key: &str, parent: &CancellationToken) -> (Run, Option<Run>) {
        let run = Run {
            id: self.ids.fetch_add(1, Ordering::SeqCst),
            cancel: parent.child_token(),
            done: CancellationToken::new(),
            reason: Default::default(),
        };
        let previous = self.lock().insert(key.to_string(), run.clone());
        (run, previous)
    }

    /// Forgets `run` if it is still the latest for `key`.
    pub fn end(&self, key: &str, run: &Run) {
        let mut runs = self.lock();
        if runs.get(key).is_some_and(|r| r.id == run.id) {
            runs.remove(key);
        }
        run.done.cancel();
    }

    /// Cancels the running message of `key` (`/stop`); whether there was one.
    pub fn stop(&self, key: &str) -> bool {
        match self.lock().get(key) {
            Some(run) if !run.done.is_cancelled() => {
                run.cancel(CancelReason::Stopped);
                true
            }
            _ => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Run>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }
}
