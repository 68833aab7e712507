//! How many tokens a prompt takes as this engine renders it: the fixed
//! part of every conversation (the system prompt and the tools) before its
//! first word, for `hearth doctor`, `hearth bench` and the check at start
//! that it leaves room in the context.

use hearth_core::chat::{ChatMessage, ProviderError, Reasoning, ToolSpec};

use crate::formats::{self, ModelFamily};
use crate::template::Turn;
use crate::{Engine, EngineError};

impl Engine {
    /// The tokens of `messages` with `tools`, rendered by the model's
    /// template as a reply's prompt is (the tools through the template
    /// where the family has its own format; hearth's protocol puts them in
    /// the system text instead). Nothing is decoded.
    pub fn prompt_tokens(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
    ) -> Result<usize, ProviderError> {
        let model = self
            .model
            .as_ref()
            .ok_or(ProviderError::Failed(EngineError::WorkerGone.to_string()))?;
        let native = self.info.family != ModelFamily::Xml;
        let prompt = self
            .template
            .render_turn(&Turn {
                format: formats::format(self.info.family),
                messages,
                tools: if native { tools } else { &[] },
                reasoning: Reasoning::Auto,
                add_generation_prompt: true,
            })
            .map_err(|e| ProviderError::InvalidRequest(e.to_string()))?;
        let vocab = model.vocab();
        Ok(vocab
            .tokenize(prompt.as_bytes(), vocab.should_add_bos(), true)
            .len())
    }
}
