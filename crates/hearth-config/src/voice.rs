//! `[voice]`: speech on the box. Voice notes and audio files are
//! transcribed by a local Whisper model and answered as the person's text;
//! replies are spoken with a local Piper voice when asked.

use std::fmt::Write;

use serde::Deserialize;

use super::ConfigError;
use super::render::quote;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawVoice {
    pub model: Option<String>,
    pub language: Option<String>,
    pub audio_max_seconds: Option<u64>,
    pub audio_max_mb: Option<u32>,
    pub show_transcript: Option<bool>,
    pub threads: Option<usize>,
    pub voice: Option<String>,
    pub onnxruntime: Option<String>,
    pub reply_with_voice: Option<String>,
}

/// When a reply is also sent as a voice note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VoiceReplies {
    Never,
    /// When the person's message was a voice note.
    #[default]
    WhenSpoken,
    Always,
}

impl VoiceReplies {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Never => "never",
            Self::WhenSpoken => "when_spoken",
            Self::Always => "always",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoiceConfig {
    /// The speech-to-text model: a folder (a path, or a name under the
    /// models folders). `None` finds a `whisper…` folder there; `Some("")`
    /// turns transcription off.
    pub model: Option<String>,
    /// The language spoken (an ISO code such as `"en"` or `"de"`); `None`
    /// lets a multilingual model detect it.
    pub language: Option<String>,
    /// The longest audio transcribed, in seconds.
    pub max_seconds: u64,
    /// The largest audio file, in megabytes.
    pub max_mb: u32,
    /// Show the person what was heard before the answer.
    pub show_transcript: bool,
    /// CPU threads for transcription and speech (0: as many as suit the machine).
    pub threads: usize,
    /// The Piper voice replies are spoken with (its `.onnx`, the `.onnx.json`
    /// beside it). `None` finds one in a `piper…` folder under the models
    /// folders; `Some("")` turns spoken replies off.
    pub voice: Option<String>,
    /// ONNX Runtime's shared library; `None` finds it in an `onnxruntime`
    /// folder under the models folders.
    pub onnxruntime: Option<String>,
    pub reply_with_voice: VoiceReplies,
}

impl Default for VoiceConfig {
    fn default() -> Self {
        Self {
            model: None,
            language: None,
            max_seconds: 600,
            max_mb: 20,
            show_transcript: true,
            threads: 0,
            voice: None,
            onnxruntime: None,
            reply_with_voice: VoiceReplies::default(),
        }
    }
}

impl VoiceConfig {
    pub(super) fn from_raw(raw: Option<RawVoice>) -> Result<Self, ConfigError> {
        let r = raw.unwrap_or_default();
        let d = Self::default();
        let language = r
            .language
            .map(|l| l.trim().to_ascii_lowercase())
            .filter(|l| !l.is_empty() && l != "auto");
        if let Some(l) = &language
            && !(2..=3).contains(&l.len())
        {
            return Err(ConfigError::invalid(
                "voice.language",
                format!(
                    "`{l}` is not a language code; use one such as \"en\" or \"de\", or \"auto\""
                ),
            ));
        }
        let c = Self {
            model: r.model.map(|m| m.trim().to_string()),
            language,
            max_seconds: r.audio_max_seconds.unwrap_or(d.max_seconds),
            max_mb: r.audio_max_mb.unwrap_or(d.max_mb),
            show_transcript: r.show_transcript.unwrap_or(d.show_transcript),
            threads: r.threads.unwrap_or(d.threads),
            voice: r.voice.map(|v| v.trim().to_string()),
            onnxruntime: r.onnxruntime.map(|v| v.trim().to_string()),
            reply_with_voice: match r.reply_with_voice.as_deref().map(str::trim) {
                None => d.reply_with_voice,
                Some("never") => VoiceReplies::Never,
                Some("when_spoken") => VoiceReplies::WhenSpoken,
                Some("always") => VoiceReplies::Always,
                Some(other) => {
                    return Err(ConfigError::invalid(
                        "voice.reply_with_voice",
                        format!("`{other}` is not one of \"never\", \"when_spoken\", \"always\""),
                    ));
                }
            },
        };
        if !(1..=4 * 3600).contains(&c.max_seconds) {
            return Err(ConfigError::invalid(
                "voice.audio_max_seconds",
                "must be between 1 and 14400",
            ));
        }
        if !(1..=2048).contains(&c.max_mb) {
            return Err(ConfigError::invalid(
                "voice.audio_max_mb",
                "must be between 1 and 2048",
            ));
        }
        Ok(c)
    }

    pub(super) fn render(&self, out: &mut String) {
        out.push_str("[voice]\n");
        match &self.model {
            Some(m) => {
                let _ = writeln!(out, "model = {}", quote(m));
            }
            None => out.push_str("# model: unset (a whisper… folder under the models folders)\n"),
        }
        match &self.language {
            Some(l) => {
                let _ = writeln!(out, "language = {}", quote(l));
            }
            None => out.push_str("language = \"auto\"\n"),
        }
        for (key, value, unset) in [
            (
                "voice",
                &self.voice,
                "a piper… folder under the models folders",
            ),
            (
                "onnxruntime",
                &self.onnxruntime,
                "an onnxruntime folder under the models folders",
            ),
        ] {
            match value {
                Some(v) => {
                    let _ = writeln!(out, "{key} = {}", quote(v));
                }
                None => {
                    let _ = writeln!(out, "# {key}: unset ({unset})");
                }
            }
        }
        let _ = writeln!(
            out,
            "reply_with_voice = \"{}\"\naudio_max_seconds = {}\naudio_max_mb = {}\nshow_transcript = {}\nthreads = {}\n",
            self.reply_with_voice.as_str(),
            self.max_seconds,
            self.max_mb,
            self.show_transcript,
            self.threads
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_and_limits_are_checked() {
        let c = VoiceConfig::from_raw(Some(RawVoice {
            language: Some(" DE ".into()),
            ..RawVoice::default()
        }))
        .unwrap();
        assert_eq!(c.language.as_deref(), Some("de"));
        let auto = VoiceConfig::from_raw(Some(RawVoice {
            language: Some("auto".into()),
            ..RawVoice::default()
        }))
        .unwrap();
        assert_eq!(auto.language, None);
        for (raw, key) in [
            (
                RawVoice {
                    language: Some("german".into()),
                    ..RawVoice::default()
                },
                "voice.language",
            ),
            (
                RawVoice {
                    audio_max_seconds: Some(0),
                    ..RawVoice::default()
                },
                "voice.audio_max_seconds",
            ),
        ] {
            let e = VoiceConfig::from_raw(Some(raw)).unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
        assert_eq!(VoiceConfig::from_raw(None).unwrap(), VoiceConfig::default());
    }
}
