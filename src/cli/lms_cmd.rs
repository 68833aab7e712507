//! `hearth lms status`: for each configured source, the last poll, how many
//! items it lists, how many notices wait to be delivered, what it skipped,
//! and its last error with the fix. Reads `lms.sqlite3`, so it works while
//! the daemon runs; exits 1 when a source's last poll failed, for scripts.

use std::process::ExitCode;

use chrono::{DateTime, Utc};
use clap::Subcommand;

use crate::config::{Config, mask_url};
use crate::lms::{SeenStore, SourceStatus};

#[derive(Debug, Subcommand)]
pub enum LmsCommand {
    /// Each source's last poll, items tracked, notices waiting, last error and its fix.
    Status,
}

pub fn run(config: &Config, command: LmsCommand) -> anyhow::Result<ExitCode> {
    let LmsCommand::Status = command;
    let lms = &config.lms;
    if lms.sources.is_empty() {
        println!(
            "No LMS sources are configured: add [[lms.sources]] to the config (see config.example.toml)."
        );
        return Ok(ExitCode::SUCCESS);
    }
    let path = config.data_dir.join("lms.sqlite3");
    let names: Vec<&str> = lms.sources.iter().map(|s| s.name.as_str()).collect();
    let statuses = if path.exists() {
        SeenStore::open(&path)?.status(&names)?
    } else {
        Vec::new()
    };
    let mut failing = false;
    for source in &lms.sources {
        println!(
            "{} ({}, {})",
            source.name,
            source.kind.as_str(),
            mask_url(&source.url)
        );
        match statuses.iter().find(|s| s.source == source.name) {
            Some(s) if s.last_poll.is_some() => {
                failing |= s.last_error.is_some();
                for line in describe(s, lms.time_zone) {
                    println!("  {line}");
                }
            }
            _ => println!("  not polled yet: the daemon polls every source when it starts"),
        }
    }
    Ok(if failing {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The lines shown under one source.
fn describe(s: &SourceStatus, tz: chrono_tz::Tz) -> Vec<String> {
    let when = |t: Option<DateTime<Utc>>| {
        t.map(|t| {
            t.with_timezone(&tz)
                .format("%a %-d %b %Y %H:%M %Z")
                .to_string()
        })
        .unwrap_or_else(|| "never".into())
    };
    let mut lines = vec![match &s.last_error {
        None => format!("last poll {}: ok", when(s.last_poll)),
        Some(error) => format!(
            "last poll {}: FAILED: {error} (last good poll: {})",
            when(s.last_poll),
            when(s.last_ok)
        ),
    }];
    lines.push(format!(
        "{} item{} tracked, {} notice{} waiting to be delivered",
        s.tracked,
        if s.tracked == 1 { "" } else { "s" },
        s.waiting,
        if s.waiting == 1 { "" } else { "s" }
    ));
    lines.extend(s.notes.iter().map(|n| format!("note: {n}")));
    lines
}
