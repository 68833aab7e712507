//! The fixed prompt: what every conversation sends before its first word
//! (hearth's system text and the tools offered), measured with the loaded
//! model's own template and tokenizer. `hearth doctor` and `hearth bench`
//! print it; a configuration that leaves no room for a reply in the
//! model's context is refused at start with both numbers, never cut.

use crate::agent::tool_pick;
use crate::chat::{ChatMessage, ProviderError, ToolSpec};
use crate::config::Config;
use crate::engine::Engine;
use crate::engine::formats::ModelFamily;

/// The fixed prompt's size against the context it must fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedPrompt {
    /// Tokens of the system text and the tools, as the model sees them.
    pub tokens: usize,
    /// Tokens of the system text alone (hearth's protocol and no tools).
    pub system_tokens: usize,
    /// How many tools a turn is offered at most (the largest of them
    /// measured, where they are picked by relevance).
    pub tools: usize,
    /// The tokens one conversation's context holds.
    pub context: u32,
    /// The tokens a reply may take (`[generation] max_tokens`).
    pub reply: u32,
}

/// A fixed prompt that leaves a reply no room.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the fixed prompt (hearth's system text and {tools} tools) takes {tokens} tokens and a reply up to {reply} more, but the model's context holds {context} tokens a conversation: raise `[model] context_size`, lower `[generation] max_tokens`, or offer fewer tools"
)]
pub struct DoesNotFit {
    pub tokens: usize,
    pub tools: usize,
    pub reply: u32,
    pub context: u32,
}

impl FixedPrompt {
    /// Measures the prompt a fresh conversation on `channel` would start
    /// with.
    pub fn measure(
        config: &Config,
        tools: &[ToolSpec],
        engine: &Engine,
        channel: &str,
    ) -> Result<Self, ProviderError> {
        let info = engine.info();
        // As the pipeline decides: `[agent] tool_dispatcher`, then the family.
        let native = crate::agent::call_format::is_native(
            config.agent.tool_dispatcher,
            info.family != ModelFamily::Xml,
        );
        let context = info.n_ctx;
        // Offered by relevance: at most the largest handful at once.
        let picked;
        let tools = match tool_pick::per_turn(config.agent.tools_per_turn, Some(context)) {
            most if most > 0 && tools.len() > most => {
                picked = tool_pick::largest(tools, most);
                &picked[..]
            }
            _ => tools,
        };
        let system = |tools: &[ToolSpec]| {
            let text = super::prompt::system(
                config,
                tools,
                !native,
                channel,
                crate::channels::PLAIN_TEXT,
                "local",
                Some(context),
            );
            vec![ChatMessage::system(text), ChatMessage::user("")]
        };
        Ok(Self {
            tokens: engine.prompt_tokens(&system(tools), tools)?,
            system_tokens: engine.prompt_tokens(&system(&[]), &[])?,
            tools: tools.len(),
            context,
            reply: config.generation.max_tokens,
        })
    }

    /// Whether a reply of the configured length fits after it.
    pub fn fits(&self) -> Result<(), DoesNotFit> {
        if self.tokens + self.reply as usize <= self.context as usize {
            return Ok(());
        }
        Err(DoesNotFit {
            tokens: self.tokens,
            tools: self.tools,
            reply: self.reply,
            context: self.context,
        })
    }

    /// One line for people: the sizes and what is left.
    pub fn describe(&self) -> String {
        format!(
            "{} tokens before the first word ({} of them the {} tools), of {} in the context; {} left for the conversation after a {}-token reply",
            self.tokens,
            self.tokens.saturating_sub(self.system_tokens),
            self.tools,
            self.context,
            (self.context as usize).saturating_sub(self.tokens + self.reply as usize),
            self.reply
        )
    }
}
