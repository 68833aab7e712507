//! `hearth bench --template FILE`: how much of each turn's prompt the KV
//! cache can reuse under a chat template.
//!
//! The engine keeps a conversation's tokens as they were: the last prompt
//! and the reply generated after it. The next turn keeps the longest common
//! prefix with its new prompt, and runs of cached tokens a template moved
//! ([`crate::engine::reuse`]; Mistral Nemo puts the system text and the
//! tools in the last user turn). For each template (a file, or every
//! `.jinja` in a folder) this renders a four-turn conversation the way the
//! engine does (hearth's system prompt, the tools in the family's format)
//! and reports, per turn, the prompt's tokens, how many are kept, and how
//! many the common prefix alone would keep, with the configured model's
//! tokenizer and its `reuse_min_chunk`. Nothing is decoded.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::agent::prompt::{self, Profile, PromptInputs};
use crate::chat::{ChatMessage, Reasoning};
use crate::config::Config;
use crate::engine::formats::{self, ModelFamily, detect::detect};
use crate::engine::template::{ChatTemplate, Turn};
use crate::engine::{Engine, reuse};
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
    let settings = crate::engine_setup::engine_settings(config)?;
    let engine = tokio::task::spawn_blocking(move || Engine::start(settings, None)).await??;
    let min_chunk = engine.info().reuse_min_chunk as usize;
    println!(
        "Prompt reuse per turn with {}'s tokenizer (tokens kept / prompt tokens, \
         moved runs of {min_chunk}+ tokens; the common prefix alone in brackets):\n",
        engine.info().path.display()
    );
    println!(
        "{:<44} {:<10} {:<24} {:<24} turn 4",
        "template", "family", "turn 2", "turn 3"
    );
    let mut failed = false;
    for file in files {
        let name = file
            .file_stem()
            .map_or(String::new(), |s| s.to_string_lossy().into_owned());
        match reuse(&engine, &file, min_chunk) {
            Ok((family, turns)) => {
                let pct = |n: usize, total: usize| 100.0 * n as f64 / total as f64;
                let cells: Vec<String> = turns
                    .iter()
                    .map(|t| {
                        format!(
                            "{:>4}/{:<4} {:>5.1}% ({:>3.0}%)",
                            t.kept,
                            t.total,
                            pct(t.kept, t.total),
                            pct(t.prefix, t.total)
                        )
                    })
                    .collect();
                println!("{name:<44} {:<10} {}", family.name(), cells.join("  "));
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

/// One turn's prompt: its tokens, those kept, and those the common prefix
/// alone keeps.
struct Kept {
    total: usize,
    kept: usize,
    prefix: usize,
}

/// The family, and what turns 2 to 4 keep.
fn reuse(
    engine: &Engine,
    file: &Path,
    min_chunk: usize,
) -> anyhow::Result<(ModelFamily, Vec<Kept>)> {
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
            out.push(Kept {
                total: now.len(),
                kept: reuse::plan(&cached, &now, min_chunk).kept(),
                prefix: reuse::plan(&cached, &now, 0).kept(),
            });
        }
        // What the sequence holds after the reply: the prompt, the
        // answer's tokens as generated, and the end-of-turn token.
        cached = now;
        cached.extend(tokens(answer));
        cached.extend(engine.end_of_turn());
        messages.push(ChatMessage::assistant(*answer));
    }
    Ok((family, out))
}
