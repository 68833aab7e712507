//! The daemon's background services and the tools they bring: memory, the
//! scheduler and the LMS notifier, each on when its config says so.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::dispatch::{Delivery, PromptJob};
use crate::lms::{Notice, NoticeError, NoticeSink, Notifier, PollReport};
use crate::memory::{self, MemoryStore, StoreMemory, TurnMemory};
use crate::metrics::Metrics;
use crate::providers::Provider;
use crate::retry::RetryPolicy;
use crate::sandbox::Sandbox;
use crate::scheduler::{self, FireError, Job, JobSink, JobStore, Payload, Scheduler, SystemClock};
use crate::tools::ToolRegistry;
use futures::future::BoxFuture;

/// What the config turned on.
pub struct Services {
    pub memory: Option<Arc<StoreMemory>>,
    /// The embedding model memory finds by meaning with, if any; served
    /// on `/v1/embeddings` under its own name too.
    pub meaning: Option<Arc<crate::engine::EmbeddingModel>>,
    pub scheduler: Option<Arc<Scheduler>>,
    pub notifier: Option<Arc<Notifier>>,
    /// The morning brief, where it is on (and the LMS too).
    pub brief: Option<crate::config::BriefConfig>,
    /// The person's deadlines over the notifier's store: served by the
    /// gateway, and written into `[lms] caldav` where it is set.
    pub deadlines: Option<Arc<super::deadlines::Deadlines>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("memory: {0}")]
    Memory(String),
    #[error("scheduler: {0}")]
    Scheduler(String),
    #[error("LMS notifier: {0}")]
    Lms(String),
}

impl Services {
    /// Opens the stores of every enabled service. `background` serves
    /// consolidation and summaries.
    pub fn open(config: &Config, background: Arc<dyn Provider>) -> Result<Self, ServiceError> {
        let mut meaning = None;
        let memory = if config.memory.enabled {
            let mut store = MemoryStore::open(&MemoryStore::path_in(&config.data_dir))
                .map_err(|e| ServiceError::Memory(e.to_string()))?;
            meaning =
                memory::meaning::start(config).map_err(|e| ServiceError::Memory(e.to_string()))?;
            if let Some(model) = &meaning {
                store = store.with_meaning(model.clone());
            }
            let mut m = StoreMemory::new(Arc::new(store), config.memory.clone());
            if config.memory.consolidate {
                m = m.with_consolidation(background.clone());
            }
            Some(Arc::new(m))
        } else {
            None
        };
        let scheduler = if config.scheduler.enabled {
            let s = Scheduler::open(
                &JobStore::path_in(&config.data_dir),
                config.scheduler.clone(),
                Arc::new(SystemClock),
            )
            .map_err(|e| ServiceError::Scheduler(e.to_string()))?;
            Some(Arc::new(s))
        } else {
            None
        };
        let notifier = if config.lms.sources.is_empty() {
            None
        } else {
            let provider = config.lms.summarise.then_some(background);
            let n = Notifier::new(&config.lms, &config.data_dir, provider)
                .map_err(|e| ServiceError::Lms(e.to_string()))?;
            Some(Arc::new(n))
        };
        let brief = (config.brief.on(true) && notifier.is_some()).then(|| config.brief.clone());
        let deadlines = notifier.as_ref().map(|n| {
            let store = n.store().clone();
            Arc::new(super::deadlines::Deadlines::over(
                store,
                &config.lms,
                scheduler.clone(),
            ))
        });
        Ok(Self {
            memory,
            meaning,
            scheduler,
            notifier,
            brief,
            deadlines,
        })
    }

    /// The agent's tools: the core ones, those of each service, and the
    /// MCP servers' (each server started in the background; they run as
    /// long as the registry is kept).
    pub fn tools(&self, config: &Config, sandbox: &Sandbox) -> ToolRegistry {
        let mut tools = ToolRegistry::for_config(&config.agent, sandbox);
        if config.mcp.enabled().next().is_some() {
            tools.add_source(crate::mcp::McpHub::start(
                &config.mcp,
                sandbox,
                &config.data_dir,
            ));
        }
        self.add_tools(&mut tools);
        tools
    }

    /// Adds each enabled service's tools (memory, jobs, the LMS) to `tools`.
    pub fn add_tools(&self, tools: &mut ToolRegistry) {
        if let Some(m) = &self.memory {
            memory::memory_tools(m.store().clone())
                .into_iter()
                .for_each(|t| tools.register(t));
        }
        if let Some(s) = &self.scheduler {
            scheduler::cron_tools(s.clone())
                .into_iter()
                .for_each(|t| tools.register(t));
        }
        if let Some(n) = &self.notifier {
            tools.register(Box::new(n.upcoming_tool()));
            tools.register(Box::new(n.recent_tool()));
        }
    }

    /// The memory seam for the pipeline, when memory is on.
    pub fn turn_memory(&self) -> Option<Arc<dyn TurnMemory>> {
        self.memory
            .as_ref()
            .map(|m| -> Arc<dyn TurnMemory> { m.clone() })
    }

    /// Embeds memories that have no vector yet while `idle` says the
    /// engine is, until `stop` (nothing without an embedding model).
    pub fn index_memory(&self, idle: memory::indexer::Idle, stop: CancellationToken) {
        if let Some(m) = &self.memory {
            tokio::spawn(memory::indexer::run(m.store().clone(), idle, stop));
        }
    }

    /// Runs the scheduler and the LMS poll loop until `stop`.
    pub fn spawn(&self, delivery: Delivery, metrics: Arc<Metrics>, stop: CancellationToken) {
        let sink = Arc::new(Jobs {
            delivery: delivery.clone(),
            notifier: self.notifier.clone(),
            metrics: metrics.clone(),
        });
        if let Some(s) = &self.scheduler {
            let s = s.clone();
            let sink: Arc<dyn JobSink> = sink.clone();
            let stop = stop.clone();
            tokio::spawn(async move { s.run(sink, stop).await });
        }
        if let Some(n) = &self.notifier {
            let poller = n.clone();
            let (poll_metrics, poll_stop) = (metrics.clone(), stop.clone());
            // The brief starts once the first poll has recorded what is new.
            let mut brief = self.brief.clone();
            let (jobs, person) = (self.scheduler.clone(), n.target());
            let calendar = self.deadlines.clone();
            tokio::spawn(async move {
                loop {
                    let report = poller.poll().await;
                    count_polls(&poll_metrics, &report);
                    if let Some(b) = brief.take() {
                        let (jobs, person, stop) =
                            (jobs.clone(), person.clone(), poll_stop.clone());
                        tokio::spawn(super::brief::run(poller.clone(), b, jobs, person, stop));
                    }
                    if let Some(calendar) = &calendar {
                        publish(calendar).await;
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(poller.poll_interval()) => {}
                        _ = poll_stop.cancelled() => return,
                    }
                }
            });
            tokio::spawn(courier(n.clone(), Notices { delivery }, metrics, stop));
        }
    }
}

/// Writes the deadlines into the person's CalDAV calendar where
/// `[lms] caldav` names one, logging how it went (a failure waits for the
/// next poll).
async fn publish(calendar: &super::deadlines::Deadlines) {
    match calendar.publish(chrono::Utc::now()).await {
        Ok(Some(p)) if p.put + p.deleted > 0 => {
            tracing::info!(
                put = p.put,
                deleted = p.deleted,
                "deadlines written to the CalDAV calendar"
            );
        }
        Ok(_) => {}
        Err(e) => tracing::warn!("the CalDAV calendar: {e}"),
    }
}

/// The pause after a delivery pass that left notices refused: 10 s, doubling
/// up to 10 minutes while the channel refuses.
const COURIER_RETRY: RetryPolicy =
    RetryPolicy::new(Duration::from_secs(10), Duration::from_secs(600));

/// The LMS delivery loop: a pass whenever a poll recorded something, and
/// while notices are refused (the chat is down), again after a pause that
/// doubles up to [`COURIER_RETRY`]'s ceiling. Polls never wait for it.
async fn courier(n: Arc<Notifier>, sink: Notices, metrics: Arc<Metrics>, stop: CancellationToken) {
    let woken = n.queued_notices();
    let mut backoff = COURIER_RETRY.backoff();
    loop {
        let mut report = PollReport::default();
        n.deliver(&sink, &mut report).await;
        for source in &report.sources {
            metrics.lms_notices(&source.source, source.sent as u64);
        }
        let pause = if report.failed() > 0 {
            let pause = backoff.failed();
            tracing::info!(
                sent = report.sent(),
                failed = report.failed(),
                "LMS notices; retrying in {} s",
                pause.as_secs()
            );
            pause
        } else {
            if report.sent() > 0 {
                tracing::info!(sent = report.sent(), "LMS notices");
            }
            backoff.reset();
            // Reminders come due with time: look again at least each poll interval.
            n.poll_interval()
        };
        tokio::select! {
            _ = woken.notified() => {}
            _ = tokio::time::sleep(pause) => {}
            _ = stop.cancelled() => return,
        }
    }
}

/// Scheduled jobs: a prompt runs through the agent into its chat; an LMS
/// poll runs the notifier.
struct Jobs {
    delivery: Delivery,
    notifier: Option<Arc<Notifier>>,
    metrics: Arc<Metrics>,
}

/// Counts a poll's sources for `/metrics`.
fn count_polls(metrics: &Metrics, report: &PollReport) {
    for source in &report.sources {
        metrics.lms_poll(&source.source, source.error.is_none());
    }
}

impl JobSink for Jobs {
    fn fire<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Result<(), FireError>> {
        Box::pin(async move {
            match &job.payload {
                Payload::AgentPrompt { prompt } => self
                    .delivery
                    .run_prompt(PromptJob {
                        id: job.id,
                        channel: &job.delivery.channel,
                        to: &job.delivery.to,
                        thread: job.delivery.thread.as_deref(),
                        owner: job.delivery.owner(),
                        prompt,
                    })
                    .await
                    .map_err(|e| FireError::Delivery(Box::new(e))),
                Payload::LmsPoll { .. } => {
                    let Some(n) = &self.notifier else {
                        return Err(FireError::NotConfigured(
                            "no [[lms.sources]] are configured",
                        ));
                    };
                    // The courier delivers what the poll recorded.
                    let report = n.poll().await;
                    count_polls(&self.metrics, &report);
                    let failed: Vec<(String, String)> = report
                        .sources
                        .iter()
                        .filter_map(|s| Some((s.source.clone(), s.error.clone()?)))
                        .collect();
                    if failed.is_empty() {
                        Ok(())
                    } else {
                        Err(FireError::Sources(failed))
                    }
                }
            }
        })
    }
}

/// LMS notices go to their target, through the channel, confirmed.
struct Notices {
    delivery: Delivery,
}

impl NoticeSink for Notices {
    fn deliver<'a>(&'a self, notice: &'a Notice) -> BoxFuture<'a, Result<(), NoticeError>> {
        Box::pin(async move {
            let Some(target) = &notice.target else {
                return Err(NoticeError::NoTarget);
            };
            self.delivery
                .deliver(&target.channel, &target.to, &notice.text)
                .await
                .map_err(|e| NoticeError::Refused(Box::new(e)))
        })
    }
}
