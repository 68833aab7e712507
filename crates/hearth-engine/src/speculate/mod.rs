//! Speculative decoding: guess a reply's next tokens cheaply, then check
//! them in the decode that reads the token before them.
//!
//! The batcher puts a generating reply's pending token and a draft of up
//! to `most` tokens after it into the batch, all with logits. The reply
//! then picks from each position in turn, with its own sampler (grammar
//! and all), as if the draft had not been there: while its pick equals
//! the next drafted token, that token is already in the sequence and the
//! pick after it is read from the next position. At the first difference
//! the rest of the draft is dropped from the KV cache. Replies are thus
//! the same as without drafting (greedy ones token for token, up to the
//! backend's rounding for the batch size), and a good guess saves decodes.
//!
//! Where the drafts come from:
//! - [`lookup`]: the sequence itself (a quoted tool result or file);
//! - [`draft_model`]: a small model with the same vocabulary.

pub(crate) mod draft_model;
mod gate;
mod lookup;
pub(crate) mod setup;

use llama_cpp_2::token::LlamaToken;

pub(crate) use draft_model::DraftModel;
pub(crate) use gate::DraftGate;

use crate::vision::is_stand_in;

/// How replies are drafted (`[engine] speculative`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Speculation {
    /// No drafts: one token per reply per decode.
    Off,
    /// Prompt lookup (n-gram) drafts of up to `most` tokens.
    #[default]
    Lookup,
    /// Drafts from a small model with the same vocabulary (`[engine]
    /// draft_model`).
    Model(std::path::PathBuf),
}

/// The drafts' source in the engine.
pub(crate) enum Drafter<'d> {
    Off,
    Lookup {
        most: usize,
    },
    Model {
        model: Box<DraftModel<'d>>,
        most: usize,
    },
}

impl Drafter<'_> {
    /// In words, for `hearth doctor`.
    pub(crate) fn describe(&self) -> String {
        match self {
            Drafter::Off => "off".into(),
            Drafter::Lookup { most } => format!("prompt lookup, up to {most} tokens"),
            Drafter::Model { most, .. } => format!("draft model, up to {most} tokens"),
        }
    }

    /// Up to `room` tokens expected after sequence `seq`'s `cached` tokens
    /// and its `pending` ones.
    pub(crate) fn draft(
        &mut self,
        seq: usize,
        cached: &[LlamaToken],
        pending: &[LlamaToken],
        room: usize,
    ) -> Vec<LlamaToken> {
        let most = match self {
            Drafter::Off => return Vec::new(),
            Drafter::Lookup { most } | Drafter::Model { most, .. } => (*most).min(room),
        };
        if most == 0 || cached.len() + pending.len() == 0 {
            return Vec::new();
        }
        let mut history = Vec::with_capacity(cached.len() + pending.len());
        history.extend_from_slice(cached);
        history.extend_from_slice(pending);
        match self {
            Drafter::Off => Vec::new(),
            Drafter::Lookup { .. } => tokens_only(lookup::draft(&history, most)),
            // A picture's stand-ins are no tokens a draft model can read.
            Drafter::Model { .. } if history.iter().any(|&t| is_stand_in(t)) => Vec::new(),
            Drafter::Model { model, .. } => model.draft(seq, &history, most),
        }
    }
}

/// The draft up to the first stand-in for part of a picture: copied from a
/// prompt with an image, it is no token, and fed to llama.cpp it would be
/// read past the vocabulary.
fn tokens_only(mut draft: Vec<LlamaToken>) -> Vec<LlamaToken> {
    if let Some(at) = draft.iter().position(|&t| is_stand_in(t)) {
        draft.truncate(at);
    }
    draft
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_picture_in_the_history_is_never_drafted() {
        // The run after "4 5 6 1 2 3" held a picture's stand-ins (negative
        // ids).
        let cached: Vec<LlamaToken> = [4, 5, 6, 1, 2, 3, 7, -1, -2, 9, 4, 5, 6, 1, 2]
            .into_iter()
            .map(LlamaToken)
            .collect();
        let mut lookup = Drafter::Lookup { most: 8 };
        let draft = lookup.draft(0, &cached, &[LlamaToken(3)], 8);
        assert_eq!(draft, vec![LlamaToken(7)], "cut before the stand-ins");
        // Positive control: without the picture the run goes on.
        let plain: Vec<LlamaToken> = [4, 5, 6, 1, 2, 3, 7, 8, 9, 10, 4, 5, 6, 1, 2]
            .into_iter()
            .map(LlamaToken)
            .collect();
        let draft = lookup.draft(0, &plain, &[LlamaToken(3)], 8);
        assert_eq!(draft.len(), 8, "{draft:?}");
        assert!(tokens_only(vec![LlamaToken(-5)]).is_empty());
    }
}
