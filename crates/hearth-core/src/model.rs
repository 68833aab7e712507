//! The vocabulary of `[model]` and `[generation]` that the engine and the
//! config share: which model family's chat format to speak, how much to
//! reason, how many layers go to the GPU. The engine's `formats` layer gives
//! the families their behaviour; the config reads them from TOML.

/// A model family's way of calling tools and reasoning, named as
/// `[model] tool_format` names it. [`ModelFamily::Xml`] is hearth's own
/// `<tool_call>` protocol, described in the system prompt: the fallback for
/// templates that declare no tools or that hearth does not recognise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelFamily {
    Xml,
    /// Hermes, Qwen 2.5/3, QwQ: `<tool_call>{json}</tool_call>`.
    Hermes,
    /// Llama 3.x: a bare `{"name", "parameters"}` object, or `<|python_tag|>`.
    Llama3,
    /// Mistral v3 (Nemo): `[TOOL_CALLS][{…, "id"}]`.
    Mistral,
    /// Mistral v7 (Small 3.2, Devstral, Magistral): `[TOOL_CALLS]name[ARGS]{…}`.
    MistralV7,
    /// gpt-oss harmony: channels, `to=functions.NAME`.
    Harmony,
    /// DeepSeek R1 / V3: `<｜tool▁calls▁begin｜>` tokens.
    DeepSeek,
    /// Command R7B: `<|START_ACTION|>[…]<|END_ACTION|>`.
    CommandR,
    /// Phi-4-mini: `<|tool_call|>[…]<|/tool_call|>`.
    Phi4,
    /// Granite 3.x: `<|tool_call|>[…]`.
    Granite,
    /// Gemma 4: `<|tool_call>call:NAME{…}<tool_call|>`.
    Gemma4,
    /// GLM 4.5: `<tool_call>NAME<arg_key>…</arg_key><arg_value>…</arg_value></tool_call>`.
    Glm,
    /// Kimi K2: `<|tool_calls_section_begin|>…functions.NAME:0…`.
    Kimi,
    /// Nemotron: `<TOOLCALL>[…]</TOOLCALL>`.
    Nemotron,
}

impl ModelFamily {
    pub const ALL: [ModelFamily; 14] = [
        Self::Xml,
        Self::Hermes,
        Self::Llama3,
        Self::Mistral,
        Self::MistralV7,
        Self::Harmony,
        Self::DeepSeek,
        Self::CommandR,
        Self::Phi4,
        Self::Granite,
        Self::Gemma4,
        Self::Glm,
        Self::Kimi,
        Self::Nemotron,
    ];

    /// The name `tool_format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Xml => "xml",
            Self::Hermes => "hermes",
            Self::Llama3 => "llama3",
            Self::Mistral => "mistral",
            Self::MistralV7 => "mistral-v7",
            Self::Harmony => "harmony",
            Self::DeepSeek => "deepseek",
            Self::CommandR => "command-r",
            Self::Phi4 => "phi4",
            Self::Granite => "granite",
            Self::Gemma4 => "gemma4",
            Self::Glm => "glm",
            Self::Kimi => "kimi",
            Self::Nemotron => "nemotron",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Every name, for messages: `xml, hermes, …`.
    pub fn names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }
}

/// `[generation] reasoning`: whether and how hard a reasoning model thinks.
/// `Auto` leaves it to the template's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reasoning {
    #[default]
    Auto,
    Off,
    Low,
    Medium,
    High,
}

impl Reasoning {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(Self::Auto),
            "off" => Some(Self::Off),
            "low" => Some(Self::Low),
            "medium" => Some(Self::Medium),
            "high" => Some(Self::High),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Off => "off",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// How many layers go to the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuLayers {
    /// As many as fit beside the KV cache (none without a GPU build and GPU).
    Auto,
    Count(u32),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in ModelFamily::ALL {
            assert_eq!(ModelFamily::parse(f.name()), Some(f));
        }
        assert_eq!(ModelFamily::parse("auto"), None);
        for r in ["auto", "off", "low", "medium", "high"] {
            assert_eq!(Reasoning::parse(r).unwrap().as_str(), r);
        }
    }
}
