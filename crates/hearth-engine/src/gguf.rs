//! A small reader for the metadata header of a GGUF file.
//!
//! hearth reads the header itself, before llama.cpp sees the file, for two
//! reasons: a file that is not GGUF or is cut short gets a clear error instead
//! of reaching llama.cpp (which may abort the process on bad input), and facts
//! such as the chat template and the training context are available to
//! `hearth doctor` and to tests without initialising a llama.cpp backend.
//!
//! Format (little endian): magic `GGUF`, u32 version (2 or 3), u64 tensor
//! count, u64 metadata count, then `count` key/value pairs. Only the metadata
//! is read; tensor data is left to llama.cpp.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum GgufValue {
    Int(i64),
    UInt(u64),
    Float(f64),
    Bool(bool),
    String(String),
    Array(Vec<GgufValue>),
}

/// The metadata of a GGUF file.
#[derive(Debug, Clone, Default)]
pub struct GgufMetadata {
    pub version: u32,
    pub tensor_count: u64,
    pub values: BTreeMap<String, GgufValue>,
}

#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("cannot read: {0}")]
    Io(#[from] io::Error),
    #[error("not a GGUF file (it does not start with the GGUF magic bytes)")]
    NotGguf,
    #[error("unsupported GGUF version {0}")]
    Version(u32),
    #[error("the file ends inside its metadata header (truncated)")]
    Truncated,
    #[error("corrupt metadata: {0}")]
    Corrupt(String),
}

/// Limits that keep a corrupt header from asking for absurd allocations.
const MAX_STRING: u64 = 64 << 20;
const MAX_ARRAY: u64 = 16 << 20;
const MAX_KEYS: u64 = 1 << 16;
/// Bytes the whole metadata may take in memory (strings, and 32 bytes a
/// value): a header of many large arrays cannot exhaust memory either.
const MAX_TOTAL: u64 = 512 << 20;

impl GgufMetadata {
    /// Reads the metadata of the GGUF file at `path`.
    pub fn read(path: &Path) -> Result<Self, GgufError> {
        let mut r = Reader {
            inner: BufReader::with_capacity(1 << 16, File::open(path)?),
            budget: MAX_TOTAL,
        };
        let mut magic = [0u8; 4];
        r.exact(&mut magic)?;
        if &magic != b"GGUF" {
            return Err(GgufError::NotGguf);
        }
        let version = r.u32()?;
        if !(2..=3).contains(&version) {
            return Err(GgufError::Version(version));
        }
        let tensor_count = r.u64()?;
        let kv_count = r.u64()?;
        if kv_count > MAX_KEYS {
            return Err(GgufError::Corrupt(format!("{kv_count} metadata keys")));
        }
        let mut values = BTreeMap::new();
        for _ in 0..kv_count {
            let key = r.string()?;
            let kind = r.u32()?;
            let value = r.value(kind)?;
            values.insert(key, value);
        }
        Ok(Self {
            version,
            tensor_count,
            values,
        })
    }

    pub fn string(&self, key: &str) -> Option<&str> {
        match self.values.get(key)? {
            GgufValue::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn uint(&self, key: &str) -> Option<u64> {
        match self.values.get(key)? {
            GgufValue::UInt(v) => Some(*v),
            GgufValue::Int(v) => u64::try_from(*v).ok(),
            _ => None,
        }
    }

    pub fn architecture(&self) -> Option<&str> {
        self.string("general.architecture")
    }

    /// The model's own chat template, if it ships one.
    pub fn chat_template(&self) -> Option<&str> {
        self.string("tokenizer.chat_template")
            .filter(|t| !t.trim().is_empty())
    }

    /// The template to render conversations with tools: the one the model
    /// names for tool use (`tokenizer.chat_template.tool_use`, as Hermes 3
    /// and Command R ship beside a default that ignores tools), else its
    /// own. hearth always offers tools.
    pub fn chat_template_for_tools(&self) -> Option<&str> {
        self.string("tokenizer.chat_template.tool_use")
            .filter(|t| !t.trim().is_empty())
            .or_else(|| self.chat_template())
    }

    /// The context length the model was trained with.
    pub fn context_length(&self) -> Option<u64> {
        self.uint(&format!("{}.context_length", self.architecture()?))
    }

    /// An architecture-scoped number, e.g. `block_count`.
    pub fn arch_uint(&self, key: &str) -> Option<u64> {
        let arch = self.architecture()?;
        match self.values.get(&format!("{arch}.{key}"))? {
            // Some models give one value per layer; the largest bounds them.
            GgufValue::Array(items) => items
                .iter()
                .filter_map(|v| match v {
                    GgufValue::UInt(u) => Some(*u),
                    GgufValue::Int(i) => u64::try_from(*i).ok(),
                    _ => None,
                })
                .max(),
            _ => self.uint(&format!("{arch}.{key}")),
        }
    }

    /// Bytes of f16 KV cache one token takes: layers × (K and V) × KV heads
    /// × head size × 2 bytes.
    pub fn kv_bytes_per_token(&self) -> Option<u64> {
        let layers = self.arch_uint("block_count")?;
        let heads = self.arch_uint("attention.head_count")?.max(1);
        let kv_heads = self.arch_uint("attention.head_count_kv").unwrap_or(heads);
        let head_dim = match self.arch_uint("attention.key_length") {
            Some(d) => d,
            None => self.arch_uint("embedding_length")? / heads,
        };
        // A hostile header's numbers must not overflow: no answer instead.
        layers
            .checked_mul(4)?
            .checked_mul(kv_heads)?
            .checked_mul(head_dim)
    }

    /// The text of a token named by a `tokenizer.ggml.*_token_id` key.
    pub fn token_text(&self, id_key: &str) -> Option<&str> {
        let id = usize::try_from(self.uint(id_key)?).ok()?;
        match self.values.get("tokenizer.ggml.tokens")? {
            GgufValue::Array(tokens) => match tokens.get(id)? {
                GgufValue::String(s) => Some(s),
                _ => None,
            },
            _ => None,
        }
    }
}

struct Reader<R> {
    inner: R,
    /// Bytes of metadata still allowed in memory.
    budget: u64,
}

impl<R: Read> Reader<R> {
    /// Takes `bytes` from the budget, or fails when the header asks for
    /// more than it allows.
    fn spend(&mut self, bytes: u64) -> Result<(), GgufError> {
        self.budget = self.budget.checked_sub(bytes).ok_or_else(|| {
            GgufError::Corrupt(format!("metadata larger than {} MiB", MAX_TOTAL >> 20))
        })?;
        Ok(())
    }

    fn exact(&mut self, buf: &mut [u8]) -> Result<(), GgufError> {
        self.inner.read_exact(buf).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => GgufError::Truncated,
            _ => GgufError::Io(e),
        })
    }

    fn bytes<const N: usize>(&mut self) -> Result<[u8; N], GgufError> {
        let mut b = [0u8; N];
        self.exact(&mut b)?;
        Ok(b)
    }

    fn u32(&mut self) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }

    fn u64(&mut self) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.bytes()?))
    }

    fn string(&mut self) -> Result<String, GgufError> {
        let len = self.u64()?;
        if len > MAX_STRING {
            return Err(GgufError::Corrupt(format!("string of {len} bytes")));
        }
        self.spend(len)?;
        let mut buf = vec![0u8; len as usize];
        self.exact(&mut buf)?;
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    fn value(&mut self, kind: u32) -> Result<GgufValue, GgufError> {
        self.spend(32)?;
        Ok(match kind {
            0 => GgufValue::UInt(u8::from_le_bytes(self.bytes()?).into()),
            1 => GgufValue::Int(i8::from_le_bytes(self.bytes()?).into()),
            2 => GgufValue::UInt(u16::from_le_bytes(self.bytes()?).into()),
            3 => GgufValue::Int(i16::from_le_bytes(self.bytes()?).into()),
            4 => GgufValue::UInt(self.u32()?.into()),
            5 => GgufValue::Int(i32::from_le_bytes(self.bytes()?).into()),
            6 => GgufValue::Float(f32::from_le_bytes(self.bytes()?).into()),
            7 => GgufValue::Bool(self.bytes::<1>()?[0] != 0),
            8 => GgufValue::String(self.string()?),
            9 => {
                let item_kind = self.u32()?;
                let len = self.u64()?;
                if len > MAX_ARRAY || item_kind == 9 {
                    return Err(GgufError::Corrupt(format!(
                        "array of {len} items of type {item_kind}"
                    )));
                }
                let mut items = Vec::with_capacity(len.min(1 << 16) as usize);
                for _ in 0..len {
                    items.push(self.value(item_kind)?);
                }
                GgufValue::Array(items)
            }
            10 => GgufValue::UInt(self.u64()?),
            11 => GgufValue::Int(i64::from_le_bytes(self.bytes()?)),
            12 => GgufValue::Float(f64::from_le_bytes(self.bytes()?)),
            other => return Err(GgufError::Corrupt(format!("unknown value type {other}"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn header(kvs: &[(&str, u32, Vec<u8>)]) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend(0u64.to_le_bytes());
        out.extend((kvs.len() as u64).to_le_bytes());
        for (k, kind, v) in kvs {
            out.extend((k.len() as u64).to_le_bytes());
            out.extend(k.as_bytes());
            out.extend(kind.to_le_bytes());
            out.extend(v);
        }
        out
    }

    fn gguf_string(s: &str) -> Vec<u8> {
        let mut v = (s.len() as u64).to_le_bytes().to_vec();
        v.extend(s.as_bytes());
        v
    }

    fn write(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    #[test]
    fn reads_strings_and_numbers() {
        let f = write(&header(&[
            ("general.architecture", 8, gguf_string("llama")),
            ("llama.context_length", 4, 8192u32.to_le_bytes().to_vec()),
            ("tokenizer.chat_template", 8, gguf_string("{{ x }}")),
        ]));
        let m = GgufMetadata::read(f.path()).unwrap();
        assert_eq!(m.architecture(), Some("llama"));
        assert_eq!(m.context_length(), Some(8192));
        assert_eq!(m.chat_template(), Some("{{ x }}"));
        assert_eq!(m.chat_template_for_tools(), Some("{{ x }}"));
    }

    #[test]
    fn a_tool_use_template_is_preferred_for_tools() {
        let f = write(&header(&[
            ("tokenizer.chat_template", 8, gguf_string("{{ plain }}")),
            (
                "tokenizer.chat_template.tool_use",
                8,
                gguf_string("{{ tools }}"),
            ),
        ]));
        let m = GgufMetadata::read(f.path()).unwrap();
        assert_eq!(m.chat_template(), Some("{{ plain }}"));
        assert_eq!(m.chat_template_for_tools(), Some("{{ tools }}"));
    }

    #[test]
    fn hostile_numbers_and_sizes_fail_cleanly() {
        let u32v = |v: u32| v.to_le_bytes().to_vec();
        let meta = |kvs: &[(&str, u32, Vec<u8>)]| GgufMetadata::read(write(&header(kvs)).path());
        // Overflowing KV arithmetic, and zero heads: no answer, no panic.
        let m = meta(&[
            ("general.architecture", 8, gguf_string("llama")),
            ("llama.block_count", 10, u64::MAX.to_le_bytes().to_vec()),
            ("llama.attention.head_count", 4, u32v(0)),
            ("llama.embedding_length", 4, u32v(4096)),
        ])
        .unwrap();
        assert_eq!(m.kv_bytes_per_token(), None);
        // Two arrays of 9 M one-byte items: small on disk, over the budget
        // once in memory.
        let mut array = 0u32.to_le_bytes().to_vec();
        array.extend((9u64 << 20).to_le_bytes());
        array.extend(vec![1u8; 9 << 20]);
        let e = meta(&[("a", 9, array.clone()), ("b", 9, array)]).unwrap_err();
        assert!(e.to_string().contains("metadata larger than"), "{e}");
    }

    #[test]
    fn rejects_bad_files_without_panicking() {
        assert!(matches!(
            GgufMetadata::read(write(b"PK\x03\x04zip").path()),
            Err(GgufError::NotGguf)
        ));
        assert!(matches!(
            GgufMetadata::read(write(b"GG").path()),
            Err(GgufError::Truncated)
        ));
        let full = header(&[("general.architecture", 8, gguf_string("llama"))]);
        for cut in 4..full.len() {
            assert!(
                GgufMetadata::read(write(&full[..cut]).path()).is_err(),
                "cut at {cut}"
            );
        }
        let mut huge = header(&[]);
        huge[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            GgufMetadata::read(write(&huge).path()),
            Err(GgufError::Corrupt(_))
        ));
    }
}
