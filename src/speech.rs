//! Voice notes to text on the box. The Whisper model is found like the
//! chat model (`[voice] model`, else a `whisper…` folder in the checkout's
//! `models/`, then `<data dir>/models/`), loaded on first use and kept.
//! Audio is decoded on a blocking thread within `[voice]`'s limits, and
//! the model runs where it cannot overlap a decode of the LLM
//! ([`Provider::exclusive`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hearth_voice::{Transcript, VoiceError, Whisper};

use crate::chat::Audio;
use crate::config::{Config, VoiceConfig};
use crate::providers::Provider;

/// Transcribes audio for the assistant.
pub struct Speech {
    config: VoiceConfig,
    data_dir: PathBuf,
    loaded: tokio::sync::Mutex<Option<Arc<Whisper>>>,
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
        let limits = self.config.limits();
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
        let (tx, rx) = tokio::sync::oneshot::channel();
        let language = self.config.language.clone();
        let work: crate::providers::Work = Box::new(move || {
            let _ = tx.send(whisper.transcribe(&pcm, language.as_deref()));
        });
        let ran = match beside {
            Some(provider) => provider.exclusive(work).await,
            None => tokio::task::spawn_blocking(work)
                .await
                .map_err(|e| crate::chat::ProviderError::Failed(e.to_string())),
        };
        ran.map_err(|e| VoiceError::Transcribe(e.to_string()))?;
        rx.await
            .map_err(|_| VoiceError::Transcribe("the model stopped without an answer".into()))?
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
