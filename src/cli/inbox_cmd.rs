//! `hearth inbox`: the messages the durable inbox still holds open (being
//! answered, replies being sent or waiting for their next try) and those
//! that failed, with why. Reads the store without writing, so it works
//! while the daemon runs.

use std::process::ExitCode;

use crate::config::Config;
use crate::inbox::{self, Entry, State};

pub fn run(config: &Config, all: bool) -> anyhow::Result<ExitCode> {
    let states: &[State] = if all {
        &State::ALL
    } else {
        &[
            State::Received,
            State::Started,
            State::Replying,
            State::Failed,
        ]
    };
    let Some(entries) = inbox::read(&config.data_dir, states)? else {
        println!("The inbox is empty: no message has been recorded yet.");
        return Ok(ExitCode::SUCCESS);
    };
    if let Some(counts) = inbox::count(&config.data_dir)? {
        println!("{}", inbox::summary(&counts));
    }
    for entry in &entries {
        println!("{}", line(entry));
    }
    Ok(ExitCode::SUCCESS)
}

fn line(entry: &Entry) -> String {
    let m = &entry.message;
    let when = chrono::DateTime::from_timestamp(entry.received, 0)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_default();
    let text: String = m.content.chars().take(60).collect();
    let mut line = format!(
        "{when}  {:<10} {}/{} from {}: “{text}”",
        entry.state.as_str(),
        m.channel,
        m.reply_target,
        m.sender
    );
    if entry.state == State::Replying
        && let Some(at) = entry.next_try
    {
        line.push_str(&format!(
            "; try {} failed, next at {}",
            entry.send_tries,
            chrono::DateTime::from_timestamp(at, 0)
                .map(|t| t
                    .with_timezone(&chrono::Local)
                    .format("%H:%M:%S")
                    .to_string())
                .unwrap_or_default()
        ));
    }
    if let Some(error) = &entry.error {
        line.push_str(&format!(" — {error}"));
    }
    line
}
