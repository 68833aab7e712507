//! `hearth brief`: today's morning brief at the terminal, as the daemon
//! would send it now (whatever the hour), from the stores; nothing is
//! sent or marked.

use std::process::ExitCode;
use std::sync::Arc;

use crate::config::Config;
use crate::daemon::brief::extras;
use crate::lms::Notifier;
use crate::scheduler::{JobStore, Scheduler, SystemClock};

pub async fn run(config: &Config) -> anyhow::Result<ExitCode> {
    let notifier = Notifier::new(&config.lms, &config.data_dir, None)?;
    let now = notifier.now();
    let jobs = Scheduler::open(
        &JobStore::path_in(&config.data_dir),
        config.scheduler.clone(),
        Arc::new(SystemClock),
    )?;
    let extras = extras(Some(&jobs), config.lms.deliver.as_ref(), now);
    match notifier.brief_text(&config.brief, &extras, now).await? {
        Some(text) => println!("{text}"),
        None => println!(
            "Nothing to tell today: nothing due in the next {} days, no reminders or calendar events today, nothing changed since the last brief.",
            config.brief.ahead_days + 1
        ),
    }
    if !config.brief.on(!config.lms.sources.is_empty()) {
        eprintln!(
            "(the daemon sends no brief: [brief] is off, or no [[lms.sources]] are configured)"
        );
    } else if config.lms.deliver.is_none() {
        eprintln!("(the daemon has nowhere to send it: set [lms] deliver)");
    }
    Ok(ExitCode::SUCCESS)
}
