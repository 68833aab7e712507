//! The tool-call grammar's handoff: from free text to a constrained call.
//!
//! With tools offered and no call required, the grammar sleeps until the
//! model writes its family's call marker (`<tool_call>`, `[TOOL_CALLS]`…),
//! then constrains what follows. llama.cpp wakes a lazy grammar when a
//! token completes a trigger and feeds it the text from the marker to the
//! end of that token. A token that straddles the marker and what comes
//! after it (`></` after `<tool_call`) hands the grammar text it cannot
//! take, and llama.cpp throws a C++ exception that no Rust frame may see.
//!
//! [`CallGrammar`] keeps that from happening. It follows the reply's text
//! itself; when a token would wake the grammar, it offers the token to a
//! copy first. A token the copy takes goes through (llama.cpp fed the text
//! past the marker to the grammar); one it refuses is refused, and the
//! sampler picks again without it. Every other token is accepted through
//! llama-cpp-2's exception-catching `try_accept`, so a grammar that throws
//! for any other reason ends that one reply with an error.

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;

use super::formats::Syntax;
use super::pieces;
use hearth_core::chat::ProviderError;

/// What the grammar made of a picked token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// In the grammar's state (or in the text it is waiting through).
    Taken,
    /// Would wake the grammar with text past the marker that it cannot
    /// take: pick another token.
    Refused,
}

/// A tool-call grammar, lazy or required from the first token.
pub struct CallGrammar {
    sampler: LlamaSampler,
    /// `None` once the grammar constrains the reply.
    waiting: Option<Waiting>,
}

/// The reply's bytes while the grammar waits for a marker. Bytes, not
/// text: a marker's multi-byte character may come split across tokens,
/// and llama.cpp matches its triggers on the bytes.
struct Waiting {
    seen: Vec<u8>,
    anywhere: Vec<&'static str>,
    at_start: Vec<&'static str>,
}

impl Waiting {
    /// Whether the bytes from `from` on completed a marker where the
    /// grammar's triggers look for it (see `Format::triggers`).
    fn woken(&self, from: usize) -> bool {
        let seen = self.seen.as_slice();
        self.anywhere.iter().any(|m| {
            let m = m.as_bytes();
            let start = from.saturating_sub(m.len().saturating_sub(1));
            seen[start..].windows(m.len()).any(|w| w == m)
        }) || self.at_start.iter().any(|m| {
            let lead = seen.iter().take_while(|b| b.is_ascii_whitespace()).count();
            seen[lead..].starts_with(m.as_bytes())
        })
    }
}

impl CallGrammar {
    /// A grammar that constrains from the first token.
    pub fn required(sampler: LlamaSampler) -> Self {
        Self {
            sampler,
            waiting: None,
        }
    }

    /// A grammar that sleeps until one of `syntax`'s call markers; the
    /// sampler must have been made lazy on the same markers.
    pub fn lazy(sampler: LlamaSampler, syntax: &Syntax) -> Self {
        Self {
            sampler,
            waiting: Some(Waiting {
                seen: Vec::new(),
                anywhere: syntax.calls.to_vec(),
                at_start: syntax.calls_at_start.to_vec(),
            }),
        }
    }

    /// Whether the grammar constrains the next token.
    pub fn is_awake(&self) -> bool {
        self.waiting.is_none()
    }

    /// The llama.cpp sampler, for masking candidates.
    pub fn sampler_mut(&mut self) -> &mut LlamaSampler {
        &mut self.sampler
    }

    /// Whether the grammar, awake, lets `token` come next (its state is
    /// not changed: [`Self::offer`] takes the token).
    pub fn allows(&mut self, token: LlamaToken) -> bool {
        allows(&mut self.sampler, token)
    }

    /// Takes a picked token into the grammar's state, or refuses it.
    pub fn offer(&mut self, model: &LlamaModel, token: LlamaToken) -> Result<Offer, ProviderError> {
        let Some(waiting) = &mut self.waiting else {
            return accept(&mut self.sampler, model, token).map(|()| Offer::Taken);
        };
        let before = waiting.seen.len();
        waiting
            .seen
            .extend_from_slice(&pieces::piece(model, token, true));
        if !waiting.woken(before) {
            // Still waiting: llama.cpp only adds the piece to its buffer.
            return accept(&mut self.sampler, model, token).map(|()| Offer::Taken);
        }
        let mut probe = self.sampler.clone();
        if probe.try_accept(token).is_ok() {
            self.sampler = probe;
            self.waiting = None;
            return Ok(Offer::Taken);
        }
        waiting.seen.truncate(before);
        tracing::info!(
            token = token.0,
            "refused a token that carries text past the call marker the grammar cannot take"
        );
        Ok(Offer::Refused)
    }
}

/// Whether `sampler`'s grammar lets `token` come next: the grammar masks a
/// candidate list of that one token (its state is not changed).
pub fn allows(sampler: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 1.0)], false);
    sampler.apply(&mut one);
    one.data[0].logit().is_finite()
}

/// `try_accept`: llama.cpp's exception becomes this reply's error.
pub fn accept(
    sampler: &mut LlamaSampler,
    model: &LlamaModel,
    token: LlamaToken,
) -> Result<(), ProviderError> {
    sampler.try_accept(token).map_err(|_| {
        ProviderError::Failed(format!(
            "llama.cpp's grammar refused token {} ({:?}) and this reply cannot go on; the conversation can",
            token.0,
            String::from_utf8_lossy(&pieces::piece(model, token, true))
        ))
    })
}

#[cfg(test)]
mod tests;
