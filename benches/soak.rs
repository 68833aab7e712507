//! Weeks of use in minutes: do the data folder and the process stay within
//! their limits? A durable in-memory channel carries 50 conversations'
//! messages through the whole pipeline (inbox, history, memory's
//! auto-save) to a scripted provider; 10 of them fall silent after two
//! weeks. An LMS source whose items change every day is polled twice a
//! day, five reminders are set each day for the day after next and fire
//! then, and the runtime is stopped and built again from the data folder
//! every 7 days.
//!
//! Simulated time: after each day, every timestamp the retention rules read
//! (messages, inbox records, memories, LMS items and reminders) moves one
//! day back, as if a day had passed, and `retention::sweep` runs as the
//! daemon's hourly sweep would; the scheduler runs on a manual clock moved
//! a day forward. The limits are set low (below) so that weeks reach them.
//!
//! Run: `cargo bench --bench soak` (`SOAK_DAYS`, default 84; 28 under `cargo test`). Prints a
//! line per week and writes `target/bench/soak.json`; figures in the README.
#![allow(clippy::unwrap_used)] // a bench: an unwrap is the clearest failure

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use hearth::channels::InMemoryChannel;
use hearth::chat::{ChatRequest, ChatStream, FinishReason, StreamEvent, Usage};
use hearth::clock::{Clock, ManualClock};
use hearth::config::{Config, Environment};
use hearth::daemon::Daemon;
use hearth::lms::{ItemKind, LmsError, LmsItem, LmsSource, Notice, NoticeError, NoticeSink};
use hearth::memory::{MemoryStore, StoreMemory};
use hearth::pipeline::{RuntimeBuilder, StaticProviders};
use hearth::providers::Provider;
use hearth::scheduler::{FireError, Job, JobSink, NewJob, Payload, Schedule, Scheduler};
use hearth::security::{Autonomy, SecurityPolicy};
use hearth::tools::ToolContext;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const CONVERSATIONS: usize = 50;
const QUIET_AFTER_DAY: usize = 14;
const MESSAGES_PER_DAY: usize = 3;

const LIMITS: &str = "[retention]
history_messages = 50
history_days = 21
memory_entries = 2000
inbox_days = 7
lms_days = 14
";

/// Answers every message with a fixed paragraph.
struct Scripted;

impl Provider for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn chat(&self, _request: ChatRequest, _cancel: CancellationToken) -> ChatStream {
        let (tx, rx) = mpsc::channel(2);
        let _ = tx.try_send(StreamEvent::TextDelta(
            "Noted. Here is a reply of a usual length, a few sentences that a small model would write back to a short message."
                .into(),
        ));
        let _ = tx.try_send(StreamEvent::Done {
            usage: Usage::default(),
            finish: FinishReason::Stop,
        });
        ChatStream::new(rx)
    }
}

/// A site that lists 30 assignments, three of them new each day.
struct Rotating {
    day: Arc<AtomicUsize>,
}

impl LmsSource for Rotating {
    fn name(&self) -> &str {
        "school"
    }

    fn poll(&self, now: DateTime<Utc>) -> BoxFuture<'_, Result<Vec<LmsItem>, LmsError>> {
        let first = self.day.load(Ordering::Relaxed) * 3;
        let items = (first..first + 30)
            .map(|k| {
                let mut item = LmsItem::new(
                    "school",
                    format!("a{k}"),
                    ItemKind::Assignment,
                    format!("Assignment {k}"),
                );
                item.due = Some(now + chrono::Duration::days(10 - (k - first) as i64 / 3));
                item
            })
            .collect();
        Box::pin(async move { Ok(items) })
    }
}

struct Discard;

impl NoticeSink for Discard {
    fn deliver<'a>(&'a self, _notice: &'a Notice) -> BoxFuture<'a, Result<(), NoticeError>> {
        Box::pin(async { Ok(()) })
    }
}

struct Count(AtomicUsize);

impl JobSink for Count {
    fn fire<'a>(&'a self, _job: &'a Job) -> BoxFuture<'a, Result<(), FireError>> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Box::pin(async { Ok(()) })
    }
}

fn config(home: &Path) -> Config {
    let text = format!(
        "[data]\ndir = \"{}\"\n[memory]\nconsolidate = false\n{LIMITS}",
        home.join("data").display()
    );
    Config::parse(
        &text,
        &home.join("config.toml"),
        &Environment::with_home(home),
    )
    .unwrap()
}

fn start(
    config: &Config,
) -> (
    Daemon,
    Arc<InMemoryChannel>,
    mpsc::UnboundedReceiver<hearth::dispatch::Report>,
) {
    std::fs::create_dir_all(&config.agent.workspace).unwrap();
    let tools = ToolContext::new(
        SecurityPolicy::new(&config.agent.workspace, Autonomy::Supervised, None).unwrap(),
        Duration::from_secs(10),
    );
    let providers = Arc::new(StaticProviders::new().with("local", Arc::new(Scripted)));
    let memory = MemoryStore::open(&MemoryStore::path_in(&config.data_dir)).unwrap();
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let runtime = RuntimeBuilder::new(config.clone(), providers, tools)
        .memory(Arc::new(StoreMemory::new(
            Arc::new(memory),
            config.memory.clone(),
        )))
        .channel(channel.clone())
        .build()
        .unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    (Daemon::start(runtime, Some(tx)), channel, rx)
}

/// Moves every timestamp the retention rules read one day back.
fn age(data: &Path) {
    for (db, sql) in [
        (
            "history.sqlite3",
            "UPDATE messages SET created = created - 86400;
             UPDATE inbox SET received = received - 86400, updated = updated - 86400;",
        ),
        (
            "memory.sqlite3",
            "UPDATE memories SET created = created - 86400, updated = updated - 86400;",
        ),
        (
            "lms.sqlite3",
            "UPDATE items SET first_seen = first_seen - 86400, last_seen = last_seen - 86400;
             UPDATE reminders SET due = due - 86400, sent_at = sent_at - 86400;",
        ),
    ] {
        let conn = rusqlite::Connection::open(data.join(db)).unwrap();
        conn.busy_timeout(Duration::from_secs(10)).unwrap();
        conn.execute_batch(&format!("BEGIN IMMEDIATE; {sql} COMMIT;"))
            .unwrap();
    }
}

fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

/// One simulated day of messages; waits for every outcome.
async fn talk(
    channel: &InMemoryChannel,
    reports: &mut mpsc::UnboundedReceiver<hearth::dispatch::Report>,
    day: usize,
) -> usize {
    let mut sent = 0;
    for round in 0..MESSAGES_PER_DAY {
        for c in 0..CONVERSATIONS {
            if c < 10 && day >= QUIET_AFTER_DAY {
                continue;
            }
            channel.inject_text(
                &format!("person{c}"),
                &format!("Day {day}, note {round}: remember that item {c}-{day}-{round} matters"),
            );
            sent += 1;
        }
    }
    for _ in 0..sent {
        reports.recv().await.unwrap();
    }
    sent
}

fn main() {
    let days: usize = std::env::var("SOAK_DAYS")
        .ok()
        .and_then(|d| d.parse().ok())
        // `cargo bench` passes --bench; under `cargo test` four weeks are
        // enough to pass every retention window once.
        .unwrap_or(if std::env::args().any(|a| a == "--bench") {
            84
        } else {
            28
        });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let config = config(home.path());
    let data = config.data_dir.clone();
    let lms_day = Arc::new(AtomicUsize::new(0));
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let fired = Arc::new(Count(AtomicUsize::new(0)));
    let began = Instant::now();
    let mut rows = Vec::new();
    let mut messages = 0;
    runtime.block_on(async {
        let mut daemon = None;
        for day in 0..days {
            if day % 7 == 0 {
                if let Some((d, _, _)) = daemon.take() {
                    Daemon::stop(d).await;
                }
                daemon = Some(start(&config));
            }
            let (_, channel, reports) = daemon.as_mut().unwrap();
            messages += talk(channel, reports, day).await;

            let notifier = hearth::lms::Notifier::new(&config.lms, &data, None)
                .unwrap()
                .with_sources(vec![Arc::new(Rotating {
                    day: lms_day.clone(),
                })]);
            lms_day.store(day, Ordering::Relaxed);
            for _ in 0..2 {
                notifier.poll_once(&Discard).await;
            }

            let scheduler = Scheduler::open(
                &hearth::scheduler::JobStore::path_in(&data),
                config.scheduler.clone(),
                clock.clone(),
            )
            .unwrap();
            for p in 0..5 {
                scheduler
                    .add(NewJob {
                        name: Some(format!("reminder {day}-{p}")),
                        schedule: Schedule::At(clock.now() + chrono::Duration::hours(36)),
                        timezone: chrono_tz::UTC,
                        payload: Payload::AgentPrompt {
                            prompt: "remind me".into(),
                        },
                        delivery: hearth::scheduler::Delivery {
                            channel: "mem".into(),
                            to: format!("person{p}"),
                            thread: None,
                            owner: None,
                        },
                    })
                    .unwrap();
            }
            clock.advance(chrono::Duration::days(1));
            let sink: Arc<dyn JobSink> = fired.clone();
            scheduler.tick(&sink);

            age(&data);
            let swept =
                hearth::retention::sweep(&data, &config.retention, Utc::now().timestamp()).unwrap();
            // As the daemon's sweeper does.
            let (running, _, _) = daemon.as_ref().unwrap();
            running.runtime().inbox().forget_known(&swept.inbox_keys);
            let usage = hearth::retention::usage(&config);
            rows.push((day + 1, rss_mib(), usage));
        }
        if let Some((d, _, _)) = daemon.take() {
            Daemon::stop(d).await;
        }
    });
    report(
        &rows,
        messages,
        fired.0.load(Ordering::Relaxed),
        began.elapsed(),
    );
}

/// The first number in `text` (a store's "N messages in …").
fn first_number(text: &str) -> u64 {
    text.split(|c: char| !c.is_ascii_digit())
        .find(|t| !t.is_empty())
        .and_then(|t| t.parse().ok())
        .unwrap_or(0)
}

fn report(
    rows: &[(usize, f64, Vec<hearth::retention::Usage>)],
    messages: usize,
    reminders: usize,
    took: Duration,
) {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "soak: {} simulated days, {messages} messages, {reminders} reminders fired, in {:.0} s",
        rows.len(),
        took.as_secs_f64()
    );
    println!("{LIMITS}");
    println!(
        "| day | RSS MiB | data MiB | history MiB | messages | memory entries | inbox finished | LMS items (+gone) | jobs |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut json = Vec::new();
    for (day, rss, usage) in rows {
        let get = |store: &str| usage.iter().find(|u| u.store == store).unwrap();
        let total: u64 = usage.iter().filter_map(|u| u.bytes).sum();
        let lms: Vec<u64> = get("lms")
            .holds
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|t| t.parse().ok())
            .collect();
        if day % 7 == 0 || *day == 1 || *day == rows.len() {
            println!(
                "| {day} | {rss:.1} | {:.2} | {:.2} | {} | {} | {} | {} (+{}) | {} |",
                mib(total),
                mib(get("history").bytes.unwrap_or(0)),
                first_number(&get("history").holds),
                first_number(&get("memory").holds),
                first_number(&get("inbox").holds),
                lms.first().copied().unwrap_or(0),
                lms.get(1).copied().unwrap_or(0),
                first_number(&get("scheduler").holds),
            );
        }
        json.push(serde_json::json!({
            "day": day,
            "rss_mib": rss,
            "stores": usage.iter().map(|u| serde_json::json!({
                "store": u.store, "bytes": u.bytes, "holds": u.holds, "limit": u.limit,
            })).collect::<Vec<_>>(),
        }));
    }
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench/soak.json");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    std::fs::write(&out, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    println!("figures: {}", out.display());
}
