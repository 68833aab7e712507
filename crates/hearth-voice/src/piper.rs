//! Speaking with a Piper voice (a VITS model in ONNX with its JSON): text
//! to phonemes by espeak-ng (the phonemiser Piper's voices were trained
//! with), phonemes to ids by the voice's own map, ids to samples through
//! ONNX Runtime, loaded from its shared library at run time.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ort::session::Session;
use ort::value::Tensor;

use crate::VoiceError;

/// What a voice's JSON says that hearth uses.
#[derive(serde::Deserialize)]
struct VoiceFile {
    audio: AudioPart,
    espeak: EspeakPart,
    inference: Inference,
    phoneme_id_map: HashMap<String, Vec<i64>>,
}

#[derive(serde::Deserialize)]
struct AudioPart {
    sample_rate: u32,
}

#[derive(serde::Deserialize)]
struct EspeakPart {
    voice: String,
}

#[derive(serde::Deserialize)]
struct Inference {
    noise_scale: f32,
    length_scale: f32,
    noise_w: f32,
}

/// A loaded Piper voice.
pub struct Piper {
    session: Mutex<Session>,
    voice: VoiceFile,
    path: PathBuf,
}

/// A spoken text.
#[derive(Debug, Clone, PartialEq)]
pub struct Speech {
    pub samples: Vec<f32>,
    pub sample_rate: u32,
    pub elapsed: Duration,
}

impl Speech {
    pub fn seconds(&self) -> f64 {
        self.samples.len() as f64 / f64::from(self.sample_rate.max(1))
    }

    /// Seconds of work per second of speech.
    pub fn real_time_factor(&self) -> f64 {
        self.elapsed.as_secs_f64() / self.seconds().max(1e-9)
    }

    /// As an OGG/Opus voice note.
    pub fn voice_note(&self) -> Result<Vec<u8>, VoiceError> {
        crate::opus_out::encode(&self.samples, self.sample_rate)
    }
}

impl std::fmt::Debug for Piper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Piper({})", self.path.display())
    }
}

impl Piper {
    /// Loads the voice `model` (`….onnx`, its `….onnx.json` beside it)
    /// with ONNX Runtime's library at `runtime`.
    pub fn load(model: &Path, runtime: &Path, threads: usize) -> Result<Self, VoiceError> {
        let failed = |e: String| VoiceError::NoVoice(format!("{}: {e}", model.display()));
        let json = PathBuf::from(format!("{}.json", model.display()));
        let text = std::fs::read_to_string(&json)
            .map_err(|e| failed(format!("cannot read {}: {e}", json.display())))?;
        let voice: VoiceFile = serde_json::from_str(&text).map_err(|e| {
            failed(format!(
                "{} is not a Piper voice's JSON: {e}",
                json.display()
            ))
        })?;
        if !runtime.is_file() {
            return Err(VoiceError::NoVoice(format!(
                "ONNX Runtime's library {} is missing (`make test-speech` fetches it; or set `[voice] onnxruntime`)",
                runtime.display()
            )));
        }
        // Once per process; a later call with another path keeps the first.
        let _ = ort::init_from(runtime.display().to_string())
            .commit()
            .map_err(|e| failed(format!("ONNX Runtime {}: {e}", runtime.display())))?;
        // 0: as many threads as the machine runs at once.
        let threads = match threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let session = Session::builder()
            .and_then(|b| b.with_intra_threads(threads))
            .and_then(|b| b.commit_from_file(model))
            .map_err(|e| failed(e.to_string()))?;
        Ok(Self {
            session: Mutex::new(session),
            voice,
            path: model.to_path_buf(),
        })
    }

    /// `text` spoken.
    pub fn speak(&self, text: &str) -> Result<Speech, VoiceError> {
        let started = Instant::now();
        let phonemes = phonemes(text, &self.voice.espeak.voice)?;
        let ids = self.ids(&phonemes);
        if ids.len() <= 3 {
            return Err(VoiceError::Synthesis("there is nothing to say".into()));
        }
        let failed = |e: ort::Error| VoiceError::Synthesis(e.to_string());
        let n = ids.len();
        let input = Tensor::from_array(([1usize, n], ids)).map_err(failed)?;
        let lengths = Tensor::from_array(([1usize], vec![n as i64])).map_err(failed)?;
        let i = &self.voice.inference;
        let scales = Tensor::from_array(([3usize], vec![i.noise_scale, i.length_scale, i.noise_w]))
            .map_err(failed)?;
        let mut session = self
            .session
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let outputs = session
            .run(ort::inputs!["input" => input, "input_lengths" => lengths, "scales" => scales])
            .map_err(failed)?;
        let (_, samples) = outputs[0].try_extract_tensor::<f32>().map_err(failed)?;
        Ok(Speech {
            samples: samples.to_vec(),
            sample_rate: self.voice.audio.sample_rate,
            elapsed: started.elapsed(),
        })
    }

    /// Piper's ids: begin, then each phoneme followed by the pad, then end.
    fn ids(&self, phonemes: &str) -> Vec<i64> {
        let map = &self.voice.phoneme_id_map;
        let one = |s: &str| map.get(s).cloned().unwrap_or_default();
        let mut ids = one("^");
        ids.extend(one("_"));
        for c in phonemes.chars() {
            if let Some(id) = map.get(c.encode_utf8(&mut [0; 4]) as &str) {
                ids.extend(id);
                ids.extend(one("_"));
            }
        }
        ids.extend(one("$"));
        ids
    }
}

/// `text` in IPA by espeak-ng (fed on stdin, never as arguments): its
/// clauses joined by commas, ended by a full stop.
fn phonemes(text: &str, voice: &str) -> Result<String, VoiceError> {
    let missing = |e: std::io::Error| {
        VoiceError::NoVoice(format!(
            "espeak-ng, which turns text into a Piper voice's phonemes, did not start ({e}); install it: apt-get install espeak-ng"
        ))
    };
    let mut child = Command::new("espeak-ng")
        .args(["-q", "--ipa", "--stdin", "-v", voice])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(missing)?;
    if let Some(mut stdin) = child.stdin.take() {
        // One line: a newline inside would end espeak-ng's input early.
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        stdin
            .write_all(flat.as_bytes())
            .map_err(|e| VoiceError::Synthesis(format!("espeak-ng: {e}")))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| VoiceError::Synthesis(format!("espeak-ng: {e}")))?;
    if !out.status.success() {
        return Err(VoiceError::Synthesis(format!(
            "espeak-ng: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let clauses: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    Ok(format!("{}.", clauses.join(", ")))
}

/// The first Piper voice (`*.onnx` with its `.onnx.json`) in a folder
/// under `roots` whose name holds `piper`.
pub fn find_voice(roots: &[PathBuf]) -> Option<PathBuf> {
    for root in roots {
        let mut folders: Vec<PathBuf> = std::fs::read_dir(root)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.is_dir()
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.to_ascii_lowercase().contains("piper"))
            })
            .collect();
        folders.sort();
        for folder in folders {
            let mut voices: Vec<PathBuf> = std::fs::read_dir(&folder)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.extension().is_some_and(|e| e == "onnx")
                        && PathBuf::from(format!("{}.json", p.display())).is_file()
                })
                .collect();
            voices.sort();
            if let Some(v) = voices.into_iter().next() {
                return Some(v);
            }
        }
    }
    None
}

/// ONNX Runtime's library in a folder under `roots` named `onnxruntime`.
pub fn find_runtime(roots: &[PathBuf]) -> Option<PathBuf> {
    roots.iter().find_map(|root| {
        let mut libs: Vec<PathBuf> = std::fs::read_dir(root.join("onnxruntime"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libonnxruntime.so"))
            })
            .collect();
        libs.sort();
        libs.pop()
    })
}
