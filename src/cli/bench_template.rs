//! `hearth bench --template FILE`: how much of each turn's prompt the KV
//! cache can reuse under a chat template.
//!
//! The engine keeps a conversation's tokens as they were: the last prompt
//! and the reply generated after it. The next turn decodes only what comes
//! after the longest common prefix with its new prompt. A template that
//! moves text between turns (Mistral Nemo puts the system text in the last
//! user turn) shrinks that prefix. For each template (a file, or every
//! `.jinja` in a folder) this renders a four-turn conversation the way the
//! engine does (hearth's system prompt, the tools in the family's format)
//! and reports, per turn, the prompt's tokens and how many are reused, with
//! the configured model's tokenizer. Nothing is decoded.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::agent::prompt::{self, Profile, PromptInputs};
use crate::chat::{ChatMessage, Reasoning};
use crate::config::Config;
use crate::engine::formats::{self, ModelFamily, detect::detect};
use crate::engine::template::{ChatTemplate, Turn};
use crate::engine::{Engine, EngineSettings};
use crate::tools::ToolRegistry;

const TURNS: [(&str, &str); 4] = [
    ("What is the capital of France?", "Paris."),
    (
        "What is it famous for?",
        "The Eiffel Tower, the Louvre and its food.",
    ),
    ("Name a river that flows through it.", "The Seine."),
    ("How long is that river?", "About 777 km."),
];

pub async fn run(config: &Config, path: &Path) -> anyhow::Result<ExitCode> {
    let files = templates(path)?;
    let settings = EngineSettings::from_config(config)?;
    let engine = tokio::task::spawn_blocking(move || Engine::start(settings, None)).await??;
    println!(
        "Prompt reuse per turn with {}'s tokenizer (tokens reused / prompt tokens):\n",
        engine.info().path.display()
    );
    println!(
        "{:<48} {:<11} turn 2            turn 3            turn 4",
        "template", "family"
    );
    let mut failed = false;
    for file in files {
        let name = file
            .file_stem()
            .map_or(String::new(), |s| s.to_string_lossy().into_owned());
        match reuse(&engine, &file) {
            Ok((family, turns)) => {
                let cells: Vec<String> = turns
                    .iter()
                    .map(|(kept, total)| {
                        format!(
                            "{kept:>4}/{total:<4} {:>5.1}%",
                            100.0 * *kept as f64 / *total as f64
                        )
                    })
                    .collect();
                println!("{name:<48} {:<11} {}", family.name(), cells.join("  "));
            }
            Err(e) => {
                failed = true;
                println!("{name:<48} error: {e}");
            }
        }
    }
    tokio::task::spawn_blocking(move || engine.shutdown()).await?;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `path` itself, or the `.jinja` files in it, sorted.
fn templates(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(path)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .collect();
    found.sort();
    anyhow::ensure!(!found.is_empty(), "{} holds no .jinja file", path.display());
    Ok(found)
}

/// The family, and for turns 2 to 4 the tokens reused and the prompt's.
fn reuse(engine: &Engine, file: &Path) -> anyhow::Result<(ModelFamily, Vec<(usize, usize)>)> {
    let source = std::fs::read_to_string(file)?;
    let family = detect(&source);
    let template = ChatTemplate::new(source, file.display().to_string(), "", "")?;
    let tools = ToolRegistry::core().specs();
    let native = family != ModelFamily::Xml;
    // No workspace files: the prompt is hearth's own text only.
    let workspace = std::env::temp_dir().join("hearth-bench-template-no-workspace");
    let system = prompt::build(&PromptInputs {
        tools: &tools,
        list_tools: !native,
        workspace: &workspace,
        channel: "cli",
        channel_capabilities: "plain text",
        model: "bench",
        date: "2026-11-23",
        profile: Profile::Full,
    });
    let tokens = |text: &str| engine.tokens(text).unwrap_or_default();
    let mut messages = vec![ChatMessage::system(system)];
    let mut cached: Vec<i32> = Vec::new();
    let mut out = Vec::new();
    for (i, (question, answer)) in TURNS.iter().enumerate() {
        messages.push(ChatMessage::user(*question));
        let prompt = template.render_turn(&Turn {
            format: formats::format(family),
            messages: &messages,
            tools: if native { &tools } else { &[] },
            reasoning: Reasoning::Auto,
            add_generation_prompt: true,
        })?;
        let now = tokens(&prompt);
        if i > 0 {
            let kept = cached.iter().zip(&now).take_while(|(a, b)| a == b).count();
            out.push((kept, now.len()));
        }
        // What the sequence holds after the reply: the prompt, then the
        // answer's tokens as generated.
        cached = now;
        cached.extend(tokens(answer));
        messages.push(ChatMessage::assistant(*answer));
    }
    Ok((family, out))
}
