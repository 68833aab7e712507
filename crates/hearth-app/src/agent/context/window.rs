//! The cheap steps: cutting old tool results, the character budget, and
//! the emergency drop. They work on a prompt as `[system?] history… current…`.

use crate::chat::{ChatMessage, Role};

/// A prompt and where its current turn starts.
pub struct Window<'a> {
    pub messages: &'a mut Vec<ChatMessage>,
    /// Index of the current turn's first message (the user's).
    pub current: usize,
}

impl Window<'_> {
    /// Where the history starts: after a leading system message.
    pub fn history_start(&self) -> usize {
        usize::from(
            self.messages
                .first()
                .is_some_and(|m| m.role == Role::System),
        )
    }

    pub fn chars(&self) -> usize {
        self.messages
            .iter()
            .map(|m| m.content.chars().count())
            .sum()
    }

    /// Removes history messages `start..end`, keeping `current` pointing at
    /// the same message.
    pub fn remove(&mut self, start: usize, end: usize) -> usize {
        let end = end.min(self.current);
        if start >= end {
            return 0;
        }
        self.messages.drain(start..end);
        self.current -= end - start;
        end - start
    }

    /// The first history index at or after `from` where a user turn starts
    /// (so the kept history never opens with an assistant reply or a tool
    /// result); `current` when there is none.
    pub fn turn_start_from(&self, from: usize) -> usize {
        (from..self.current)
            .find(|&i| self.messages[i].role == Role::User && !is_tool_result(&self.messages[i]))
            .unwrap_or(self.current)
    }
}

/// A tool result, in either dispatcher's form.
pub fn is_tool_result(message: &ChatMessage) -> bool {
    message.role == Role::Tool
        || (message.role == Role::User && message.content.trim_start().starts_with("<tool_result"))
}

/// Cuts tool results before the current turn to `limit` characters.
pub fn trim_old_tool_results(window: &mut Window<'_>, limit: usize) -> usize {
    let current = window.current;
    let mut cut = 0;
    for message in &mut window.messages[..current] {
        if is_tool_result(message) && message.content.chars().count() > limit {
            message.content = crate::tools::cap(&message.content, limit);
            cut += 1;
        }
    }
    cut
}

/// Drops the oldest turns while the prompt is over `budget` characters.
pub fn trim_budget(window: &mut Window<'_>, budget: usize) -> usize {
    let mut dropped = 0;
    while window.chars() > budget {
        let start = window.history_start();
        if start >= window.current {
            break;
        }
        // One whole turn: up to the next user message after the first.
        let end = window.turn_start_from(start + 1);
        dropped += window.remove(start, end);
    }
    dropped
}

/// The emergency measure: drops the oldest third of the history (at least
/// one turn), ending at a turn boundary.
pub fn drop_oldest_third(window: &mut Window<'_>) -> usize {
    let start = window.history_start();
    let len = window.current.saturating_sub(start);
    if len == 0 {
        return 0;
    }
    let end = window.turn_start_from(start + len.div_ceil(3));
    window.remove(start, end)
}
