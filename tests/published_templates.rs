//! The published chat templates of real model families in
//! `../shared/templates/` render hearth's conversations as they are.
//! Skipped, with a message, where `../shared` is absent.

use std::path::{Path, PathBuf};

use hearth::chat::{ChatMessage, ToolSpec};
use hearth::engine::template::ChatTemplate;
use serde_json::json;

/// The published templates, or `None` (with a message) where they are absent.
fn published() -> Option<Vec<(String, String)>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/templates");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("skipped: {} is absent", dir.display());
        return None;
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .collect();
    found.sort();
    assert!(
        !found.is_empty(),
        "{} holds no .jinja template",
        dir.display()
    );
    Some(
        found
            .into_iter()
            .map(|p| {
                let name = p.file_stem().unwrap().to_string_lossy().to_string();
                (name, std::fs::read_to_string(&p).unwrap())
            })
            .collect(),
    )
}

fn conversation() -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("You are hearth. Be brief."),
        ChatMessage::user("What is on my calendar today?"),
        ChatMessage::assistant("Nothing until the dentist at four."),
        ChatMessage::user("And tomorrow morning?"),
    ]
}

fn weather() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "The weather in a city".into(),
        parameters: json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"]
        }),
    }
}

/// Each template renders a conversation, with its system text (folded into
/// the first user turn where the template rejects a system turn), offers
/// the tool only when it is offered, and prints today's date, not the one
/// written into it.
#[test]
fn every_published_template_renders_a_conversation_with_its_system_text() {
    let Some(templates) = published() else { return };
    let mut failed = Vec::new();
    for (name, source) in templates {
        let rendered = ChatTemplate::new(source, name.clone(), "<s>", "</s>").and_then(|t| {
            let plain = t.render(&conversation(), true)?;
            let tools = t.render_with_tools(&conversation(), &[weather()], true)?;
            Ok((plain, tools))
        });
        match rendered {
            Ok((plain, tools)) => {
                for (what, out) in [("without tools", &plain), ("with tools", &tools)] {
                    for needle in ["You are hearth. Be brief.", "And tomorrow morning?"] {
                        if !out.contains(needle) {
                            failed.push(format!("{name} ({what}): `{needle}` is missing"));
                        }
                    }
                    if out.contains("26 Jul 2024") {
                        failed.push(format!("{name} ({what}): the template's own date"));
                    }
                }
                if plain.contains("get_weather") {
                    failed.push(format!("{name}: a tool listed though none was offered"));
                }
            }
            Err(e) => failed.push(format!("{name}: {e}")),
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
