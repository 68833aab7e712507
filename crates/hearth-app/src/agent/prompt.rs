//! The system prompt, built from the parts under `prompts/system/`.
//!
//! It must be byte-identical across the turns of a conversation, so the
//! engine's KV cache can reuse it: it carries the date but never the time,
//! and nothing that changes per turn (the time and per-turn context ride on
//! the user's message instead). A `compact` profile for small models keeps
//! tool descriptions to one line each and lists skills without their bodies.

use std::path::Path;

use crate::chat::ToolSpec;

const BASE: &str = include_str!("../../../../prompts/system/base.md");
const TOOLS: &str = include_str!("../../../../prompts/system/tools.md");
const SAFETY: &str = include_str!("../../../../prompts/system/safety.md");

/// Project context files read from the workspace, in this order.
pub const BOOTSTRAP_FILES: [&str; 4] = ["IDENTITY.md", "SOUL.md", "USER.md", "AGENTS.md"];
/// Characters kept of each bootstrap file.
pub const BOOTSTRAP_LIMIT: usize = 20_000;

/// How much detail the prompt carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Full tool schemas.
    Full,
    /// One line per tool, for small context windows.
    Compact,
}

impl Profile {
    /// Compact for context windows of 8,192 tokens or fewer.
    pub fn for_context(n_ctx: u32) -> Self {
        if n_ctx <= 8_192 {
            Self::Compact
        } else {
            Self::Full
        }
    }
}

/// What the prompt is built from.
pub struct PromptInputs<'a> {
    pub tools: &'a [ToolSpec],
    /// Describe the tools and hearth's `<tool_call>` protocol; off where the
    /// model's own template declares them (its family is known).
    pub list_tools: bool,
    pub workspace: &'a Path,
    /// Where the conversation happens (`cli`, `telegram`, …).
    pub channel: &'a str,
    /// What the channel can show (markdown, images, …), one sentence.
    pub channel_capabilities: &'a str,
    pub model: &'a str,
    /// The day (`Sunday 2026-11-29 (UTC)`), never the time, so the prompt
    /// stays the same all day.
    pub date: &'a str,
    pub profile: Profile,
}

/// hearth's `<tool_call>` protocol and the tools, in full: for a model
/// whose own template cannot declare tools.
pub fn tool_protocol(tools: &[ToolSpec]) -> String {
    let mut out = String::from(TOOLS.trim());
    for tool in tools {
        out.push('\n');
        out.push_str(&tool_line(tool, Profile::Full));
    }
    out
}

/// The system prompt for these inputs.
pub fn build(inputs: &PromptInputs<'_>) -> String {
    let mut out = String::from(BASE.trim());
    if !inputs.tools.is_empty() {
        if inputs.list_tools {
            out.push_str("\n\n");
            out.push_str(TOOLS.trim());
            for tool in inputs.tools {
                out.push('\n');
                out.push_str(&tool_line(tool, inputs.profile));
            }
        }
        out.push_str("\n\n");
        out.push_str(SAFETY.trim());
    }
    let skills = super::skills::section(
        &super::skills::load(inputs.workspace),
        inputs.profile == Profile::Full,
    );
    if !skills.is_empty() {
        out.push_str("\n\n");
        out.push_str(&skills);
    }
    let context = project_context(inputs.workspace);
    if !context.is_empty() {
        out.push_str("\n\n## Project context\n");
        out.push_str(&context);
    }
    out.push_str(&format!(
        "\n\n## Runtime\nModel: {}. Files are relative to the workspace folder; use relative paths such as notes.txt. Channel: {} ({}). Today is {}.",
        inputs.model,
        inputs.channel,
        inputs.channel_capabilities,
        inputs.date
    ));
    out
}

fn tool_line(tool: &ToolSpec, profile: Profile) -> String {
    match profile {
        Profile::Full => format!(
            "- {}: {} Arguments (JSON schema): {}",
            tool.name, tool.description, tool.parameters
        ),
        Profile::Compact => {
            let first_sentence = tool
                .description
                .split_inclusive(". ")
                .next()
                .unwrap_or_default()
                .trim();
            let args: Vec<String> = tool
                .parameters
                .get("properties")
                .and_then(|p| p.as_object())
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            format!("- {}({}): {first_sentence}", tool.name, args.join(", "))
        }
    }
}

/// IDENTITY.md, SOUL.md, USER.md and AGENTS.md from the workspace, each cut
/// to `BOOTSTRAP_LIMIT` characters.
fn project_context(workspace: &Path) -> String {
    let mut out = String::new();
    for name in BOOTSTRAP_FILES {
        // Four bytes a character at most.
        let limit = (BOOTSTRAP_LIMIT as u64 + 1) * 4;
        let Some(text) = crate::tools::confined::read_text(workspace, name, limit) else {
            continue;
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let kept: String = text.chars().take(BOOTSTRAP_LIMIT).collect();
        out.push_str(&format!("\n### {name}\n{kept}\n"));
        if kept.len() < text.len() {
            out.push_str(&format!(
                "[{name} was cut at {BOOTSTRAP_LIMIT} characters]\n"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolRegistry;

    fn inputs<'a>(tools: &'a [ToolSpec], ws: &'a Path, profile: Profile) -> PromptInputs<'a> {
        PromptInputs {
            tools,
            list_tools: true,
            workspace: ws,
            channel: "cli",
            channel_capabilities: "plain text",
            model: "SmolLM2-135M",
            date: "2026-11-22",
            profile,
        }
    }

    #[test]
    fn a_template_that_declares_the_tools_gets_no_second_list() {
        let dir = tempfile::tempdir().unwrap();
        let tools = ToolRegistry::core().specs();
        let listed = build(&inputs(&tools, dir.path(), Profile::Full));
        let native = build(&PromptInputs {
            list_tools: false,
            ..inputs(&tools, dir.path(), Profile::Full)
        });
        for tool in &tools {
            assert!(listed.contains(&format!("- {}:", tool.name)), "{listed}");
            assert!(!native.contains(&format!("- {}", tool.name)), "{native}");
        }
        assert!(listed.contains("<tool_call>") && !native.contains("<tool_call>"));
        // The rules for using tools stay.
        assert!(native.contains("## Safety"), "{native}");
    }

    #[test]
    fn byte_identical_across_turns() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("USER.md"), "The user is Ada.").unwrap();
        let tools = ToolRegistry::core().specs();
        let turn1 = build(&inputs(&tools, dir.path(), Profile::Compact));
        let turn2 = build(&inputs(&tools, dir.path(), Profile::Compact));
        assert_eq!(turn1.as_bytes(), turn2.as_bytes());
        assert!(turn1.contains("Today is 2026-11-22."));
        assert!(turn1.contains("### USER.md\nThe user is Ada."));
        assert!(turn1.contains("<tool_call>"));
        assert!(
            turn1.contains("- file_read(path): Read a text file in the workspace."),
            "{turn1}"
        );
    }

    #[test]
    fn compact_is_shorter_and_files_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "x".repeat(30_000)).unwrap();
        let tools = ToolRegistry::core().specs();
        let full = build(&inputs(&tools, dir.path(), Profile::Full));
        let compact = build(&inputs(&tools, dir.path(), Profile::Compact));
        assert!(compact.len() < full.len());
        assert!(full.contains("JSON schema"));
        assert!(full.contains("[AGENTS.md was cut at 20000 characters]"));
        assert_eq!(Profile::for_context(4096), Profile::Compact);
        assert_eq!(Profile::for_context(32768), Profile::Full);
        let no_tools = build(&inputs(&[], dir.path(), Profile::Full));
        assert!(!no_tools.contains("<tool_call>"));
    }

    #[test]
    fn a_symlink_a_command_left_cannot_pull_a_file_into_the_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("skills/leak")).unwrap();
        std::fs::write(dir.path().join("config.toml"), "bot_token = \"SECRET-1\"").unwrap();
        // What `ln -s` inside the sandbox can do: name a path it cannot see.
        std::os::unix::fs::symlink(dir.path().join("config.toml"), ws.join("AGENTS.md")).unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("config.toml"),
            ws.join("skills/leak/SKILL.md"),
        )
        .unwrap();
        std::fs::write(ws.join("USER.md"), "The user is Ada.").unwrap();
        let prompt = build(&inputs(&[], &ws, Profile::Full));
        assert!(!prompt.contains("SECRET-1"), "{prompt}");
        assert!(prompt.contains("The user is Ada."), "{prompt}");
    }
}
