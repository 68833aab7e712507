//! The published chat templates of real model families in
//! `../shared/templates/` render hearth's conversations as they are.
//! Skipped, with a message, where `../shared` is absent.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::path::{Path, PathBuf};

use hearth::agent::call_format::{self, DispatcherChoice};
use hearth::agent::prompt::{Profile, PromptInputs};
use hearth::agent::{ParsedToolCall, ToolResultMessage};
use hearth::chat::{ChatMessage, Reasoning, ToolCall, ToolSpec};
use hearth::engine::formats::{self, ModelFamily};
use hearth::engine::template::{ChatTemplate, Turn};
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

/// system, user, an assistant tool call, its result, a second user turn,
/// written as the agent writes them for the family: natively for a known
/// one, in hearth's XML protocol otherwise.
fn tool_conversation(native: bool) -> Vec<ChatMessage> {
    let dispatcher = call_format::choose(DispatcherChoice::Auto, native);
    let call = ParsedToolCall {
        id: "call_7Hq2".into(),
        name: "get_weather".into(),
        arguments: json!({"city": "Paris"}),
    };
    let result = ToolResultMessage {
        call_id: "call_7Hq2".into(),
        name: "get_weather".into(),
        content: "{\"sky\": \"clear\"}".into(),
        is_error: false,
    };
    let mut out = vec![
        ChatMessage::system("You are hearth. Be brief."),
        ChatMessage::user("Weather in Paris?"),
        dispatcher.assistant_turn("", &[call]),
    ];
    out.extend(dispatcher.format_results(&[result], &[]));
    out.push(ChatMessage::user("And tomorrow morning?"));
    out
}

/// hearth's own system prompt for `tools`, listing them itself when the
/// family has no native format.
fn agent_system_prompt(tools: &[ToolSpec], native: bool, workspace: &Path) -> String {
    hearth::agent::prompt::build(&PromptInputs {
        tools,
        list_tools: !native,
        workspace,
        channel: "cli",
        channel_capabilities: "plain text",
        model: "test",
        date: "2026-11-23",
        profile: Profile::Full,
    })
}

/// The prompt the engine renders for `family`: its system text as the
/// agent builds it (listing the tools only under hearth's own protocol),
/// the tools through the template only for a known family.
fn engine_prompt(
    template: &ChatTemplate,
    family: ModelFamily,
    answer: Option<&str>,
) -> Result<String, hearth::engine::template::TemplateError> {
    let workspace = tempfile::tempdir().unwrap();
    let tools = [weather()];
    let native = family != ModelFamily::Xml;
    let system = agent_system_prompt(&tools, native, workspace.path());
    let mut messages = tool_conversation(native);
    messages[0] = ChatMessage::system(system);
    messages.extend(answer.map(ChatMessage::assistant));
    template.render_turn(&Turn {
        format: formats::format(family),
        messages: &messages,
        tools: if native { &tools } else { &[] },
        reasoning: Reasoning::Auto,
        add_generation_prompt: answer.is_none(),
    })
}

/// Each template renders a conversation with a tool call and its result
/// in its family's own form: the tool is described exactly once (by the
/// template for a known family, by hearth's system prompt otherwise), the
/// call and the result are in the prompt, and it ends with the generation
/// prompt.
#[test]
fn every_published_template_renders_a_tool_round_in_its_family_format() {
    let Some(templates) = published() else { return };
    let mut failed = Vec::new();
    let mut seen = Vec::new();
    for (name, source) in templates {
        let family = formats::detect::detect(&source);
        seen.push(format!("{name}: {}", family.name()));
        let template = match ChatTemplate::new(source, name.clone(), "<s>", "</s>") {
            Ok(t) => t,
            Err(e) => {
                failed.push(format!("{name}: {e}"));
                continue;
            }
        };
        // The prompt, and the conversation with an answer after it, which
        // must render too.
        let (with, _answered) = match (
            engine_prompt(&template, family, None),
            engine_prompt(&template, family, Some("XYZZY")),
        ) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => {
                failed.push(format!("{name} ({family:?}): {e}"));
                continue;
            }
        };
        let described = with.matches("The weather in a city").count();
        if described != 1 {
            failed.push(format!(
                "{name} ({family:?}): the tool is described {described} times"
            ));
        }
        // The prompt ends where the answer would begin: after the last
        // user turn comes the assistant's opening, in the family's words.
        const OPENINGS: [&str; 9] = [
            "assistant",
            "assistant<|end_header_id|>",
            "<think>",
            "[/INST]",
            "<｜Assistant｜>",
            "<|CHATBOT_TOKEN|>",
            "model\n<|channel>thought\n<channel|>",
            "<start_of_turn>model",
            "<|assistant|>",
        ];
        let asked = with.rfind("And tomorrow morning?").unwrap_or(0);
        let tail = with[asked..].trim_end();
        if !OPENINGS.iter().any(|o| tail.ends_with(o.trim_end())) {
            failed.push(format!(
                "{name} ({family:?}): the prompt does not end with a generation prompt: …{tail:?}"
            ));
        }
        // The tools are declared, and the call written back, in the
        // family's own words.
        let (declared, called) = family_marks(family);
        for (what, mark) in [("declaration", declared), ("call", called)] {
            if !with.contains(mark) {
                failed.push(format!("{name} ({family:?}): no {what} `{mark}`"));
            }
        }
        for needle in ["Paris", "clear", "And tomorrow morning?"] {
            if !with.contains(needle) {
                failed.push(format!("{name} ({family:?}): `{needle}` is missing"));
            }
        }
    }
    eprintln!("{}", seen.join("\n"));
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// How a family's templates declare tools, and write a call to
/// `get_weather` back, as the families' published formats say.
fn family_marks(family: ModelFamily) -> (&'static str, &'static str) {
    match family {
        ModelFamily::Xml => ("Available tools:", "<tool_call>"),
        ModelFamily::Hermes => ("<tools>", "<tool_call>"),
        ModelFamily::Llama3 => (
            "You have access to the following functions",
            "{\"name\": \"get_weather\"",
        ),
        ModelFamily::Mistral => ("[AVAILABLE_TOOLS]", "[TOOL_CALLS]"),
        ModelFamily::MistralV7 => ("[AVAILABLE_TOOLS]", "[TOOL_CALLS]get_weather"),
        ModelFamily::Harmony => ("namespace functions", "to=functions.get_weather"),
        ModelFamily::DeepSeek => ("function tools", "<｜tool▁sep｜>get_weather"),
        ModelFamily::CommandR => ("## Available Tools", "<|START_ACTION|>"),
        ModelFamily::Gemma4 => (
            "<|tool>declaration:get_weather",
            "<|tool_call>call:get_weather",
        ),
        other => panic!("no published template of family {other:?} is expected"),
    }
}

/// The template called `stem`, compiled, or `None` where `../shared` is absent.
fn template(stem: &str) -> Option<ChatTemplate> {
    let (name, source) = published()?.into_iter().find(|(n, _)| n == stem)?;
    Some(ChatTemplate::new(source, name, "<|startoftext|>", "<|return|>").unwrap())
}

/// What the engine reads out of a reply: text, reasoning, calls.
fn read(family: ModelFamily, reply: &str, tools: &[ToolSpec]) -> (String, String, Vec<ToolCall>) {
    let format = formats::format(family);
    let mut splitter = format.splitter(false, vec![], true);
    let mut pieces = splitter.push(reply);
    pieces.extend(splitter.finish());
    let (mut text, mut reasoning, mut calls) = (String::new(), String::new(), Vec::new());
    let mut ids = formats::Ids::new(3);
    for piece in pieces {
        match piece {
            formats::Piece::Content(t) => text.push_str(&t),
            formats::Piece::Reasoning(t) => reasoning.push_str(&t),
            formats::Piece::Call { text: section, .. } => {
                let read = format.parse(&section, tools, &mut ids);
                assert!(read.malformed.is_empty(), "{:?}", read.malformed);
                calls.extend(read.calls);
            }
            formats::Piece::Stop => {}
        }
    }
    (text, reasoning, calls)
}

/// gpt-oss over three turns, the first with a tool call: every prompt
/// renders (the template raises on channel tags in history), the replies,
/// written as gpt-oss writes them, read as reasoning, call and answer, and
/// no reasoning reaches the history.
#[test]
fn a_gpt_oss_conversation_of_three_turns_with_a_tool_call_renders_and_parses() {
    let Some(t) = template("openai-gpt-oss-120b") else {
        return;
    };
    let family = ModelFamily::Harmony;
    let tools = [weather()];
    let native = call_format::choose(DispatcherChoice::Auto, true);
    let render = |messages: &[ChatMessage]| {
        t.render_turn(&Turn {
            format: formats::format(family),
            messages,
            tools: &tools,
            reasoning: Reasoning::Low,
            add_generation_prompt: true,
        })
        .unwrap()
    };
    let mut messages = vec![
        ChatMessage::system("You are hearth. Be brief."),
        ChatMessage::user("Weather in Paris?"),
    ];
    // Turn 1, round 1: reasoning, then a call.
    let prompt = render(&messages);
    assert!(prompt.ends_with("<|start|>assistant"), "{prompt}");
    assert!(prompt.contains("Reasoning: low"), "{prompt}");
    let (text, reasoning, calls) = read(
        family,
        "<|channel|>analysis<|message|>Need the weather tool.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}",
        &tools,
    );
    assert_eq!(
        (text.as_str(), reasoning.as_str()),
        ("", "Need the weather tool.")
    );
    assert_eq!(calls.len(), 1);
    let parsed: Vec<ParsedToolCall> = calls
        .iter()
        .map(|c| ParsedToolCall {
            id: c.id.clone(),
            name: c.name.clone(),
            arguments: c.arguments.clone(),
        })
        .collect();
    messages.push(native.assistant_turn(&text, &parsed));
    messages.extend(native.format_results(
        &[ToolResultMessage {
            call_id: parsed[0].id.clone(),
            name: "get_weather".into(),
            content: "{\"sky\": \"clear\"}".into(),
            is_error: false,
        }],
        &[],
    ));
    // Turn 1, round 2: the call and its result are in the prompt.
    let prompt = render(&messages);
    assert!(
        prompt.contains("<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|call|>"),
        "{prompt}"
    );
    assert!(
        prompt.contains(
            "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"
        )
    );
    let (text, reasoning, calls) = read(
        family,
        "<|channel|>analysis<|message|>Clear sky.<|end|><|start|>assistant<|channel|>final<|message|>Clear skies in Paris.",
        &tools,
    );
    assert_eq!(
        (text.as_str(), reasoning.as_str(), calls.len()),
        ("Clear skies in Paris.", "Clear sky.", 0)
    );
    // Across turns the history holds the answers only.
    let mut history = vec![
        messages[0].clone(),
        messages[1].clone(),
        ChatMessage::assistant(text),
        ChatMessage::user("And tomorrow?"),
    ];
    for (turn, reply, answer) in [
        (
            2,
            "<|channel|>analysis<|message|>No forecast tool for tomorrow; say so.<|end|><|start|>assistant<|channel|>final<|message|>I can only see today.",
            "I can only see today.",
        ),
        (
            3,
            "<|channel|>final<|message|>You're welcome.",
            "You're welcome.",
        ),
    ] {
        let prompt = render(&history);
        assert!(
            prompt.ends_with("<|start|>assistant"),
            "turn {turn}: {prompt}"
        );
        assert!(
            !prompt.contains("Need the weather tool."),
            "turn {turn}: reasoning in history"
        );
        let (text, _, calls) = read(family, reply, &tools);
        assert_eq!((text.as_str(), calls.len()), (answer, 0), "turn {turn}");
        history.push(ChatMessage::assistant(text));
        history.push(ChatMessage::user("Thanks."));
    }
}

/// Qwen3 with reasoning off renders the empty think block after the
/// generation prompt, so the model answers at once; `auto` leaves it out.
#[test]
fn qwen3_with_reasoning_off_renders_the_empty_think_block() {
    let Some(t) = template("Qwen-Qwen3-0.6B") else {
        return;
    };
    let render = |reasoning| {
        t.render_turn(&Turn {
            format: formats::format(ModelFamily::Hermes),
            messages: &conversation(),
            tools: &[],
            reasoning,
            add_generation_prompt: true,
        })
        .unwrap()
    };
    assert!(
        render(Reasoning::Off).ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"),
        "{}",
        render(Reasoning::Off)
    );
    assert!(render(Reasoning::Auto).ends_with("<|im_start|>assistant\n"));
    assert!(render(Reasoning::High).ends_with("<|im_start|>assistant\n"));
}

/// Hermes 3's `tool_use` template on a second turn, with hearth's real
/// tools: each tool is listed once, in the one `<tools>` block of the
/// template's own system turn. (Its name shows a second time inside that
/// same entry, since the template writes a Python signature into the
/// description: `"name": "file_read", "description": "file_read(path: str) - …"`;
/// that is the template's format, not a second listing.) The control: the
/// same conversation under hearth's own protocol lists each tool once too,
/// in the system prompt.
#[test]
fn hermes_3_lists_each_tool_once_on_the_second_turn() {
    let Some(t) = template("NousResearch-Hermes-3-Llama-3.1-8B-tool_use") else {
        return;
    };
    let tools = hearth::tools::ToolRegistry::core().specs();
    assert!(tools.iter().any(|s| s.name == "file_read"));
    for native in [true, false] {
        let workspace = tempfile::tempdir().unwrap();
        let system = agent_system_prompt(&tools, native, workspace.path());
        let mut messages = tool_conversation(native);
        messages[0] = ChatMessage::system(system);
        let prompt = t
            .render_turn(&Turn {
                format: formats::format(ModelFamily::Hermes),
                messages: &messages,
                tools: if native { &tools } else { &[] },
                reasoning: Reasoning::Auto,
                add_generation_prompt: true,
            })
            .unwrap();
        for spec in &tools {
            let entries = prompt
                .matches(&format!("\"name\": \"{}\"", spec.name))
                .count()
                + prompt.matches(&format!("- {}: ", spec.name)).count();
            assert_eq!(
                entries, 1,
                "{} listed {entries} times (native {native})",
                spec.name
            );
        }
    }
}
