//! `hearth cron list|add|remove`: scheduled jobs, by hand. A running daemon
//! picks up changes within a minute.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};

use crate::config::Config;
use crate::scheduler::parse::{parse_at, parse_duration};
use crate::scheduler::{Delivery, JobStore, NewJob, Payload, Schedule, Scheduler, SystemClock};

#[derive(Debug, Subcommand)]
pub enum CronCommand {
    /// List the jobs, soonest first.
    List,
    /// Add a job: one of --cron, --at, --in, --every; a prompt or --lms.
    Add(Box<AddArgs>),
    /// Remove a job by id.
    Remove { id: i64 },
    /// Pause a job by id: it stays, and never runs until resumed.
    Pause { id: i64 },
    /// Resume a paused job: it next runs at its first time from now (runs
    /// missed while paused are skipped; a reminder whose time passed runs now).
    Resume { id: i64 },
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// What the agent is asked when the job fires.
    pub prompt: Option<String>,
    /// Poll the LMS instead (all sources, or the one named).
    #[arg(long, num_args = 0..=1, default_missing_value = "", conflicts_with = "prompt")]
    pub lms: Option<String>,
    /// A cron expression, such as "0 9 * * 1-5".
    #[arg(long, group = "when")]
    pub cron: Option<String>,
    /// Once at a time: "2025-06-02 09:00", "09:00", or RFC 3339.
    #[arg(long, group = "when")]
    pub at: Option<String>,
    /// Once after a delay: "20m", "2h".
    #[arg(long = "in", group = "when")]
    pub after: Option<String>,
    /// Repeatedly: "1h", "1d".
    #[arg(long, group = "when")]
    pub every: Option<String>,
    /// IANA time zone (default: `[scheduler] timezone`).
    #[arg(long)]
    pub tz: Option<String>,
    /// The channel that delivers the result ("telegram", "cli").
    #[arg(long)]
    pub channel: String,
    /// The chat to deliver to.
    #[arg(long)]
    pub to: String,
    #[arg(long)]
    pub thread: Option<String>,
    #[arg(long)]
    pub name: Option<String>,
}

pub fn run(config: &Config, command: CronCommand) -> anyhow::Result<ExitCode> {
    let scheduler = Scheduler::open(
        &JobStore::path_in(&config.data_dir),
        config.scheduler.clone(),
        Arc::new(SystemClock),
    )?;
    match command {
        CronCommand::List => {
            let jobs = scheduler.list()?;
            if jobs.is_empty() {
                println!("no jobs");
            }
            for j in jobs {
                println!("{}", j.describe());
            }
        }
        CronCommand::Add(args) => {
            let job = new_job(&scheduler, *args)?;
            let job = scheduler.add(job)?;
            println!("added {}", job.describe());
        }
        CronCommand::Remove { id } => {
            if !scheduler.remove(id)? {
                eprintln!("no job #{id}");
                return Ok(ExitCode::FAILURE);
            }
            println!("removed job #{id}");
        }
        CronCommand::Pause { id } | CronCommand::Resume { id } => {
            let pausing = matches!(command, CronCommand::Pause { .. });
            let job = if pausing {
                scheduler.pause(id)?
            } else {
                scheduler.resume(id)?
            };
            let Some(job) = job else {
                eprintln!("no job #{id}");
                return Ok(ExitCode::FAILURE);
            };
            let done = if pausing { "paused" } else { "resumed" };
            println!("{done} {}", job.describe());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn new_job(scheduler: &Scheduler, a: AddArgs) -> anyhow::Result<NewJob> {
    let timezone = match &a.tz {
        None => scheduler.config().timezone,
        Some(name) => name
            .parse()
            .map_err(|_| anyhow::anyhow!("`{name}` is not an IANA time zone (like Asia/Seoul)"))?,
    };
    let now = scheduler.now();
    let schedule = if let Some(c) = &a.cron {
        Schedule::cron(c)?
    } else if let Some(t) = &a.at {
        Schedule::At(parse_at(t, timezone, now)?)
    } else if let Some(d) = &a.after {
        let d = parse_duration(d)?;
        Schedule::At(now + chrono::Duration::from_std(d).context("--in is too long")?)
    } else if let Some(d) = &a.every {
        Schedule::Every(parse_duration(d)?)
    } else {
        bail!("say when: --cron, --at, --in or --every");
    };
    let payload = match (a.prompt, a.lms) {
        (_, Some(source)) => Payload::LmsPoll {
            source: (!source.is_empty()).then_some(source),
        },
        (Some(prompt), None) if !prompt.trim().is_empty() => Payload::AgentPrompt { prompt },
        _ => bail!("say what to do: a prompt, or --lms"),
    };
    Ok(NewJob {
        name: a.name,
        schedule,
        timezone,
        payload,
        delivery: Delivery {
            channel: a.channel,
            to: a.to,
            thread: a.thread,
            owner: None,
        },
    })
}
