//! Sound a person sent: a voice note or an audio file, as the platform
//! delivered it, waiting to be transcribed.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An audio file (OGG/Opus, WAV, MP3...). Nothing here trusts it: the
/// speech layer decodes it within limits.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Audio {
    #[serde(serialize_with = "encode", deserialize_with = "decode")]
    pub bytes: Arc<[u8]>,
    /// Seconds the platform says it lasts (checked before it is decoded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_seconds: Option<u32>,
    /// Spoken into the app (a voice note), not a file sent along.
    #[serde(default)]
    pub voice_note: bool,
}

impl Audio {
    pub fn voice_note(bytes: impl Into<Arc<[u8]>>, declared_seconds: Option<u32>) -> Self {
        Self {
            bytes: bytes.into(),
            declared_seconds,
            voice_note: true,
        }
    }

    pub fn file(bytes: impl Into<Arc<[u8]>>) -> Self {
        Self {
            bytes: bytes.into(),
            declared_seconds: None,
            voice_note: false,
        }
    }
}

impl std::fmt::Debug for Audio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Audio({} bytes, {:?} s, voice note: {})",
            self.bytes.len(),
            self.declared_seconds,
            self.voice_note
        )
    }
}

pub(super) fn encode<S: Serializer>(bytes: &Arc<[u8]>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&STANDARD.encode(bytes))
}

pub(super) fn decode<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<[u8]>, D::Error> {
    let text = String::deserialize(d)?;
    STANDARD
        .decode(text)
        .map(Arc::from)
        .map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_voice_note_survives_a_record() {
        let note = Audio::voice_note(b"OggS...".to_vec(), Some(3));
        let text = serde_json::to_string(&note).unwrap_or_default();
        assert!(text.contains("\"T2dnUy4uLg==\""), "{text}");
        assert_eq!(serde_json::from_str::<Audio>(&text).ok(), Some(note));
    }
}
