//! A sequence's state outside the context: in RAM, or in a file on disk.
//!
//! A saved sequence is the token list plus the bytes llama.cpp serialised
//! for it. On disk it is one file: a magic line, a JSON header naming the
//! conversation, the model fingerprint and a sha256 of the payload, then the
//! tokens and the state bytes. A file is loaded only when the fingerprint
//! matches the running model and context and the checksum matches the bytes,
//! so llama.cpp never parses a corrupt or foreign state.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use hearth_core::hex::hex;
use llama_cpp_2::token::LlamaToken;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

const MAGIC: &str = "hearth-kv-v1";

/// A sequence taken out of the context.
#[derive(Debug, Clone)]
pub struct SavedSeq {
    pub tokens: Vec<LlamaToken>,
    pub state: Vec<u8>,
}

impl SavedSeq {
    pub fn bytes(&self) -> usize {
        self.state.len() + self.tokens.len() * 4
    }
}

/// What a saved state is only valid for: the same model file and context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub model_file: String,
    pub model_size: u64,
    pub n_params: u64,
    pub n_ctx_seq: u32,
}

impl Fingerprint {
    /// Whether a state saved under `self` holding `n_tokens` loads under
    /// `now`: the same model, and room for its tokens. The context size
    /// alone may differ: with `context_size = 0` it follows the memory
    /// free at start (a GPU's or RAM's), so it changed from one start to
    /// the next and every saved conversation was read again from cold.
    pub fn fits(&self, now: &Fingerprint, n_tokens: usize) -> bool {
        self.model_file == now.model_file
            && self.model_size == now.model_size
            && self.n_params == now.n_params
            && n_tokens < now.n_ctx_seq as usize
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    conversation: String,
    fingerprint: Fingerprint,
    n_tokens: usize,
    state_len: usize,
    sha256: String,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("no saved state")]
    Missing,
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a hearth KV file or a damaged header")]
    Format,
    #[error("saved for {} with a context of {} tokens", .0.model_file, .0.n_ctx_seq)]
    Mismatch(Fingerprint),
    #[error("saved for another conversation")]
    OtherConversation,
    #[error("checksum mismatch: the file is damaged")]
    Checksum,
}

/// The file a conversation's state is saved in.
pub fn path_for(dir: &Path, conversation: &str) -> PathBuf {
    let digest = Sha256::digest(conversation.as_bytes());
    let name = hex(&digest[..12]);
    dir.join(format!("{name}.kv"))
}

pub fn save(
    path: &Path,
    conversation: &str,
    fingerprint: &Fingerprint,
    seq: &SavedSeq,
) -> std::io::Result<()> {
    let mut payload = Vec::with_capacity(seq.bytes());
    for t in &seq.tokens {
        payload.extend_from_slice(&t.0.to_le_bytes());
    }
    payload.extend_from_slice(&seq.state);
    let header = Header {
        conversation: conversation.to_string(),
        fingerprint: fingerprint.clone(),
        n_tokens: seq.tokens.len(),
        state_len: seq.state.len(),
        sha256: hex(&Sha256::digest(&payload)),
    };
    if let Some(dir) = path.parent() {
        hearth_core::file_modes::make_private_dir(dir)?;
    }
    // Write to a temporary file and rename: a crash never leaves half a file.
    let tmp = path.with_extension("kv.tmp");
    {
        let mut f = std::io::BufWriter::new(hearth_core::file_modes::create_private_file(&tmp)?);
        writeln!(f, "{MAGIC}")?;
        writeln!(
            f,
            "{}",
            serde_json::to_string(&header).map_err(std::io::Error::other)?
        )?;
        f.write_all(&payload)?;
        f.flush()?;
    }
    std::fs::rename(&tmp, path)
}

/// The conversation and token count of every state file in `dir`, with
/// the file's size (headers only are read).
pub fn peek_all(dir: &Path) -> Vec<super::board::Cached> {
    let Ok(files) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    files
        .flatten()
        .filter(|f| f.path().extension().is_some_and(|e| e == "kv"))
        .filter_map(|f| {
            let bytes = f.metadata().ok()?.len();
            let mut r = BufReader::new(std::fs::File::open(f.path()).ok()?);
            let mut line = String::new();
            r.read_line(&mut line).ok()?;
            if line.trim_end() != MAGIC {
                return None;
            }
            line.clear();
            r.read_line(&mut line).ok()?;
            let header: Header = serde_json::from_str(line.trim_end()).ok()?;
            Some(super::board::Cached {
                conversation: header.conversation,
                tier: super::board::Tier::Disk,
                tokens: header.n_tokens,
                bytes: Some(bytes),
            })
        })
        .collect()
}

pub fn load(
    path: &Path,
    conversation: &str,
    fingerprint: &Fingerprint,
) -> Result<SavedSeq, LoadError> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(LoadError::Missing),
        Err(e) => return Err(e.into()),
    };
    let mut r = BufReader::new(file);
    let mut line = String::new();
    r.read_line(&mut line)?;
    if line.trim_end() != MAGIC {
        return Err(LoadError::Format);
    }
    line.clear();
    r.read_line(&mut line)?;
    let header: Header = serde_json::from_str(line.trim_end()).map_err(|_| LoadError::Format)?;
    if !header.fingerprint.fits(fingerprint, header.n_tokens) {
        return Err(LoadError::Mismatch(header.fingerprint));
    }
    if header.conversation != conversation {
        return Err(LoadError::OtherConversation);
    }
    let expected = header
        .n_tokens
        .checked_mul(4)
        .and_then(|n| n.checked_add(header.state_len))
        .ok_or(LoadError::Format)?;
    let mut payload = Vec::new();
    r.take(expected as u64 + 1).read_to_end(&mut payload)?;
    if payload.len() != expected || hex(&Sha256::digest(&payload)) != header.sha256 {
        return Err(LoadError::Checksum);
    }
    let (token_bytes, state) = payload.split_at(header.n_tokens * 4);
    let tokens = token_bytes
        .chunks_exact(4)
        .map(|c| LlamaToken(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
        .collect();
    Ok(SavedSeq {
        tokens,
        state: state.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_fits_the_same_model_with_room_for_its_tokens() {
        let saved = Fingerprint {
            model_file: "m.gguf".into(),
            model_size: 100,
            n_params: 7,
            n_ctx_seq: 1024,
        };
        let larger = Fingerprint {
            n_ctx_seq: 4096,
            ..saved.clone()
        };
        assert!(saved.fits(&saved, 500));
        assert!(saved.fits(&larger, 500));
        // Controls: too small a context, or another model.
        let smaller = Fingerprint {
            n_ctx_seq: 256,
            ..saved.clone()
        };
        assert!(!saved.fits(&smaller, 500));
        let other = Fingerprint {
            model_size: 101,
            ..larger.clone()
        };
        assert!(!saved.fits(&other, 500));
    }

    fn fp(n_ctx_seq: u32) -> Fingerprint {
        Fingerprint {
            model_file: "m.gguf".into(),
            model_size: 10,
            n_params: 5,
            n_ctx_seq,
        }
    }

    fn seq() -> SavedSeq {
        SavedSeq {
            tokens: vec![LlamaToken(1), LlamaToken(-2), LlamaToken(99_999)],
            state: (0..=255).collect(),
        }
    }

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(dir.path(), "telegram_1_1");
        save(&path, "telegram_1_1", &fp(4096), &seq()).unwrap();
        let back = load(&path, "telegram_1_1", &fp(4096)).unwrap();
        assert_eq!(back.tokens, seq().tokens);
        assert_eq!(back.state, seq().state);
    }

    #[test]
    fn refuses_foreign_or_damaged_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(dir.path(), "c");
        assert!(matches!(load(&path, "c", &fp(1)), Err(LoadError::Missing)));
        save(&path, "c", &fp(4096), &seq()).unwrap();
        // A context too small for the saved tokens.
        assert!(matches!(
            load(&path, "c", &fp(1)),
            Err(LoadError::Mismatch(_))
        ));
        assert!(matches!(
            load(&path, "d", &fp(4096)),
            Err(LoadError::OtherConversation)
        ));
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            load(&path, "c", &fp(4096)),
            Err(LoadError::Checksum)
        ));
        std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
        assert!(matches!(
            load(&path, "c", &fp(4096)),
            Err(LoadError::Checksum)
        ));
        std::fs::write(&path, b"garbage\n{").unwrap();
        assert!(matches!(
            load(&path, "c", &fp(4096)),
            Err(LoadError::Format)
        ));
    }
}
