//! The web page's desk over a running daemon: the gateway's conversations
//! ([`conversations`]), the engine ([`engine`]), the services
//! ([`services`]), the approval questions ([`questions`]), the channels
//! and the latest warnings and errors.

mod conversations;
mod engine;
mod questions;
mod services;

use std::sync::{Arc, Weak};

use serde_json::json;

use crate::channels::Answer;
use crate::channels::gateway::{
    Conversation, Desk, DeskError, JobAction, KeptDocument, Question, Remembered, Shown,
};
use crate::daemon::LocalModels;
use crate::documents::DocumentStore;
use crate::lms::Notifier;
use crate::memory::MemoryStore;
use crate::metrics::errors::RecentErrors;
use crate::pipeline::{ListenerState, Runtime};
use crate::scheduler::Scheduler;

/// What the daemon runs beside the runtime, each where it is on.
#[derive(Default, Clone)]
pub struct Parts {
    pub models: Option<Arc<LocalModels>>,
    pub scheduler: Option<Arc<Scheduler>>,
    pub notifier: Option<Arc<Notifier>>,
    pub memory: Option<Arc<MemoryStore>>,
    pub documents: Option<Arc<DocumentStore>>,
    pub errors: Option<Arc<RecentErrors>>,
    /// The morning brief, where it is on.
    pub brief: Option<crate::config::BriefConfig>,
}

/// Reads the runtime it was made for, while it runs (the runtime owns the
/// gateway, so the desk holds it weakly).
pub struct DaemonDesk {
    runtime: Weak<Runtime>,
    started: i64,
    parts: Parts,
}

impl DaemonDesk {
    pub fn new(runtime: &Arc<Runtime>, parts: Parts) -> Self {
        Self {
            runtime: Arc::downgrade(runtime),
            started: chrono::Utc::now().timestamp(),
            parts,
        }
    }

    fn runtime(&self) -> Result<Arc<Runtime>, DeskError> {
        self.runtime
            .upgrade()
            .ok_or_else(|| DeskError("hearth is stopping".into()))
    }
}

/// Each channel's listener: running, restarting or stopped, and its last error.
fn channels(runtime: &Runtime) -> serde_json::Value {
    let status = runtime.status();
    runtime
        .channels()
        .map(|c| {
            let health = status.listener(c.name());
            let state = match health.as_ref().map(|h| &h.state) {
                Some(ListenerState::Running) | None => "running".to_string(),
                Some(ListenerState::Backoff { wait_secs }) => {
                    format!("restarting in {wait_secs} s")
                }
                Some(ListenerState::Stopped) => "stopped".to_string(),
            };
            json!({
                "name": c.name(),
                "state": state,
                "last_error": health.and_then(|h| h.last_error),
            })
        })
        .collect()
}

impl Desk for DaemonDesk {
    fn conversations(&self) -> Result<Vec<Conversation>, DeskError> {
        conversations::list(&*self.runtime()?)
    }

    fn messages(&self, chat: &str) -> Result<Vec<Shown>, DeskError> {
        conversations::messages(&*self.runtime()?, chat)
    }

    fn overview(&self) -> serde_json::Value {
        let Ok(runtime) = self.runtime() else {
            return json!({ "error": "hearth is stopping" });
        };
        let config = runtime.config();
        let p = &self.parts;
        let (model, cache, queue) = match &p.models {
            Some(m) => (engine::model(m), engine::cache(m), engine::queue(m)),
            None => (json!(null), json!([]), json!({})),
        };
        json!({
            "started": self.started,
            "in_flight": runtime.status().in_flight(),
            "model": model,
            "model_file": config.model.path,
            "backend": engine::backend(&config),
            "memory": engine::memory(&config),
            "speed": engine::speed(runtime.metrics()),
            "cache": cache,
            "queue": queue,
            "channels": channels(&runtime),
            "lms": services::lms(p.notifier.as_ref()),
            "jobs": services::jobs(p.scheduler.as_ref()),
            "memory_on": p.memory.is_some(),
            "errors": p.errors.as_ref().map(|e| e.read()).unwrap_or_default(),
        })
    }

    fn job(&self, id: i64, action: JobAction) -> Result<bool, DeskError> {
        services::job(self.parts.scheduler.as_ref(), id, action)
    }

    fn memories(&self, query: &str) -> Result<Vec<Remembered>, DeskError> {
        services::memories(self.parts.memory.as_ref(), query)
    }

    fn forget(&self, scope: &str, key: &str) -> Result<bool, DeskError> {
        services::forget(self.parts.memory.as_ref(), scope, key)
    }

    fn documents(&self) -> Result<Vec<KeptDocument>, DeskError> {
        services::documents(self.parts.documents.as_ref())
    }

    fn forget_document(&self, scope: &str, id: i64) -> Result<bool, DeskError> {
        services::forget_document(self.parts.documents.as_ref(), scope, id)
    }

    fn brief(&self) -> futures::future::BoxFuture<'_, Result<Option<String>, DeskError>> {
        Box::pin(async move {
            let (Some(n), Some(brief)) = (&self.parts.notifier, &self.parts.brief) else {
                return Ok(None);
            };
            let person = n.target();
            let extras = crate::daemon::brief::extras(
                self.parts.scheduler.as_deref(),
                person.as_ref(),
                n.now(),
            );
            n.brief_text(brief, &extras, n.now())
                .await
                .map_err(|e| DeskError(e.to_string()))
        })
    }

    fn questions(&self) -> Vec<Question> {
        self.runtime()
            .map(|r| questions::open(&r))
            .unwrap_or_default()
    }

    fn answer(&self, id: &str, answer: Answer) -> bool {
        self.runtime()
            .is_ok_and(|r| questions::answer(&r, id, answer))
    }
}
