//! `[engine] speculative`, `draft_model`, `draft_tokens`: speculative
//! decoding, the drafts of a reply's next tokens that the model checks in
//! one decode.

use super::ConfigError;

/// Where drafts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speculative {
    /// None: one token per decode.
    Off,
    /// Prompt lookup: what followed the same few tokens earlier in the
    /// conversation (a quoted tool result or file). Needs no second model.
    Lookup,
    /// A small model with the same vocabulary (`draft_model`).
    Draft,
}

impl Speculative {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "off" => Some(Self::Off),
            "lookup" => Some(Self::Lookup),
            "draft" => Some(Self::Draft),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Lookup => "lookup",
            Self::Draft => "draft",
        }
    }
}

/// The three settings, checked together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Speculation {
    pub mode: Speculative,
    /// `speculative = "draft"`: a path, or a file name in the models folder.
    pub draft_model: Option<String>,
    /// Most tokens drafted at a time.
    pub draft_tokens: u32,
}

impl Default for Speculation {
    fn default() -> Self {
        Self {
            mode: Speculative::Lookup,
            draft_model: None,
            draft_tokens: 8,
        }
    }
}

impl Speculation {
    pub(super) fn from_raw(
        mode: Option<&str>,
        draft_model: Option<String>,
        draft_tokens: Option<u32>,
    ) -> Result<Self, ConfigError> {
        let d = Self::default();
        let mode = match mode {
            None if draft_model.is_some() => Speculative::Draft,
            None => d.mode,
            Some(v) => Speculative::parse(v).ok_or_else(|| {
                ConfigError::invalid(
                    "engine.speculative",
                    format!("`{v}` is not one of lookup, draft, off"),
                )
            })?,
        };
        let draft_model = draft_model.filter(|m| !m.trim().is_empty());
        match (mode, &draft_model) {
            (Speculative::Draft, None) => {
                return Err(ConfigError::invalid(
                    "engine.draft_model",
                    "`speculative = \"draft\"` needs a draft model: a small GGUF model with the same vocabulary as `[model] path`",
                ));
            }
            (Speculative::Lookup, Some(_)) => {
                return Err(ConfigError::invalid(
                    "engine.draft_model",
                    "is set but `speculative = \"lookup\"` does not use it; set `speculative = \"draft\"`, or remove `draft_model`",
                ));
            }
            _ => {}
        }
        let draft_tokens = draft_tokens.unwrap_or(d.draft_tokens);
        if !(1..=32).contains(&draft_tokens) {
            return Err(ConfigError::invalid(
                "engine.draft_tokens",
                "must be between 1 and 32 (turn drafting off with `speculative = \"off\"`)",
            ));
        }
        Ok(Self {
            mode,
            draft_model,
            draft_tokens,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_their_needs_are_checked() {
        let ok = |m: Option<&str>, d: Option<&str>, n: Option<u32>| {
            Speculation::from_raw(m, d.map(str::to_string), n)
        };
        assert_eq!(ok(None, None, None).unwrap(), Speculation::default());
        let draft = ok(None, Some("small.gguf"), None).unwrap();
        assert_eq!(
            draft.mode,
            Speculative::Draft,
            "a draft model alone means draft"
        );
        assert_eq!(
            ok(Some("off"), Some("s.gguf"), None).unwrap().mode,
            Speculative::Off
        );
        let err = |r: Result<Speculation, ConfigError>| r.unwrap_err().to_string();
        assert!(err(ok(Some("draft"), None, None)).contains("needs a draft model"));
        assert!(err(ok(Some("draft"), Some("  "), None)).contains("needs a draft model"));
        assert!(err(ok(Some("lookup"), Some("s.gguf"), None)).contains("does not use it"));
        assert!(err(ok(Some("ngram"), None, None)).contains("not one of lookup, draft, off"));
        assert!(err(ok(None, None, Some(0))).contains("between 1 and 32"));
        assert!(err(ok(None, None, Some(33))).contains("between 1 and 32"));
        assert_eq!(ok(None, None, Some(32)).unwrap().draft_tokens, 32);
    }
}
