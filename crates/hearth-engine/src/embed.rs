//! Embeddings: each text read whole by a small context of its own
//! (pooled, L2-normalised, as llama-server's `/v1/embeddings` gives them),
//! made the first time one is asked for.
//!
//! For the chat model it runs on the engine thread between decode steps
//! (mean-pooled, under the same one-at-a-time rule as every other decode,
//! never touching the conversations' KV cache). For a sentence-embedding
//! model ([`super::embedding_model`]) it uses the file's own pooling and
//! its trained length: a longer text is read in pieces that fit, and their
//! vectors averaged.

use std::num::NonZeroU32;
use std::sync::mpsc as std_mpsc;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::{LlamaContextParams, LlamaPoolingType};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use hearth_core::chat::ProviderError;
use tokio_util::sync::CancellationToken;

/// The most tokens one input may take.
pub const MAX_TOKENS: usize = 2048;

/// Vectors, one per input, and the tokens they took.
pub type Embedding = Result<(Vec<Vec<f32>>, u32), ProviderError>;

/// One request for embeddings.
pub struct EmbedJob {
    pub inputs: Vec<String>,
    pub answer: std_mpsc::SyncSender<Embedding>,
    /// Cancelled when the asker is gone: no input is read after that.
    pub cancel: CancellationToken,
}

/// The engine thread's embedding context, made when first needed.
pub struct Embedder<'m> {
    backend: &'m LlamaBackend,
    model: &'m LlamaModel,
    threads: i32,
    ctx: Option<LlamaContext<'m>>,
    pooling: LlamaPoolingType,
    /// The most tokens one read takes.
    cap: usize,
    /// Whether a longer text is read in pieces (else refused).
    pieces: bool,
}

impl<'m> Embedder<'m> {
    /// The chat model's mean-pooled states, one input of up to
    /// [`MAX_TOKENS`] at a time.
    pub fn new(backend: &'m LlamaBackend, model: &'m LlamaModel, threads: i32) -> Self {
        Self {
            backend,
            model,
            threads,
            ctx: None,
            pooling: LlamaPoolingType::Mean,
            cap: MAX_TOKENS,
            pieces: false,
        }
    }

    /// A sentence-embedding model: its own pooling (mean where the file
    /// names none), its trained length, longer texts read in pieces.
    pub fn own_pooling(backend: &'m LlamaBackend, model: &'m LlamaModel, threads: i32) -> Self {
        let arch = model
            .meta_val_str("general.architecture")
            .unwrap_or_default();
        let named = model
            .meta_val_str(&format!("{arch}.pooling_type"))
            .is_ok_and(|p| p.trim() != "0");
        let trained = usize::try_from(model.n_ctx_train()).unwrap_or(MAX_TOKENS);
        Self {
            pooling: if named {
                LlamaPoolingType::Unspecified
            } else {
                LlamaPoolingType::Mean
            },
            cap: trained.clamp(16, MAX_TOKENS),
            pieces: true,
            ..Self::new(backend, model, threads)
        }
    }

    /// The length of the vectors this model makes.
    pub fn dimensions(&self) -> usize {
        usize::try_from(self.model.n_embd_out()).unwrap_or(0)
    }

    pub fn serve(&mut self, job: EmbedJob) {
        let _ = job.answer.send(self.embed(&job.inputs, &job.cancel));
    }

    fn context(&mut self) -> Result<&mut LlamaContext<'m>, ProviderError> {
        if self.ctx.is_none() {
            let n = self.cap as u32;
            let params = LlamaContextParams::default()
                .with_n_ctx(NonZeroU32::new(n))
                .with_n_batch(n)
                .with_n_ubatch(n)
                .with_n_seq_max(1)
                .with_n_threads(self.threads)
                .with_n_threads_batch(self.threads)
                .with_embeddings(true)
                .with_pooling_type(self.pooling);
            let ctx = self.model.new_context(self.backend, params).map_err(|e| {
                ProviderError::Failed(format!("cannot make a context for embeddings: {e}"))
            })?;
            self.ctx = Some(ctx);
        }
        self.ctx
            .as_mut()
            .ok_or_else(|| ProviderError::Failed("no embedding context".into()))
    }

    fn embed(&mut self, inputs: &[String], cancel: &CancellationToken) -> Embedding {
        let mut vectors = Vec::with_capacity(inputs.len());
        let mut total = 0u32;
        for (i, input) in inputs.iter().enumerate() {
            if cancel.is_cancelled() {
                tracing::info!(
                    done = i,
                    of = inputs.len(),
                    "embeddings stopped: the asker is gone"
                );
                return Err(ProviderError::Failed("the asker is gone".into()));
            }
            let pieces = self.pieces_of(input).map_err(|tokens| {
                ProviderError::InvalidRequest(format!(
                    "input {i} takes {tokens} tokens; each input must take 1 to {}",
                    self.cap
                ))
            })?;
            let mut sum: Vec<f32> = Vec::new();
            for tokens in &pieces {
                total += tokens.len() as u32;
                let pooled = self.read(tokens)?;
                if sum.is_empty() {
                    sum = pooled;
                } else {
                    sum.iter_mut().zip(pooled).for_each(|(s, v)| *s += v);
                }
            }
            vectors.push(normalised(&sum));
        }
        Ok((vectors, total))
    }

    /// The tokens of `input`, in reads that each fit the cap (a single read
    /// unless this model reads pieces); the token count when it cannot be
    /// read.
    fn pieces_of(&self, input: &str) -> Result<Vec<Vec<LlamaToken>>, usize> {
        // The model's own start token, and message text as text only.
        let tokens = self.model.vocab().tokenize(input.as_bytes(), true, false);
        if tokens.is_empty() {
            return Err(0);
        }
        if tokens.len() <= self.cap {
            return Ok(vec![tokens]);
        }
        if !self.pieces {
            return Err(tokens.len());
        }
        let Some((left, right)) = halves(input) else {
            return Err(tokens.len());
        };
        let mut all = self.pieces_of(left)?;
        all.extend(self.pieces_of(right)?);
        Ok(all)
    }

    /// One read of `tokens`: the pooled vector.
    fn read(&mut self, tokens: &[LlamaToken]) -> Result<Vec<f32>, ProviderError> {
        let ctx = self.context()?;
        ctx.clear_kv_cache();
        let mut batch = LlamaBatch::new(tokens.len(), 1);
        batch
            .add_sequence(tokens, 0, true)
            .map_err(|e| ProviderError::Failed(format!("embedding batch: {e}")))?;
        ctx.decode(&mut batch)
            .map_err(|e| ProviderError::Failed(format!("embedding decode failed: {e}")))?;
        let pooled = ctx
            .embeddings_seq_ith(0)
            .map_err(|e| ProviderError::Failed(format!("no embedding came back: {e}")))?;
        Ok(pooled.to_vec())
    }
}

/// `text` cut in two at the whitespace nearest its middle (at the middle
/// character when it has none); `None` when it cannot be cut.
fn halves(text: &str) -> Option<(&str, &str)> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    if chars.len() < 2 {
        return None;
    }
    let middle = chars.len() / 2;
    let at = (0..middle)
        .flat_map(|d| [middle + d, middle - d])
        .find(|&i| i > 0 && i < chars.len() && chars[i].1.is_whitespace())
        .unwrap_or(middle);
    let byte = chars[at].0;
    Some((&text[..byte], &text[byte..]))
}

/// `v` scaled to length 1 (a zero vector stays zero).
fn normalised(v: &[f32]) -> Vec<f32> {
    let norm = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if norm == 0.0 {
        return v.to_vec();
    }
    v.iter().map(|x| (f64::from(*x) / norm) as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_come_back_with_length_one() {
        let v = normalised(&[3.0, 4.0]);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        assert_eq!(normalised(&[0.0, 0.0]), vec![0.0, 0.0]);
    }

    #[test]
    fn a_long_text_is_cut_at_a_space_near_its_middle() {
        assert_eq!(
            halves("one two three four"),
            Some(("one two", " three four"))
        );
        assert_eq!(halves("abcd"), Some(("ab", "cd")));
        assert_eq!(halves("é"), None);
        let (a, b) = halves("ééééé").unwrap();
        assert_eq!(format!("{a}{b}"), "ééééé");
    }
}
