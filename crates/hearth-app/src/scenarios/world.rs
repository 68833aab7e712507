//! One scenario's world: a data folder and workspace of its own (removed
//! after), the scheduler, memory without its auto-save (the scenario scores
//! the model's call, not hearth's own keeping), an LMS store holding a
//! week of coursework, a file in the workspace, and hearth's own tools,
//! each call of them written down.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use futures::future::BoxFuture;
use serde_json::Value;

use super::checks::{After, Call};
use crate::config::Config;
use crate::daemon::Services;
use crate::lms::{ItemKind, LmsError, LmsItem, LmsSource, Notifier};
use crate::memory::{MemoryStore, StoreMemory, TurnMemory};
use crate::scheduler::{JobStore, Scheduler, SystemClock};
use crate::tools::{ToolContext, ToolObserver, ToolRegistry, ToolResult};

/// Makes the tools' context (policy, sandbox) for a world's config.
pub type ToolContextFor =
    dyn Fn(&Config) -> Result<ToolContext, Box<dyn std::error::Error + Send + Sync>> + Send + Sync;

/// The file `read_file` asks about, and the fact only reading it gives.
pub const NOTES: &str = "Wifi password: plum-otter-42\nThe bins go out on Thursday.\n";

#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    #[error("cannot make the scenario's folder: {0}")]
    Folder(#[from] std::io::Error),
    #[error("memory: {0}")]
    Memory(#[from] crate::memory::MemoryError),
    #[error("scheduler: {0}")]
    Scheduler(#[from] crate::scheduler::SchedulerError),
    #[error("LMS store: {0}")]
    Lms(#[from] LmsError),
    #[error("the tools' context: {0}")]
    Tools(Box<dyn std::error::Error + Send + Sync>),
    #[error("the pipeline: {0}")]
    Runtime(#[from] crate::pipeline::RuntimeError),
}

/// What every world starts from.
pub struct Setup<'a> {
    /// The configured settings; a world changes only where its folders
    /// are and which services run (memory, jobs and an LMS store on, no
    /// MCP servers, memory's auto-save off).
    pub config: &'a Config,
    pub tool_context: &'a ToolContextFor,
}

pub struct World {
    pub config: Config,
    folder: PathBuf,
    context: ToolContext,
    memory: Arc<StoreMemory>,
    scheduler: Arc<Scheduler>,
    notifier: Arc<Notifier>,
    calls: Arc<Calls>,
    now: DateTime<Utc>,
}

impl World {
    pub async fn new(setup: &Setup<'_>) -> Result<Self, WorldError> {
        static MADE: AtomicUsize = AtomicUsize::new(0);
        let folder = std::env::temp_dir().join(format!(
            "hearth-scenario-{}-{}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::Relaxed)
        ));
        if folder.exists() {
            std::fs::remove_dir_all(&folder)?;
        }
        crate::file_modes::make_private_dir(&folder)?;
        let config = own_config(setup.config, &folder);
        std::fs::create_dir_all(&config.data_dir)?;
        std::fs::create_dir_all(&config.agent.workspace)?;
        std::fs::write(config.agent.workspace.join("notes.txt"), NOTES)?;
        let now = Utc::now();
        let store = MemoryStore::open(&MemoryStore::path_in(&config.data_dir))?;
        let memory = Arc::new(StoreMemory::new(Arc::new(store), config.memory.clone()));
        let scheduler = Scheduler::open(
            &JobStore::path_in(&config.data_dir),
            config.scheduler.clone(),
            Arc::new(SystemClock),
        )?;
        let notifier = Notifier::new(&config.lms, &config.data_dir, None)?
            .with_sources(vec![Arc::new(Coursework { now })]);
        notifier.poll().await;
        let context = (setup.tool_context)(&config).map_err(WorldError::Tools)?;
        Ok(Self {
            config,
            folder,
            context,
            memory,
            scheduler: Arc::new(scheduler),
            notifier: Arc::new(notifier),
            calls: Arc::default(),
            now,
        })
    }

    /// hearth's own tools over this world's stores, less `without`, each
    /// call written down; and the context they run in.
    pub fn tools(&self, without: &[&str]) -> Result<(ToolRegistry, ToolContext), WorldError> {
        let mut tools = ToolRegistry::for_config(&self.config.agent, &self.context.sandbox);
        Services {
            memory: Some(self.memory.clone()),
            meaning: None,
            scheduler: Some(self.scheduler.clone()),
            notifier: Some(self.notifier.clone()),
            brief: None,
            deadlines: None,
        }
        .add_tools(&mut tools);
        for name in without {
            tools.remove(name);
        }
        tools.observe(self.calls.clone());
        Ok((tools, self.context.clone()))
    }

    pub fn turn_memory(&self) -> Arc<dyn TurnMemory> {
        self.memory.clone()
    }

    /// The state the scenario left, with the replies it got.
    pub fn after(&self, replies: Vec<String>) -> Result<After, WorldError> {
        Ok(After {
            jobs: self.scheduler.list()?,
            memories: self.memory.store().list(None, None, 1000)?,
            calls: self
                .calls
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            replies,
            now: self.now,
            zone: self.config.scheduler.timezone,
        })
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

/// The configured settings with this world's folders and services.
fn own_config(base: &Config, folder: &std::path::Path) -> Config {
    let mut config = base.clone();
    config.data_dir = folder.join("data");
    config.agent.workspace = folder.join("workspace");
    config.agent.shared_workspace = true;
    config.memory.enabled = true;
    config.memory.auto_save = false;
    config.memory.consolidate = false;
    config.scheduler.enabled = true;
    config.lms.sources.clear();
    config.mcp.servers.clear();
    config.routing.default_provider = "local".into();
    config.routing.fallback.clear();
    config
}

/// Every call the tools ran, in order.
#[derive(Default)]
struct Calls(Mutex<Vec<Call>>);

impl ToolObserver for Calls {
    fn ran(&self, name: &str, args: &Value, result: &ToolResult) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(Call {
            name: name.to_string(),
            args: args.clone(),
            ok: !result.is_error,
        });
    }
}

/// Two assignments due this week and one in three weeks.
struct Coursework {
    now: DateTime<Utc>,
}

/// Each item's id, title, days until it is due, and the word of its title
/// no model could guess.
pub const COURSEWORK: [(&str, &str, i64, &str); 3] = [
    ("lab4", "Lab report 4: titration curves", 2, "titration"),
    ("essay", "Essay draft: the Weimar Republic", 5, "weimar"),
    ("project", "Final project proposal", 21, "final project"),
];

impl LmsSource for Coursework {
    fn name(&self) -> &str {
        "school"
    }

    fn poll(&self, _now: DateTime<Utc>) -> BoxFuture<'_, Result<Vec<LmsItem>, LmsError>> {
        let items = COURSEWORK
            .iter()
            .map(|(id, title, days, _)| {
                let mut item = LmsItem::new("school", *id, ItemKind::Assignment, *title);
                item.due = Some(self.now + Duration::days(*days));
                item
            })
            .collect();
        Box::pin(async move { Ok(items) })
    }
}
