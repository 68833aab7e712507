//! `hearth bench --speculative`: decoding with drafts against without, on
//! chat and on replies that quote their prompt.
//!
//! The same model answers the same requests drafting as configured
//! (prompt lookup unless a draft model is set) and not drafting, one
//! engine after the other in alternating order round by round (this machine's speed
//! drifts, so only runs interleaved round by round compare). Every request
//! is a new conversation; decode speed is the reply's tokens over its
//! generation time, so reading the prompt does not count. Greedy replies
//! should be the same both ways; the report says how many are.

use std::path::Path;
use std::process::ExitCode;

use serde::Serialize;

use super::bench::{median, start, stop, timed_reply, write_json};
use crate::chat::{ChatMessage, Usage};
use crate::config::Config;
use crate::engine::{Engine, EngineSettings, Speculation};

/// Chat: questions answered in the model's own words.
const CHAT: [&str; 4] = [
    "Write a short story about a lighthouse keeper and a storm.",
    "Explain how a bicycle works to a child.",
    "What should I pack for a weekend of hiking in the mountains?",
    "Give me three ideas for a birthday party at home.",
];

/// A file the quoting requests hand over, as a tool result or an upload.
const FILE: &str = "[server]\nhost = \"0.0.0.0\"\nport = 8080\nworkers = 4\ntimeout_seconds = 30\n\n[database]\nurl = \"postgres://app@localhost/app\"\npool_size = 10\nstatement_timeout_ms = 5000\n\n[logging]\nlevel = \"info\"\nformat = \"json\"\nfile = \"/var/log/app/server.log\"\n\n[cache]\nenabled = true\nttl_seconds = 600\nmax_entries = 10000\n";

/// The `i`th request of a kind of text.
type Prompts = fn(usize) -> Vec<ChatMessage>;

/// Replies that quote the prompt: a file to edit, a tool result to relay.
fn quoting(i: usize) -> Vec<ChatMessage> {
    let ask = match i % 4 {
        0 => format!(
            "Here is my config file:\n\n{FILE}\nChange the port to 9090 and show me the whole file."
        ),
        1 => format!(
            "Here is my config file:\n\n{FILE}\nSet the logging level to debug and show me the whole file."
        ),
        2 => format!(
            "The `read_file` tool returned:\n\n{FILE}\nRepeat the [database] and [logging] sections exactly."
        ),
        _ => format!(
            "The `read_file` tool returned:\n\n{FILE}\nCopy the file exactly, then say which port it uses."
        ),
    };
    vec![
        ChatMessage::system("You are a helpful assistant."),
        ChatMessage::user(ask),
    ]
}

fn chat(i: usize) -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("You are a helpful assistant."),
        ChatMessage::user(CHAT[i % CHAT.len()]),
    ]
}

#[derive(Debug, Serialize)]
pub struct SpeculativeReport {
    pub model: String,
    pub threads: i32,
    /// The drafting engine's way, in words.
    pub drafting: String,
    pub reply_tokens: u32,
    pub rounds: usize,
    pub kinds: Vec<Kind>,
}

/// One kind of text over all rounds.
#[derive(Debug, Serialize)]
pub struct Kind {
    pub name: &'static str,
    /// Per round: decode tokens/s without drafts, with, and their ratio.
    pub plain_tokens_per_s: Vec<f64>,
    pub drafted_tokens_per_s: Vec<f64>,
    pub ratios: Vec<f64>,
    pub median_ratio: f64,
    pub drafted: u32,
    pub accepted: u32,
    /// Accepted over drafted.
    pub acceptance: f64,
    pub replies: usize,
    pub identical_replies: usize,
    /// Per reply that differs: the characters both share from the start,
    /// and the two replies.
    pub differing: Vec<(usize, String, String)>,
}

pub async fn run(
    config: &Config,
    json: &Path,
    rounds: usize,
    reply_tokens: u32,
) -> anyhow::Result<ExitCode> {
    let base = crate::engine_setup::engine_settings(config)?;
    let drafting = match base.speculation {
        Speculation::Off => Speculation::Lookup,
        ref s => s.clone(),
    };
    let settings = |speculation: Speculation| EngineSettings {
        speculation,
        kv_dir: None,
        disk_cache_bytes: 0,
        ..base.clone()
    };
    let ways = [settings(Speculation::Off), settings(drafting)];
    let report = measure(&ways, rounds.max(1), reply_tokens).await?;
    print(&report);
    write_json(json, &serde_json::to_string_pretty(&report)?)?;
    Ok(ExitCode::SUCCESS)
}

/// What one reply gave.
struct One {
    tokens_per_s: f64,
    usage: Usage,
    text: String,
}

async fn one(
    engine: &Engine,
    key: &str,
    messages: Vec<ChatMessage>,
    tokens: u32,
) -> anyhow::Result<One> {
    let (usage, _, text) = timed_reply(engine, key, messages, tokens).await?;
    let tokens_per_s = f64::from(usage.completion_tokens) * 1e3 / usage.generation_ms.max(1e-3);
    Ok(One {
        tokens_per_s,
        usage,
        text,
    })
}

async fn measure(
    ways: &[EngineSettings; 2],
    rounds: usize,
    tokens: u32,
) -> anyhow::Result<SpeculativeReport> {
    let builders: [(&'static str, Prompts); 2] = [("chat", chat), ("quoting the prompt", quoting)];
    let mut kinds = Vec::new();
    let mut about = (String::new(), String::new(), 0);
    for (name, build) in builders {
        let mut kind = Kind::new(name);
        for round in 0..rounds {
            eprintln!("{name}: round {} of {rounds} ...", round + 1);
            // One engine at a time (llama.cpp's backend is one per
            // process), in alternating order.
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            let mut runs: [Vec<One>; 2] = [Vec::new(), Vec::new()];
            for way in order {
                let (got, info) = requests(&ways[way], round, build, tokens).await?;
                if way == 1 {
                    about = (info.path.display().to_string(), info.drafting, info.threads);
                }
                runs[way] = got;
            }
            kind.add_round(&runs[0], &runs[1]);
        }
        kind.median_ratio = median(&mut kind.ratios.clone());
        kind.acceptance = f64::from(kind.accepted) / f64::from(kind.drafted.max(1));
        kinds.push(kind);
    }
    Ok(SpeculativeReport {
        model: about.0,
        drafting: about.1,
        threads: about.2,
        reply_tokens: tokens,
        rounds,
        kinds,
    })
}

/// The four requests of a kind on an engine of its own.
async fn requests(
    settings: &EngineSettings,
    round: usize,
    build: Prompts,
    tokens: u32,
) -> anyhow::Result<(Vec<One>, crate::engine::ModelInfo)> {
    let engine = start(settings.clone()).await?;
    let info = engine.info().clone();
    let mut got = Vec::new();
    for i in 0..4 {
        match one(&engine, &format!("spec-{round}-{i}"), build(i), tokens).await {
            Ok(o) => got.push(o),
            Err(e) => {
                stop(engine).await;
                return Err(e);
            }
        }
    }
    stop(engine).await;
    Ok((got, info))
}

impl Kind {
    fn new(name: &'static str) -> Self {
        Self {
            name,
            plain_tokens_per_s: Vec::new(),
            drafted_tokens_per_s: Vec::new(),
            ratios: Vec::new(),
            median_ratio: 0.0,
            drafted: 0,
            accepted: 0,
            acceptance: 0.0,
            replies: 0,
            identical_replies: 0,
            differing: Vec::new(),
        }
    }

    /// One round's replies without drafts and with.
    fn add_round(&mut self, plain: &[One], drafted: &[One]) {
        for (p, d) in plain.iter().zip(drafted) {
            self.drafted += d.usage.drafted_tokens;
            self.accepted += d.usage.accepted_tokens;
            self.replies += 1;
            if p.text == d.text {
                self.identical_replies += 1;
            } else {
                let shared = p
                    .text
                    .chars()
                    .zip(d.text.chars())
                    .take_while(|(a, b)| a == b)
                    .count();
                self.differing
                    .push((shared, p.text.clone(), d.text.clone()));
            }
        }
        let mean = |v: &[One]| v.iter().map(|o| o.tokens_per_s).sum::<f64>() / v.len() as f64;
        let (p, d) = (mean(plain), mean(drafted));
        eprintln!("  without drafts {p:.1} tokens/s, with {d:.1}");
        self.plain_tokens_per_s.push(p);
        self.drafted_tokens_per_s.push(d);
        self.ratios.push(d / p);
    }
}

fn print(r: &SpeculativeReport) {
    println!(
        "\nspeculative decoding ({}), {} rounds, {} tokens per reply at most\n",
        r.drafting, r.rounds, r.reply_tokens
    );
    println!(
        "| text | decode tokens/s without | with | ratio (median of rounds) | drafted | accepted | acceptance | identical replies |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for k in &r.kinds {
        let mut p = k.plain_tokens_per_s.clone();
        let mut d = k.drafted_tokens_per_s.clone();
        println!(
            "| {} | {:.1} | {:.1} | {:.2}× | {} | {} | {:.0}% | {} of {} |",
            k.name,
            median(&mut p),
            median(&mut d),
            k.median_ratio,
            k.drafted,
            k.accepted,
            k.acceptance * 100.0,
            k.identical_replies,
            k.replies
        );
    }
}
