//! The prompt of one turn: the stable system prompt, the restored and
//! normalised history, and the user's message carrying this turn's memory
//! context (never the system prompt, so its KV-cache prefix stays reusable).

use crate::agent::prompt::{self, Profile, PromptInputs};
use crate::agent::{call_format, tool_pick};
use crate::chat::{ChatMessage, ToolSpec};
use crate::config::Config;
use crate::providers::Provider;

/// The system prompt for a channel and model. Byte-identical all day.
/// `context_window`: the provider's, when it knows it (the profile follows
/// it; else the configured context size; compact when neither is known).
/// `list_tools`: hearth's protocol describes the tools (the model's own
/// template does not).
pub fn system(
    config: &Config,
    tools: &[ToolSpec],
    list_tools: bool,
    channel: &str,
    shows: &str,
    model: &str,
    context_window: Option<u32>,
) -> String {
    // The day in the zone the scheduler reads times in, with its weekday:
    // "next Tuesday at 9" needs both.
    let zone = config.scheduler.timezone;
    let date = format!(
        "{} ({zone})",
        chrono::Utc::now()
            .with_timezone(&zone)
            .format("%A %Y-%m-%d")
    );
    let profile = match context_window.unwrap_or(config.model.context_size) {
        0 => Profile::Compact,
        n => Profile::for_context(n),
    };
    prompt::build(&PromptInputs {
        tools,
        list_tools,
        workspace: &config.agent.workspace,
        channel,
        channel_capabilities: shows,
        model,
        date: &date,
        profile,
    })
}

/// What a turn's tools and system prompt are chosen from.
pub struct TurnText<'a> {
    pub user_text: &'a str,
    pub history: &'a [ChatMessage],
    /// The channel's name and what it shows.
    pub channel: (&'a str, &'a str),
    pub model: &'a str,
    /// An API client's own system message.
    pub instructions: Option<&'a str>,
}

/// The tools a turn offers and the system prompt that goes with them. A
/// small model is offered the tools its message is about and those in use
/// ([`tool_pick`]); an API client's own instructions come after hearth's
/// text, so hearth's stays a cached prefix.
pub fn for_turn(
    config: &Config,
    specs: Vec<ToolSpec>,
    provider: &dyn Provider,
    turn: &TurnText<'_>,
) -> (Vec<ToolSpec>, String) {
    let window = provider.context_window();
    let specs = match tool_pick::per_turn(config.agent.tools_per_turn, window) {
        0 => specs,
        most if specs.len() <= most => specs,
        most => tool_pick::pick(&specs, turn.user_text, turn.history, most),
    };
    let native = call_format::is_native(
        config.agent.tool_dispatcher,
        provider.supports_native_tools(),
    );
    let (channel, shows) = turn.channel;
    let mut system = self::system(
        config,
        &specs,
        !native,
        channel,
        shows,
        turn.model,
        provider.context_window(),
    );
    if let Some(instructions) = turn.instructions {
        system.push_str("\n\n# The client's instructions\n\n");
        system.push_str(instructions);
    }
    (specs, system)
}

/// The whole prompt: system, history, then the user turn (with its
/// pictures) with the memory context and the documents' pieces in front
/// of its text.
pub fn messages(
    system: String,
    history: Vec<ChatMessage>,
    (user, images): (&str, &[crate::chat::Image]),
    (memory, documents): (Option<String>, Option<String>),
) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(history.len() + 2);
    out.push(ChatMessage::system(system));
    out.extend(history);
    // Recalled text and documents are data: fenced, so nothing in them
    // reads as markup.
    let mut content = String::new();
    for (source, text) in [("recalled memories", memory), ("documents", documents)] {
        if let Some(text) = text.filter(|t| !t.trim().is_empty()) {
            content.push_str(&crate::security::fence::fence(source, &text));
            content.push_str("\n\n");
        }
    }
    content.push_str(user);
    // A history ending in a user turn (an interrupted message) merges with this one.
    match out.last_mut() {
        Some(last) if last.role == crate::chat::Role::User => {
            last.content.push_str("\n\n");
            last.content.push_str(&content);
            last.images.extend_from_slice(images);
        }
        _ => out.push(ChatMessage {
            images: images.to_vec(),
            ..ChatMessage::user(content)
        }),
    }
    out
}
