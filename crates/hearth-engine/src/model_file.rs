//! Finding the model file and checking it before llama.cpp sees it.
//!
//! A bare file name is looked up in the `models/` folder beside the binary
//! (the checkout's, for a binary in `target/`; the one `make install`
//! fills, for an installed one), then in `<data dir>/models/`. A path is
//! used as is. An installed binary never looks into the checkout it was
//! built from: deleting the checkout takes nothing from it.
//! The file is then checked: against the size recorded in a `models.toml`
//! beside it (which catches an interrupted download), and by reading its GGUF
//! header (which catches a file that is not a model at all).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::EngineError;
use super::gguf::GgufMetadata;

/// The folders a bare model file name is looked up in, in order: the
/// nearest `models/` holding a `models.toml` above the binary, then the
/// data folder's.
pub fn model_dirs(data_dir: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::current_exe().ok().and_then(|exe| {
        exe.ancestors()
            .map(|a| a.join("models"))
            .find(|d| d.join("models.toml").is_file())
    }) {
        dirs.push(dir);
    }
    dirs.push(data_dir.join("models"));
    dirs
}

/// Resolves `[model] path` to an existing file.
pub fn locate(configured: &str, data_dir: &Path) -> Result<PathBuf, EngineError> {
    let as_path = Path::new(configured);
    if as_path.is_absolute() || configured.contains('/') {
        return if as_path.is_file() {
            Ok(as_path.to_path_buf())
        } else {
            Err(EngineError::ModelNotFound {
                name: configured.to_string(),
                searched: vec![as_path.to_path_buf()],
            })
        };
    }
    let searched = model_dirs(data_dir);
    searched
        .iter()
        .map(|d| d.join(configured))
        .find(|p| p.is_file())
        .ok_or_else(|| EngineError::ModelNotFound {
            name: configured.to_string(),
            searched,
        })
}

/// Checks the file and reads its metadata.
pub fn inspect(path: &Path) -> Result<GgufMetadata, EngineError> {
    let size = std::fs::metadata(path)
        .map_err(|e| EngineError::ModelInvalid {
            path: path.to_path_buf(),
            source: e.into(),
        })?
        .len();
    if let Some(expected) = manifest_size(path).filter(|&expected| size < expected) {
        return Err(EngineError::ModelTruncated {
            path: path.to_path_buf(),
            size,
            expected,
        });
    }
    GgufMetadata::read(path).map_err(|source| EngineError::ModelInvalid {
        path: path.to_path_buf(),
        source,
    })
}

/// The size `models.toml` beside the file records for it, if any.
fn manifest_size(path: &Path) -> Option<u64> {
    #[derive(Deserialize)]
    struct Manifest {
        models: std::collections::BTreeMap<String, Entry>,
    }
    #[derive(Deserialize)]
    struct Entry {
        file: String,
        size: Option<u64>,
    }
    let name = path.file_name()?.to_str()?;
    let text = std::fs::read_to_string(path.parent()?.join("models.toml")).ok()?;
    let manifest: Manifest = toml::from_str(&text).ok()?;
    manifest
        .models
        .into_values()
        .find(|e| e.file == name)
        .and_then(|e| e.size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_file_is_caught_by_the_manifest_size() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("models.toml"),
            "[models.m]\nfile = \"m.gguf\"\nsize = 1000\nsha256 = \"x\"\n",
        )
        .unwrap();
        let model = dir.path().join("m.gguf");
        std::fs::write(&model, b"GGUF").unwrap();
        let e = inspect(&model).unwrap_err().to_string();
        assert!(e.contains("truncated (4 of 1000 bytes)"), "{e}");
        assert!(e.contains("models/fetch"), "{e}");
    }

    #[test]
    fn a_file_that_is_not_gguf_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("x.gguf");
        std::fs::write(&model, b"<html>not found</html>").unwrap();
        let e = inspect(&model).unwrap_err().to_string();
        assert!(e.contains("not a usable GGUF"), "{e}");
    }

    #[test]
    fn missing_file_lists_where_it_looked() {
        let dir = tempfile::tempdir().unwrap();
        let e = locate("nothing-here.gguf", dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&dir.path().join("models").display().to_string()),
            "{e}"
        );
        assert!(e.contains("[model] path"), "{e}");
        let e = locate("/no/such/model.gguf", dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("/no/such/model.gguf"), "{e}");
    }
}
