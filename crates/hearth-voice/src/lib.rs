//! Speech on the box. [`audio`] turns a voice note or audio file (OGG/Opus
//! as Telegram sends them, WAV, MP3) into 16 kHz mono samples within
//! [`AudioLimits`], refusing what is not audio or is too long with a reason;
//! [`Whisper`] transcribes them in process with a Whisper model in
//! CTranslate2's format (the faster-whisper model folders); [`Piper`]
//! speaks with a Piper voice through ONNX Runtime, and a [`Speech`] becomes
//! an OGG/Opus voice note.
//!
//! This floor stands on nothing of hearth's: it is handed bytes and a model
//! folder, and gives back text or an error that says what to change.

pub mod audio;
mod error;
mod mel;
mod ogg_opus;
mod opus_out;
mod piper;
mod resample;
mod wav_header;
mod whisper;

pub use audio::{AudioLimits, Pcm, SAMPLE_RATE};
pub use error::VoiceError;
pub use piper::{Piper, Speech, find_runtime, find_voice};
pub use whisper::{Transcript, Whisper, find_model};
