//! What `/status` reports: each listener's health and the dispatcher's load.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// One listener's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenerState {
    Running,
    /// Failed; restarting after `wait_secs`.
    Backoff {
        wait_secs: u64,
    },
    Stopped,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerHealth {
    pub state: ListenerState,
    pub restarts: u32,
    pub last_error: Option<String>,
    /// The last heartbeat's `health_check`.
    pub reachable: bool,
}

/// Shared by the supervisors, the dispatcher and `/status`.
#[derive(Debug, Default)]
pub struct StatusBoard {
    listeners: Mutex<BTreeMap<String, ListenerHealth>>,
    in_flight: AtomicUsize,
    handled: AtomicU64,
}

impl StatusBoard {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn update(&self, channel: &str, change: impl FnOnce(&mut ListenerHealth)) {
        let mut listeners = self.listeners.lock().unwrap_or_else(|e| e.into_inner());
        let entry = listeners
            .entry(channel.to_string())
            .or_insert(ListenerHealth {
                state: ListenerState::Running,
                restarts: 0,
                last_error: None,
                reachable: true,
            });
        change(entry);
    }

    pub fn listener(&self, channel: &str) -> Option<ListenerHealth> {
        self.listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(channel)
            .cloned()
    }

    pub fn started(&self) {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
    }

    pub fn finished(&self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.handled.fetch_add(1, Ordering::SeqCst);
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Lines for `/status`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let listeners = self.listeners.lock().unwrap_or_else(|e| e.into_inner());
        for (name, h) in listeners.iter() {
            let state = match &h.state {
                ListenerState::Running if h.reachable => "running".to_string(),
                ListenerState::Running => "running, platform unreachable".to_string(),
                ListenerState::Backoff { wait_secs } => format!("restarting in {wait_secs} s"),
                ListenerState::Stopped => "stopped".to_string(),
            };
            let _ = write!(out, "channel {name}: {state}");
            if h.restarts > 0 {
                let _ = write!(out, " ({} restarts", h.restarts);
                if let Some(e) = &h.last_error {
                    let _ = write!(out, "; last error: {e}");
                }
                out.push(')');
            }
            out.push('\n');
        }
        let _ = write!(
            out,
            "in flight: {}; handled: {}",
            self.in_flight(),
            self.handled.load(Ordering::SeqCst)
        );
        out
    }
}
