//! The requests hearth's users make, run through the real pipeline with
//! hearth's own tools and scored by what they leave behind: the job exists
//! at the right time, the memory holds the fact, the file was read, no tool
//! ran when none was needed. Never by the reply's wording, except where a
//! reading request leaves no state: there the reply must carry a fact only
//! the tool could have given it (a due assignment's title, a password in a
//! file).
//!
//! Each scenario that needs a tool has a control: the same messages with
//! that tool taken away. A control that passes would mean the check is
//! blind to the tool, so [`Tally::control_passed`] must stay 0.
//! `hearth bench --scenarios` runs them on the configured model.

mod checks;
mod world;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::channels::approval::Answer;
use crate::channels::in_memory::InMemoryChannel;
use crate::daemon::Daemon;
use crate::pipeline::{RuntimeBuilder, StaticProviders};
use crate::providers::Provider;

pub use checks::{After, Call, Verdict};
pub use world::{COURSEWORK, NOTES, Setup, ToolContextFor, World, WorldError};

/// How long one message's turn may take before the scenario is failed.
const TURN_LIMIT: Duration = Duration::from_secs(600);

/// One request, the tools it cannot pass without, and its check.
pub struct Scenario {
    pub name: &'static str,
    /// Sent one after another in the same chat, each answered first.
    pub messages: &'static [&'static str],
    /// What the control takes away (none: the scenario needs no tool, and
    /// its check is that none ran).
    pub needs: &'static [&'static str],
    check: fn(&After) -> Verdict,
}

impl Scenario {
    pub fn check(&self, after: &After) -> Verdict {
        (self.check)(after)
    }
}

/// The requests, in the order they run.
pub const SCENARIOS: [Scenario; 6] = [
    Scenario {
        name: "reminder",
        messages: &["Remind me next Tuesday at 9am to call the dentist."],
        needs: &["cron_add"],
        check: checks::reminder,
    },
    Scenario {
        name: "remember",
        messages: &["Remember that my sister's birthday is on May 3."],
        needs: &["memory_store"],
        check: checks::remember,
    },
    Scenario {
        name: "due_this_week",
        messages: &["What do I have due this week?"],
        needs: &["lms_upcoming", "lms_recent"],
        check: checks::due_this_week,
    },
    Scenario {
        name: "read_file",
        messages: &["Read notes.txt and tell me what is in it."],
        needs: &["file_read", "shell"],
        check: checks::read_file,
    },
    Scenario {
        name: "no_tool",
        messages: &["What is the capital of France?"],
        needs: &[],
        check: checks::no_tool,
    },
    Scenario {
        name: "follow_up",
        messages: &[
            "Remind me tomorrow at 6pm to call mom.",
            "Actually, make it 7pm instead.",
        ],
        needs: &["cron_add", "cron_remove"],
        check: checks::follow_up,
    },
];

/// One scenario's results over the rounds.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Tally {
    pub name: String,
    pub rounds: usize,
    pub passed: usize,
    /// Rounds of the control (the needed tools taken away); 0 where the
    /// scenario needs none.
    pub control_rounds: usize,
    /// Controls that passed: each one a fault in the check.
    pub control_passed: usize,
    /// Why rounds failed, first seen first, without repeats.
    pub failures: Vec<String>,
}

/// Runs one scenario once in a fresh world; `without` are taken away.
pub async fn play(
    scenario: &Scenario,
    world: &World,
    provider: Arc<dyn Provider>,
    without: &[&str],
) -> Result<Verdict, WorldError> {
    let channel = Arc::new(InMemoryChannel::new("scenario").always_answer(Answer::Once));
    let (tools, context) = world.tools(without)?;
    let providers = Arc::new(StaticProviders::new().with("local", provider));
    let runtime = RuntimeBuilder::new(world.config.clone(), providers, context)
        .channel(channel.clone())
        .tools(Arc::new(tools))
        .memory(world.turn_memory())
        .build()?;
    let (tx, mut reports) = mpsc::unbounded_channel();
    let daemon = Daemon::start(runtime, Some(tx));
    let mut timed_out = None;
    for message in scenario.messages {
        channel.inject_text("person", message);
        if !matches!(
            tokio::time::timeout(TURN_LIMIT, reports.recv()).await,
            Ok(Some(_))
        ) {
            timed_out = Some(*message);
            break;
        }
    }
    Daemon::stop(daemon).await;
    if let Some(message) = timed_out {
        return Ok(Verdict::Fail(format!(
            "no answer to {message:?} within {} s",
            TURN_LIMIT.as_secs()
        )));
    }
    let replies = channel.sent().into_iter().map(|m| m.content).collect();
    Ok(scenario.check(&world.after(replies)?))
}

/// Every scenario `rounds` times, each beside its control, each in a world
/// of its own; `progress` hears a line per round.
pub async fn run(
    provider: Arc<dyn Provider>,
    setup: &world::Setup<'_>,
    rounds: usize,
    mut progress: impl FnMut(&str),
) -> Result<Vec<Tally>, WorldError> {
    let mut tallies = Vec::new();
    for scenario in &SCENARIOS {
        let mut tally = Tally {
            name: scenario.name.to_string(),
            ..Tally::default()
        };
        for round in 1..=rounds {
            let world = World::new(setup).await?;
            let verdict = play(scenario, &world, provider.clone(), &[]).await?;
            drop(world);
            tally.rounds += 1;
            let mut line = format!("{} round {round}: ", scenario.name);
            match verdict {
                Verdict::Pass => {
                    tally.passed += 1;
                    line.push_str("passed");
                }
                Verdict::Fail(why) => {
                    line.push_str(&format!("failed: {why}"));
                    if !tally.failures.contains(&why) {
                        tally.failures.push(why);
                    }
                }
            }
            if !scenario.needs.is_empty() {
                let world = World::new(setup).await?;
                let control = play(scenario, &world, provider.clone(), scenario.needs).await?;
                tally.control_rounds += 1;
                if control == Verdict::Pass {
                    tally.control_passed += 1;
                    line.push_str("; its control PASSED (the check is blind)");
                }
            }
            progress(&line);
        }
        tallies.push(tally);
    }
    Ok(tallies)
}
