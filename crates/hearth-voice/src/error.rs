//! What can go wrong with speech, each with what to do about it.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum VoiceError {
    /// Not a file this crate reads as audio, or a damaged one.
    #[error(
        "the audio could not be read ({0}); send a voice note, or an OGG/Opus, WAV or MP3 file"
    )]
    Unreadable(String),
    /// Longer than the configured limit.
    #[error("the audio is longer than {limit} s, the limit (`[voice] audio_max_seconds`)")]
    TooLong { limit: u64 },
    /// Larger than the configured limit.
    #[error("the audio file is {mb} MB, over the limit of {limit} MB (`[voice] audio_max_mb`)")]
    TooLarge { mb: u64, limit: u64 },
    /// No speech model where one was looked for.
    #[error("no speech-to-text model: {0}")]
    NoModel(String),
    /// The model folder is there but does not load.
    #[error("the speech model in {} does not load: {reason}", .path.display())]
    Model { path: PathBuf, reason: String },
    /// A language the model cannot be asked to hear.
    #[error(
        "the speech model cannot be asked for the language `{asked}` (`[voice] language` or --language); it knows: {known}. Leave it out to have the language detected"
    )]
    Language { asked: String, known: String },
    /// The model ran and failed.
    #[error("transcription failed: {0}")]
    Transcribe(String),
    /// No voice where one was looked for, or its runtime is missing.
    #[error("no voice to speak with: {0}")]
    NoVoice(String),
    /// Speaking failed.
    #[error("speech synthesis failed: {0}")]
    Synthesis(String),
}
