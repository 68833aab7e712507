//! Whisper in process, through CTranslate2 (`ct2rs`): the model folders
//! faster-whisper uses (`model.bin`, `config.json`, `tokenizer.json`),
//! quantised to int8 at load on the CPU. The features are hearth's own
//! ([`crate::mel`]: silence after the speech, as the model was trained);
//! an English-only model is prompted without a language, as it was trained.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ct2rs::Tokenizer as _;
use ct2rs::sys::{StorageView, WhisperOptions};

use crate::mel::{FRAMES, Mel};
use crate::{Pcm, VoiceError};

/// A loaded speech-to-text model.
pub struct Whisper {
    model: ct2rs::sys::Whisper,
    tokenizer: ct2rs::tokenizers::hf::Tokenizer,
    mel: Mel,
    path: PathBuf,
    multilingual: bool,
    /// The language codes its tokenizer has a token for (`de` for `<|de|>`).
    languages: Vec<String>,
}

/// What was said, and what it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    pub text: String,
    /// The language it was transcribed as (detected, or as configured).
    pub language: String,
    pub audio_seconds: f64,
    pub elapsed: Duration,
}

impl Transcript {
    /// Seconds of work per second of audio (below 1: faster than spoken).
    pub fn real_time_factor(&self) -> f64 {
        self.elapsed.as_secs_f64() / self.audio_seconds.max(1e-9)
    }
}

impl std::fmt::Debug for Whisper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Whisper({})", self.path.display())
    }
}

impl Whisper {
    /// Loads the model in `dir` with `threads` CPU threads (0: CTranslate2 chooses).
    pub fn load(dir: &Path, threads: usize) -> Result<Self, VoiceError> {
        let failed = |reason: String| VoiceError::Model {
            path: dir.to_path_buf(),
            reason,
        };
        for needed in ["model.bin", "tokenizer.json", "config.json"] {
            if !dir.join(needed).is_file() {
                return Err(failed(format!(
                    "{needed} is missing; a Whisper model in CTranslate2's format (faster-whisper's) has model.bin, config.json and tokenizer.json"
                )));
            }
        }
        let config = ct2rs::Config {
            compute_type: ct2rs::ComputeType::INT8,
            num_threads_per_replica: threads,
            ..ct2rs::Config::default()
        };
        let model = ct2rs::sys::Whisper::new(dir, config).map_err(|e| failed(format!("{e:#}")))?;
        let tokenizer =
            ct2rs::tokenizers::hf::Tokenizer::new(dir).map_err(|e| failed(format!("{e:#}")))?;
        let multilingual = model.is_multilingual();
        let languages = languages_of(&dir.join("tokenizer.json")).map_err(failed)?;
        Ok(Self {
            mel: Mel::new(model.n_mels()),
            model,
            tokenizer,
            path: dir.to_path_buf(),
            multilingual,
            languages,
        })
    }

    /// Whether the model knows languages other than English.
    pub fn multilingual(&self) -> bool {
        self.multilingual
    }

    /// The words in `pcm`. `language`: an ISO code such as `"de"`, or
    /// `None` to detect it (an English-only model always hears English).
    pub fn transcribe(&self, pcm: &Pcm, language: Option<&str>) -> Result<Transcript, VoiceError> {
        if let Some(asked) = language {
            self.knows(asked)?;
        }
        let started = Instant::now();
        let (mut features, windows) = self.mel.windows(&pcm.samples);
        if windows == 0 {
            return Ok(Transcript {
                text: String::new(),
                language: language.unwrap_or("en").to_string(),
                audio_seconds: 0.0,
                elapsed: started.elapsed(),
            });
        }
        let features_ms = started.elapsed().as_secs_f64() * 1e3;
        let shape = [windows, self.mel.n_mels(), FRAMES];
        let view = StorageView::new(&shape, &mut features, ct2rs::Device::CPU)
            .map_err(|e| VoiceError::Transcribe(format!("{e:#}")))?;
        let language = match (self.multilingual, language) {
            (false, _) => "en".to_string(),
            (true, Some(l)) => l.to_string(),
            (true, None) => self.detect(&view)?,
        };
        let marker = format!("<|{language}|>");
        let prompt: Vec<&str> = if self.multilingual {
            vec![
                "<|startoftranscript|>",
                &marker,
                "<|transcribe|>",
                "<|notimestamps|>",
            ]
        } else {
            vec!["<|startoftranscript|>", "<|notimestamps|>"]
        };
        let options = WhisperOptions {
            beam_size: 5,
            ..WhisperOptions::default()
        };
        let results = self
            .model
            .generate(&view, &vec![prompt; windows], &options)
            .map_err(|e| VoiceError::Transcribe(format!("{e:#}")))?;
        tracing::debug!(
            features_ms,
            generate_ms = started.elapsed().as_secs_f64() * 1e3 - features_ms,
            windows,
            "transcribed"
        );
        let mut pieces = Vec::with_capacity(results.len());
        for result in results {
            let Some(tokens) = result.sequences.into_iter().next() else {
                continue;
            };
            let text = self
                .tokenizer
                .decode(tokens)
                .map_err(|e| VoiceError::Transcribe(format!("{e:#}")))?;
            pieces.push(text.trim().to_string());
        }
        Ok(Transcript {
            text: pieces
                .into_iter()
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join(" "),
            language,
            audio_seconds: pcm.seconds(),
            elapsed: started.elapsed(),
        })
    }

    /// Refuses a language the model cannot be asked for: one its tokenizer
    /// has no token for (the prompt would carry it as text and the model
    /// would answer with its own control tokens), or any but English for an
    /// English-only model.
    fn knows(&self, asked: &str) -> Result<(), VoiceError> {
        let unknown = |known: String| VoiceError::Language {
            asked: asked.to_string(),
            known,
        };
        if !self.multilingual {
            return match asked {
                "en" => Ok(()),
                _ => Err(unknown(
                    "en only (an English-only model; pull a multilingual one such as whisper-base)"
                        .to_string(),
                )),
            };
        }
        if self.languages.iter().any(|l| l == asked) {
            return Ok(());
        }
        Err(unknown(self.languages.join(", ")))
    }

    /// The language a multilingual model hears in the first window.
    fn detect(&self, view: &StorageView) -> Result<String, VoiceError> {
        let found = self
            .model
            .detect_language(view)
            .map_err(|e| VoiceError::Transcribe(format!("{e:#}")))?;
        let token = found
            .into_iter()
            .next()
            .and_then(|w| w.into_iter().next())
            .map(|d| d.language)
            .ok_or_else(|| VoiceError::Transcribe("no language was detected".into()))?;
        Ok(token
            .trim_start_matches("<|")
            .trim_end_matches("|>")
            .to_string())
    }
}

/// The language codes in a tokenizer's added tokens: `<|de|>`, `<|haw|>`
/// (two or three small letters; `<|nospeech|>` and the like are not).
fn languages_of(tokenizer: &Path) -> Result<Vec<String>, String> {
    #[derive(serde::Deserialize)]
    struct Added {
        content: String,
    }
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(default)]
        added_tokens: Vec<Added>,
    }
    let text = std::fs::read(tokenizer).map_err(|e| format!("{}: {e}", tokenizer.display()))?;
    let file: File = serde_json::from_slice(&text)
        .map_err(|e| format!("{} is not a tokenizer: {e}", tokenizer.display()))?;
    Ok(file
        .added_tokens
        .into_iter()
        .filter_map(|t| {
            let code = t.content.strip_prefix("<|")?.strip_suffix("|>")?;
            ((2..=3).contains(&code.len()) && code.bytes().all(|b| b.is_ascii_lowercase()))
                .then(|| code.to_string())
        })
        .collect())
}

/// The first folder under `roots` (each looked at, then its children) that
/// holds a Whisper model: named `whisper…` or `*-whisper-*`, with
/// `model.bin` and `tokenizer.json`. `None` when there is none.
pub fn find_model(roots: &[PathBuf]) -> Option<PathBuf> {
    let is_model = |p: &Path| p.join("model.bin").is_file() && p.join("tokenizer.json").is_file();
    let named = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.to_ascii_lowercase().contains("whisper"))
    };
    for root in roots {
        let mut children: Vec<PathBuf> = std::fs::read_dir(root)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir() && named(p) && is_model(p))
            .collect();
        // By name, for a stable choice; `[voice] model` names another.
        children.sort();
        if let Some(found) = children.into_iter().next() {
            return Some(found);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_folder_is_found_by_name_and_contents() {
        let dir = tempfile::tempdir().unwrap();
        let models = dir.path().join("models");
        let tiny = models.join("whisper-tiny.en");
        let empty = models.join("whisper-empty");
        let other = models.join("SmolLM2");
        for d in [&tiny, &empty, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        for f in ["model.bin", "tokenizer.json"] {
            std::fs::write(tiny.join(f), "x").unwrap();
            std::fs::write(other.join(f), "x").unwrap();
        }
        let roots = [dir.path().join("nowhere"), models.clone()];
        assert_eq!(find_model(&roots), Some(tiny.clone()));
        std::fs::remove_dir_all(&tiny).unwrap();
        assert_eq!(find_model(&roots), None, "not named whisper, or incomplete");
        let e = Whisper::load(&empty, 1).unwrap_err().to_string();
        assert!(e.contains("model.bin is missing"), "{e}");
    }
}
