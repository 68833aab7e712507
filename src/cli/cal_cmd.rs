//! `hearth cal`: the calendar feed's address (made on first use), the feed
//! itself, and revoking it. The address is a secret: whoever has it reads
//! the person's deadlines, nothing else; `revoke` ends it at once (the
//! daemon reads the secret on every request), and the next `url` makes a
//! new one.

use std::process::ExitCode;
use std::sync::Arc;

use chrono::Utc;
use clap::Subcommand;

use crate::config::Config;
use crate::daemon::DeadlineFeed;
use crate::lms::SeenStore;
use crate::scheduler::{JobStore, Scheduler, SystemClock};

#[derive(Debug, Subcommand)]
pub enum CalCommand {
    /// The feed's address, to subscribe to in a calendar app (made on first use).
    Url,
    /// Print the feed (iCalendar) as a calendar app reads it.
    Show,
    /// End the feed: its address stops working; `hearth cal url` makes a new one.
    Revoke,
}

pub fn run(config: &Config, command: CalCommand) -> anyhow::Result<ExitCode> {
    let store = SeenStore::open_in(&config.data_dir)?;
    match command {
        CalCommand::Url => {
            let Some(listen) = config.gateway.listen else {
                eprintln!(
                    "hearth cal: the feed is served by the gateway, which is off; set [channels.gateway] listen (and a token) in the config, then run this again."
                );
                return Ok(ExitCode::FAILURE);
            };
            let secret = store.feed_token(true)?.unwrap_or_default();
            let base = crate::channels::gateway::page_url(listen);
            let (here, away) = match base.split_once(" (from another machine: ") {
                Some((here, away)) => (here.to_string(), Some(away.trim_end_matches(')'))),
                None => (base.clone(), None),
            };
            println!("{here}cal/{secret}.ics");
            if let Some(away) = away {
                println!("from another machine (a phone): {away}cal/{secret}.ics");
            }
            eprintln!(
                "Subscribe to it in the calendar app (Apple Calendar: File > New Calendar Subscription; Google Calendar: Other calendars > From URL; Thunderbird: New Calendar > On the Network). Keep it private; `hearth cal revoke` ends it."
            );
        }
        CalCommand::Show => {
            let jobs = Scheduler::open(
                &JobStore::path_in(&config.data_dir),
                config.scheduler.clone(),
                Arc::new(SystemClock),
            )?;
            let feed = DeadlineFeed::open(&config.data_dir, &config.lms, Some(Arc::new(jobs)))?;
            print!("{}", feed.text(Utc::now())?);
        }
        CalCommand::Revoke => {
            if store.revoke_feed()? {
                println!(
                    "The calendar feed's address no longer works; `hearth cal url` makes a new one."
                );
            } else {
                println!("There was no calendar feed to revoke.");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
