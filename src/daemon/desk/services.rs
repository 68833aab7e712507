//! The services on the page: scheduled jobs (with pause, resume, delete),
//! the LMS sources (their last and next poll, what they track, their last
//! error with its fix, upcoming dates) and memory (search, delete).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::channels::gateway::{DeskError, JobAction, KeptDocument, Remembered};
use crate::documents::DocumentStore;
use crate::lms::Notifier;
use crate::memory::MemoryStore;
use crate::scheduler::Scheduler;

/// Memory entries the page lists at most.
const MEMORIES: usize = 100;
/// How far ahead upcoming dates are listed.
const UPCOMING_DAYS: i64 = 14;

fn failed(e: impl std::fmt::Display) -> DeskError {
    DeskError(e.to_string())
}

/// Every job, soonest first (`null` when the scheduler is off).
pub fn jobs(scheduler: Option<&Arc<Scheduler>>) -> Value {
    let Some(scheduler) = scheduler else {
        return Value::Null;
    };
    match scheduler.list() {
        Ok(jobs) => jobs
            .iter()
            .map(|j| {
                json!({
                    "id": j.id,
                    "name": j.name,
                    "schedule": j.schedule.describe(j.timezone),
                    "what": j.payload.describe(),
                    "to": format!("{}:{}", j.delivery.channel, j.delivery.to),
                    "next_run": j.next_run.timestamp(),
                    "paused": j.paused,
                    "last_error": j.last_error,
                })
            })
            .collect(),
        Err(e) => json!({ "error": e.to_string() }),
    }
}

pub fn job(
    scheduler: Option<&Arc<Scheduler>>,
    id: i64,
    action: JobAction,
) -> Result<bool, DeskError> {
    let scheduler = scheduler
        .ok_or_else(|| DeskError("the scheduler is off (`[scheduler] enabled`)".into()))?;
    let found = match action {
        JobAction::Pause => scheduler.pause(id).map_err(failed)?.is_some(),
        JobAction::Resume => scheduler.resume(id).map_err(failed)?.is_some(),
        JobAction::Delete => scheduler.remove(id).map_err(failed)?,
    };
    tracing::info!(id, ?action, found, "a job was changed on the web page");
    Ok(found)
}

/// Each LMS source's state and the dates ahead (`null` when none is set).
pub fn lms(notifier: Option<&Arc<Notifier>>) -> Value {
    let Some(notifier) = notifier else {
        return Value::Null;
    };
    let names = notifier.source_names();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let interval = chrono::Duration::from_std(notifier.poll_interval()).unwrap_or_default();
    let sources: Value = match notifier.store().status(&names) {
        Ok(statuses) => statuses
            .iter()
            .map(|s| {
                json!({
                    "source": s.source,
                    "last_poll": s.last_poll.map(|t| t.timestamp()),
                    "next_poll": s.last_poll.map(|t| (t + interval).timestamp()),
                    "last_ok": s.last_ok.map(|t| t.timestamp()),
                    "last_error": s.last_error,
                    "notes": s.notes,
                    "tracked": s.tracked,
                    "waiting": s.waiting,
                })
            })
            .collect(),
        Err(e) => json!({ "error": e.to_string() }),
    };
    let now = chrono::Utc::now();
    let upcoming: Value = match notifier
        .store()
        .upcoming(now, now + chrono::Duration::days(UPCOMING_DAYS))
    {
        Ok(items) => items
            .iter()
            .map(|i| {
                json!({
                    "source": i.source,
                    "kind": i.kind.as_str(),
                    "title": i.title,
                    "course": i.course,
                    "due": i.due.map(|t| t.timestamp()),
                })
            })
            .collect(),
        Err(e) => json!({ "error": e.to_string() }),
    };
    json!({ "sources": sources, "upcoming": upcoming })
}

pub fn memories(
    memory: Option<&Arc<MemoryStore>>,
    query: &str,
) -> Result<Vec<Remembered>, DeskError> {
    let Some(memory) = memory else {
        return Ok(Vec::new());
    };
    // Everything, newest first; or what the query means and holds.
    let entries = if query.trim().is_empty() {
        memory.find("", MEMORIES).map_err(failed)?
    } else {
        memory
            .search_everywhere(query, MEMORIES)
            .map_err(failed)?
            .into_iter()
            .map(|r| r.entry)
            .collect()
    };
    Ok(entries
        .into_iter()
        .map(|e| Remembered {
            scope: e.scope,
            key: e.key,
            category: e.category.as_str().to_string(),
            content: e.content,
            updated: e.updated,
        })
        .collect())
}

pub fn forget(
    memory: Option<&Arc<MemoryStore>>,
    scope: &str,
    key: &str,
) -> Result<bool, DeskError> {
    let memory = memory.ok_or_else(|| DeskError("memory is off (`[memory] enabled`)".into()))?;
    let forgotten = memory.forget(scope, key).map_err(failed)?;
    tracing::info!(
        scope,
        key,
        forgotten,
        "a memory was deleted on the web page"
    );
    Ok(forgotten)
}

/// Documents listed on the page, at most.
const DOCUMENTS: usize = 200;

pub fn documents(store: Option<&Arc<DocumentStore>>) -> Result<Vec<KeptDocument>, DeskError> {
    let Some(store) = store else {
        return Ok(Vec::new());
    };
    let scopes = store.scopes().map_err(failed)?;
    let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let listed = store.list(&scopes).map_err(failed)?;
    Ok(listed
        .into_iter()
        .take(DOCUMENTS)
        .map(|d| KeptDocument {
            id: d.id,
            scope: d.scope,
            name: d.name,
            kind: d.kind,
            pages: d.pages,
            source: d.source,
            added: d.added,
        })
        .collect())
}

pub fn forget_document(
    store: Option<&Arc<DocumentStore>>,
    scope: &str,
    id: i64,
) -> Result<bool, DeskError> {
    let store = store.ok_or_else(|| DeskError("documents are not kept here".into()))?;
    let forgotten = store.forget(&[scope], id).map_err(failed)?;
    tracing::info!(
        scope,
        id,
        forgotten,
        "a document was deleted on the web page"
    );
    Ok(forgotten)
}
