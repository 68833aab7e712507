//! Speech on the box: voice notes to text, and replies to voice notes.
//! The Whisper model and the Piper voice are found like the chat model
//! (`[voice] model` / `voice`, else a `whisper…` / `piper…` folder in the
//! checkout's `models/`, then `<data dir>/models/`), loaded on first use
//! and kept. Audio is decoded on a blocking thread within `[voice]`'s
//! limits, and both models run where they cannot overlap a decode of the
//! LLM ([`Provider::exclusive`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hearth_voice::{Piper, Transcript, VoiceError, Whisper};

use crate::chat::Audio;
use crate::config::{Config, VoiceConfig};
use crate::providers::Provider;

/// Transcribes audio for the assistant.
pub struct Speech {
    config: VoiceConfig,
    data_dir: PathBuf,
    loaded: tokio::sync::Mutex<Option<Arc<Whisper>>>,
    voice: tokio::sync::Mutex<Option<Arc<Piper>>>,
}

/// A reply spoken: the voice note, and what making it took.
#[derive(Debug, Clone)]
pub struct Spoken {
    pub ogg: Vec<u8>,
    pub seconds: f64,
    pub elapsed: std::time::Duration,
}

impl std::fmt::Debug for Speech {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Speech({:?})", self.config.model)
    }
}

impl Speech {
    pub fn new(config: &Config) -> Self {
        Self {
            config: config.voice.clone(),
            data_dir: config.data_dir.clone(),
            loaded: tokio::sync::Mutex::new(None),
            voice: tokio::sync::Mutex::new(None),
        }
    }

    /// The model folder the config names or the models folders hold.
    pub fn model_dir(&self) -> Result<PathBuf, VoiceError> {
        model_dir(&self.config, &self.data_dir)
    }

    /// The words of `audio`. With a `provider`, the model runs beside it,
    /// never during one of its decode steps; alone, on a blocking thread.
    pub async fn transcribe(
        &self,
        audio: &Audio,
        beside: Option<&dyn Provider>,
    ) -> Result<Transcript, VoiceError> {
        let limits = audio_limits(&self.config);
        if let Some(secs) = audio.declared_seconds
            && u64::from(secs) > limits.max_seconds
        {
            // Refused before a byte of it is decoded.
            return Err(VoiceError::TooLong {
                limit: limits.max_seconds,
            });
        }
        let whisper = self.whisper().await?;
        let bytes = audio.bytes.clone();
        let pcm = tokio::task::spawn_blocking(move || hearth_voice::audio::decode(&bytes, &limits))
            .await
            .map_err(|e| VoiceError::Unreadable(format!("the decoder stopped: {e}")))??;
        let language = self.config.language.clone();
        run_beside(beside, VoiceError::Transcribe, move || {
            whisper.transcribe(&pcm, language.as_deref())
        })
        .await
    }

    /// `text` spoken as an OGG/Opus voice note; beside `provider` as
    /// transcription is. Markdown marks are not read out.
    pub async fn say(
        &self,
        text: &str,
        beside: Option<&dyn Provider>,
    ) -> Result<Spoken, VoiceError> {
        let piper = self.piper().await?;
        let text = speakable(text);
        run_beside(beside, VoiceError::Synthesis, move || {
            let s = piper.speak(&text)?;
            Ok(Spoken {
                ogg: s.voice_note()?,
                seconds: s.seconds(),
                elapsed: s.elapsed,
            })
        })
        .await
    }

    /// The voice, loaded once.
    async fn piper(&self) -> Result<Arc<Piper>, VoiceError> {
        let mut loaded = self.voice.lock().await;
        if let Some(p) = loaded.as_ref() {
            return Ok(p.clone());
        }
        let (model, runtime) = voice_files(&self.config, &self.data_dir)?;
        let threads = self.config.threads;
        let piper = tokio::task::spawn_blocking(move || Piper::load(&model, &runtime, threads))
            .await
            .map_err(|e| VoiceError::Synthesis(format!("loading stopped: {e}")))??;
        let piper = Arc::new(piper);
        *loaded = Some(piper.clone());
        Ok(piper)
    }

    /// The model, loaded once (on a blocking thread: it takes a while).
    async fn whisper(&self) -> Result<Arc<Whisper>, VoiceError> {
        let mut loaded = self.loaded.lock().await;
        if let Some(w) = loaded.as_ref() {
            return Ok(w.clone());
        }
        let dir = self.model_dir()?;
        let threads = self.config.threads;
        let whisper = tokio::task::spawn_blocking(move || Whisper::load(&dir, threads))
            .await
            .map_err(|e| VoiceError::Transcribe(format!("loading stopped: {e}")))??;
        let whisper = Arc::new(whisper);
        *loaded = Some(whisper.clone());
        Ok(whisper)
    }
}

/// Runs `work` beside `provider` (never during one of its decode steps),
/// or alone on a blocking thread; `failed` names what went wrong.
async fn run_beside<T: Send + 'static>(
    beside: Option<&dyn Provider>,
    failed: fn(String) -> VoiceError,
    work: impl FnOnce() -> Result<T, VoiceError> + Send + 'static,
) -> Result<T, VoiceError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let work: crate::providers::Work = Box::new(move || {
        let _ = tx.send(work());
    });
    let ran = match beside {
        Some(provider) => provider.exclusive(work).await,
        None => tokio::task::spawn_blocking(work)
            .await
            .map_err(|e| crate::chat::ProviderError::Failed(e.to_string())),
    };
    ran.map_err(|e| failed(e.to_string()))?;
    rx.await
        .map_err(|_| failed("it stopped without an answer".into()))?
}

/// The limits audio is decoded within, from `[voice]`.
pub fn audio_limits(config: &VoiceConfig) -> hearth_voice::AudioLimits {
    hearth_voice::AudioLimits {
        max_bytes: (config.max_mb as usize) << 20,
        max_seconds: config.max_seconds,
    }
}

/// `[voice] model` resolved: a path, a folder name under the models
/// folders, or (unset) the first `whisper…` folder there.
pub fn model_dir(config: &VoiceConfig, data_dir: &Path) -> Result<PathBuf, VoiceError> {
    let roots = crate::engine::model_file::model_dirs(data_dir);
    let shown = || {
        roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match config.model.as_deref() {
        Some("") => Err(VoiceError::NoModel(
            "transcription is off (`[voice] model = \"\"`)".into(),
        )),
        Some(named) => {
            let as_path = Path::new(named);
            let candidates: Vec<PathBuf> = if as_path.is_absolute() || named.contains('/') {
                vec![as_path.to_path_buf()]
            } else {
                roots.iter().map(|r| r.join(named)).collect()
            };
            candidates
                .into_iter()
                .find(|p| p.join("model.bin").is_file())
                .ok_or_else(|| {
                    VoiceError::NoModel(format!(
                        "`[voice] model = \"{named}\"` is not a model folder (looked in {})",
                        shown()
                    ))
                })
        }
        None => hearth_voice::find_model(&roots).ok_or_else(|| {
            VoiceError::NoModel(format!(
                "no whisper… model folder in {}; fetch one (`make test-speech` gets Whisper tiny.en) or set `[voice] model`",
                shown()
            ))
        }),
    }
}

/// The Piper voice and ONNX Runtime's library `[voice]` names or the
/// models folders hold.
pub fn voice_files(
    config: &VoiceConfig,
    data_dir: &Path,
) -> Result<(PathBuf, PathBuf), VoiceError> {
    let roots = crate::engine::model_file::model_dirs(data_dir);
    let model = voice_file(config, data_dir)?;
    // Beside the binary first, where `make install` puts it: an installed
    // hearth runs with its own copy.
    let mut places: Vec<PathBuf> = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
        .into_iter()
        .collect();
    places.extend(roots);
    let runtime = match config.onnxruntime.as_deref() {
        Some(named) if !named.is_empty() => PathBuf::from(named),
        _ => hearth_voice::find_runtime(&places).ok_or_else(|| {
            VoiceError::NoVoice(
                "ONNX Runtime's library (libonnxruntime.so) is not in an onnxruntime folder under the models folders or beside the binary; `make test-speech` fetches it (and `make install` then installs it), or set `[voice] onnxruntime`".into(),
            )
        })?,
    };
    Ok((model, runtime))
}

/// The Piper voice `[voice] voice` names or the models folders hold.
pub fn voice_file(config: &VoiceConfig, data_dir: &Path) -> Result<PathBuf, VoiceError> {
    let roots = crate::engine::model_file::model_dirs(data_dir);
    Ok(match config.voice.as_deref() {
        Some("") => {
            return Err(VoiceError::NoVoice(
                "spoken replies are off (`[voice] voice = \"\"`)".into(),
            ));
        }
        Some(named) => {
            let p = Path::new(named);
            // A relative name is looked for in the models folders first
            // (`piper-joe/en_US-joe-medium.onnx`, as `hearth models use`
            // writes it), then from the working directory.
            let found = if p.is_absolute() {
                Some(p.to_path_buf())
            } else {
                roots
                    .iter()
                    .map(|r| r.join(named))
                    .find(|c| c.is_file())
                    .or_else(|| named.contains('/').then(|| p.to_path_buf()))
            };
            found.filter(|p| p.is_file()).ok_or_else(|| {
                VoiceError::NoVoice(format!("`[voice] voice = \"{named}\"` is not a file"))
            })?
        }
        None => hearth_voice::find_voice(&roots).ok_or_else(|| {
            VoiceError::NoVoice(
                "no piper… folder with a voice (.onnx and .onnx.json) under the models folders; `make test-speech` fetches one, `hearth models pull piper-joe` another, or set `[voice] voice`".into(),
            )
        })?,
    })
}

/// A reply as it should be read aloud: no Markdown marks, no code, at
/// most about a minute of speech (cut at a sentence).
pub fn speakable(text: &str) -> String {
    const MOST: usize = 900;
    let plain: String = text
        .chars()
        .filter(|c| !matches!(c, '*' | '_' | '`' | '#' | '>' | '|'))
        .collect();
    let plain = plain.split_whitespace().collect::<Vec<_>>().join(" ");
    if plain.chars().count() <= MOST {
        return plain;
    }
    let cut: String = plain.chars().take(MOST).collect();
    match cut.rfind(['.', '!', '?']) {
        Some(end) if end > MOST / 3 => cut[..=end].to_string(),
        _ => format!("{cut}…"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_without_marks_and_not_forever() {
        assert_eq!(
            speakable("**Yes**, run `ls` now.\n\n# Done"),
            "Yes, run ls now. Done"
        );
        let long = "A sentence of words. ".repeat(100);
        let said = speakable(&long);
        assert!(said.len() <= 900 && said.ends_with('.'), "{said}");
    }
}
