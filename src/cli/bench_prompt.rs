//! `hearth bench --prompt`: the prompt a fresh conversation starts with,
//! every configured tool offered (MCP servers started) against the tools
//! picked by relevance, for messages people send; and how soon its first
//! token comes both ways, interleaved round by round. Each request is a
//! conversation of its own; with `[engine] share_prompts` on (the default)
//! it may start from another conversation's prompt, as a new chat does in
//! the daemon, so run it with sharing off too to see a cold start.
//! `hearth tools pick` shows the same choice for one message.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::agent::tool_pick::{self, MOST_PICKED};
use crate::chat::{ChatMessage, ChatRequest, SamplingParams, ToolSpec};
use crate::config::{Config, Environment};
use crate::daemon::{LoadedModel, LocalModels, Services};
use crate::engine::Engine;
use crate::engine::formats::ModelFamily;
use crate::providers::{LocalProvider, Provider};
use crate::tools::ToolRegistry;

/// Messages of the kinds hearth's users send.
const MESSAGES: [&str; 6] = [
    "Remind me next Tuesday at 9 to call the dentist.",
    "Remember that my sister's birthday is on May 3.",
    "What do I have due this week?",
    "Read notes.txt and tell me what is in it.",
    "What is the capital of France?",
    "Search my memories for the dentist's phone number.",
];

pub async fn run(config: &Config, env: &Environment, rounds: usize) -> anyhow::Result<ExitCode> {
    let provider = super::startup::local_provider(config).await?;
    let tools = configured_tools(config, env).await?;
    let specs = tools.specs();
    let engine = provider.engine();
    let most = match tool_pick::per_turn(config.agent.tools_per_turn, Some(engine.info().n_ctx)) {
        0 => MOST_PICKED,
        n => n,
    };
    println!(
        "{} tools configured ({} from MCP servers); by relevance at most {most} a turn.\n",
        specs.len(),
        specs.len().saturating_sub(tools.built_in_count())
    );
    println!(
        "{:<52} {:>12} {:>12}  picked",
        "message", "all tools", "by relevance"
    );
    let mut pairs = Vec::new();
    for message in MESSAGES {
        let picked = tool_pick::pick(&specs, message, &[], most);
        let all = prompt(config, engine, &specs, message);
        let few = prompt(config, engine, &picked, message);
        let names: Vec<&str> = picked.iter().map(|t| t.name.as_str()).collect();
        println!(
            "{message:<52} {:>12} {:>12}  {}",
            engine.prompt_tokens(&all, &specs)?,
            engine.prompt_tokens(&few, &picked)?,
            names.join(", ")
        );
        pairs.push(((all, specs.clone()), (few, picked)));
    }
    let one_token = SamplingParams {
        max_tokens: 1,
        ..SamplingParams::from(&config.generation)
    };
    first_tokens(&provider, &pairs, (rounds, &one_token)).await?;
    Ok(ExitCode::SUCCESS)
}

/// `hearth tools pick`: the tools a turn on `message` is offered, from
/// `from` (a JSON array of tools) or the configured ones.
pub async fn pick(
    config: &Config,
    env: &Environment,
    message: &str,
    from: Option<&std::path::Path>,
    most: Option<usize>,
) -> anyhow::Result<ExitCode> {
    let offered = match from {
        Some(path) => read_tools(path)?,
        None => configured_tools(config, env).await?.specs(),
    };
    let window = Some(config.model.context_size).filter(|n| *n > 0);
    let most =
        most.unwrap_or_else(
            || match tool_pick::per_turn(config.agent.tools_per_turn, window) {
                0 => offered.len(),
                n => n,
            },
        );
    for tool in tool_pick::pick(&offered, message, &[], most) {
        println!("{}", tool.name);
    }
    Ok(ExitCode::SUCCESS)
}

/// Tools from a JSON array: OpenAI's `{"type": "function", "function":
/// {...}}` or name, description and parameters alone.
fn read_tools(path: &std::path::Path) -> anyhow::Result<Vec<ToolSpec>> {
    use anyhow::Context;
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let tools: Vec<serde_json::Value> = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a JSON array of tools", path.display()))?;
    tools
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let spec = t.get("function").cloned().unwrap_or(t);
            serde_json::from_value(spec).with_context(|| {
                format!(
                    "{}: tool {i} has no name, description and parameters",
                    path.display()
                )
            })
        })
        .collect()
}

/// The tools the daemon would offer, MCP servers started and listed.
async fn configured_tools(config: &Config, env: &Environment) -> anyhow::Result<ToolRegistry> {
    let context = super::tools_cmd::context(config, env)?;
    let idle = Arc::new(LoadedModel::new(Arc::new(LocalModels::new(config.clone()))));
    let services = Services::open(config, idle)?;
    let tools = services.tools(config, &context.sandbox);
    // MCP servers come up on their own time: wait until the list holds still.
    let (mut seen, mut still) = (tools.specs().len(), 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    while still < 6 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = tools.specs().len();
        still = if now == seen { still + 1 } else { 0 };
        seen = now;
    }
    Ok(tools)
}

/// A fresh conversation's prompt on the CLI with `tools` offered.
fn prompt(config: &Config, engine: &Engine, tools: &[ToolSpec], message: &str) -> Vec<ChatMessage> {
    let system = crate::pipeline::prompt::system(
        config,
        tools,
        engine.info().family == ModelFamily::Xml,
        "cli",
        crate::channels::PLAIN_TEXT,
        "local",
        Some(engine.info().n_ctx),
    );
    vec![ChatMessage::system(system), ChatMessage::user(message)]
}

type Prompt = (Vec<ChatMessage>, Vec<ToolSpec>);

/// Each message's first token with every tool and with those picked,
/// alternating which goes first; the median of each.
async fn first_tokens(
    provider: &LocalProvider,
    pairs: &[(Prompt, Prompt)],
    (rounds, sampling): (usize, &SamplingParams),
) -> anyhow::Result<()> {
    let (mut all, mut few) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for (i, (every, picked)) in pairs.iter().enumerate() {
            let id = |side: &str| format!("bench-prompt-{round}-{i}-{side}");
            let both = [(every, id("all"), true), (picked, id("few"), false)];
            let order: Vec<_> = if round % 2 == 0 {
                both.iter().collect()
            } else {
                both.iter().rev().collect()
            };
            for ((messages, tools), conversation, is_all) in order {
                let request = ChatRequest {
                    tools: tools.clone(),
                    ..ChatRequest::new(conversation, messages.clone(), sampling.clone())
                };
                let took = first_token(provider, request).await?;
                if *is_all {
                    all.push(took)
                } else {
                    few.push(took)
                }
            }
        }
    }
    println!(
        "\nfirst token of a new conversation, median of {} ({rounds} rounds, interleaved): every tool {:.0} ms, by relevance {:.0} ms",
        all.len(),
        median(&mut all),
        median(&mut few)
    );
    Ok(())
}

async fn first_token(provider: &LocalProvider, request: ChatRequest) -> anyhow::Result<f64> {
    let started = Instant::now();
    provider
        .chat(request, CancellationToken::new())
        .collect_with(|_| {})
        .await?;
    Ok(started.elapsed().as_secs_f64() * 1000.0)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}
