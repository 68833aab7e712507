//! Embeddings from the loaded model: each text read whole by a small
//! context of its own (mean-pooled, L2-normalised, as llama-server's
//! `/v1/embeddings` gives them), made on the engine thread the first time
//! one is asked for. It runs between decode steps, under the same
//! one-at-a-time rule as every other decode, and never touches the
//! conversations' KV cache.

use std::num::NonZeroU32;
use std::sync::mpsc as std_mpsc;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::{LlamaContextParams, LlamaPoolingType};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;

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
}

impl<'m> Embedder<'m> {
    pub fn new(backend: &'m LlamaBackend, model: &'m LlamaModel, threads: i32) -> Self {
        Self {
            backend,
            model,
            threads,
            ctx: None,
        }
    }

    pub fn serve(&mut self, job: EmbedJob) {
        let _ = job.answer.send(self.embed(&job.inputs, &job.cancel));
    }

    fn context(&mut self) -> Result<&mut LlamaContext<'m>, ProviderError> {
        if self.ctx.is_none() {
            let n = MAX_TOKENS as u32;
            let params = LlamaContextParams::default()
                .with_n_ctx(NonZeroU32::new(n))
                .with_n_batch(n)
                .with_n_ubatch(n)
                .with_n_seq_max(1)
                .with_n_threads(self.threads)
                .with_n_threads_batch(self.threads)
                .with_embeddings(true)
                .with_pooling_type(LlamaPoolingType::Mean);
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
        let model = self.model;
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
            // The model's own start token, and message text as text only.
            let tokens = model.vocab().tokenize(input.as_bytes(), true, false);
            if tokens.is_empty() || tokens.len() > MAX_TOKENS {
                return Err(ProviderError::InvalidRequest(format!(
                    "input {i} takes {} tokens; each input must take 1 to {MAX_TOKENS}",
                    tokens.len()
                )));
            }
            total += tokens.len() as u32;
            let ctx = self.context()?;
            ctx.clear_kv_cache();
            let mut batch = LlamaBatch::new(tokens.len(), 1);
            batch
                .add_sequence(&tokens, 0, true)
                .map_err(|e| ProviderError::Failed(format!("embedding batch: {e}")))?;
            ctx.decode(&mut batch)
                .map_err(|e| ProviderError::Failed(format!("embedding decode failed: {e}")))?;
            let pooled = ctx
                .embeddings_seq_ith(0)
                .map_err(|e| ProviderError::Failed(format!("no embedding came back: {e}")))?;
            vectors.push(normalised(pooled));
        }
        Ok((vectors, total))
    }
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
}
