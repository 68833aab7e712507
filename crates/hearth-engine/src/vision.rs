//! Pictures in prompts, through llama.cpp's `mtmd` and a model's projector.
//!
//! The rendered prompt holds a marker where each image goes; the text
//! between markers is tokenised as usual and each image becomes a
//! [`Picture`]: its embeddings' length in the sequence, and a run of
//! stand-in token ids of that length. The stand-ins are negative (no real
//! token is) and derived from the image's SHA-256 and their place in the
//! run, so the prompt cache, prefix sharing, eviction to RAM or disk and a
//! restart treat an image like any other run of tokens: the same picture in
//! the same place is found cached and never encoded again. The batcher
//! never puts a stand-in into a batch; it has [`Vision::show`] decode the
//! picture's embeddings at its place instead.

use std::path::Path;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::mtmd::{
    MtmdBitmap, MtmdContext, MtmdContextParams, MtmdInputChunks, MtmdInputText, mtmd_default_marker,
};
use llama_cpp_2::token::LlamaToken;
use sha2::{Digest, Sha256};

use super::EngineError;
use super::cache::SeqCache;
use hearth_core::chat::{Image, ProviderError};

/// Limits checked before an image is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageLimits {
    /// Most bytes of one image file.
    pub max_bytes: usize,
    /// Most pixels (width × height) its header may declare.
    pub max_pixels: u64,
    /// Most images in one message.
    pub per_message: usize,
}

impl Default for ImageLimits {
    fn default() -> Self {
        Self {
            max_bytes: 20 << 20,
            max_pixels: 40_000_000,
            per_message: 4,
        }
    }
}

/// A projector loaded beside the text model.
pub(super) struct Vision {
    ctx: MtmdContext,
    limits: ImageLimits,
    /// The tokens each image seen lately takes, by its SHA-256: a picture a
    /// conversation sends again (every resent turn does) is laid out without
    /// being decoded, and decoded only if the cache no longer holds it.
    sizes: std::cell::RefCell<std::collections::HashMap<[u8; 32], usize>>,
}

/// Most images whose size is remembered.
const SIZES_KEPT: usize = 1024;

/// One image of a prompt, ready to be decoded into a sequence.
pub(super) struct Picture {
    /// Where its run starts in the prompt's tokens.
    pub at: usize,
    /// Its stand-in tokens (as many as the positions it takes).
    pub run: Vec<LlamaToken>,
    /// Its projector input, once made.
    chunks: Option<MtmdInputChunks>,
    image: Image,
}

impl Picture {
    pub fn end(&self) -> usize {
        self.at + self.run.len()
    }
}

impl Vision {
    /// Loads the projector at `path` for `model`. A projector whose images
    /// take other positions than tokens (M-RoPE: the Qwen2-VL family) is
    /// refused: the cache counts one position per token.
    pub(super) fn load(
        path: &Path,
        model: &LlamaModel,
        threads: i32,
        use_gpu: bool,
        limits: ImageLimits,
    ) -> Result<Self, EngineError> {
        let refused = |reason: String| EngineError::Projector {
            path: path.to_path_buf(),
            reason,
        };
        if !path.is_file() {
            return Err(refused("no such file".into()));
        }
        let params = MtmdContextParams {
            use_gpu,
            print_timings: false,
            n_threads: threads,
            ..MtmdContextParams::default()
        };
        let ctx =
            MtmdContext::init_from_file(&path.to_string_lossy(), model, &params).map_err(|e| {
                refused(format!(
                    "llama.cpp could not load it ({e}); is it the projector made for this model?"
                ))
            })?;
        if !ctx.support_vision() {
            return Err(refused("it has no vision encoder".into()));
        }
        if ctx.decode_use_mrope() {
            return Err(refused(
                "its images use M-RoPE positions (the Qwen2-VL family), which hearth does not support yet"
                    .into(),
            ));
        }
        Ok(Self {
            ctx,
            limits,
            sizes: Default::default(),
        })
    }

    /// Turns `image` into a picture placed at token `at`. An image seen
    /// lately is only checked against the limits here; one new to this
    /// engine is decoded now, to learn how many tokens it takes.
    pub(super) fn picture(&self, image: &Image, at: usize) -> Result<Picture, ProviderError> {
        self.check(image)?;
        let digest: [u8; 32] = Sha256::digest(&image.bytes[..]).into();
        let known = self.sizes.borrow().get(&digest).copied();
        let (n, chunks) = match known {
            Some(n) => (n, None),
            None => {
                let chunks = self.chunks(image)?;
                let n = chunks.total_tokens();
                let mut sizes = self.sizes.borrow_mut();
                if sizes.len() >= SIZES_KEPT {
                    sizes.clear();
                }
                sizes.insert(digest, n);
                (n, Some(chunks))
            }
        };
        Ok(Picture {
            at,
            run: stand_ins(&digest, n),
            chunks,
            image: image.clone(),
        })
    }

    /// The projector's input for `image`: decoded, then tokenised by mtmd.
    fn chunks(&self, image: &Image) -> Result<MtmdInputChunks, ProviderError> {
        let bitmap = self.decode(image)?;
        let text = MtmdInputText {
            text: mtmd_default_marker().to_string(),
            add_special: false,
            parse_special: true,
        };
        let chunks = self.ctx.tokenize(text, &[&bitmap]).map_err(|e| {
            ProviderError::InvalidRequest(format!("the image could not be prepared: {e}"))
        })?;
        let n = chunks.total_tokens();
        if n == 0 || chunks.total_positions() as usize != n {
            return Err(ProviderError::Failed(format!(
                "the projector made {n} tokens in {} positions; hearth needs one each",
                chunks.total_positions()
            )));
        }
        Ok(chunks)
    }

    /// Refuses an image over the limits before anything decodes it.
    fn check(&self, image: &Image) -> Result<(), ProviderError> {
        let limits = self.limits;
        if image.len() > limits.max_bytes {
            return Err(ProviderError::InvalidRequest(format!(
                "the image is {} bytes, over the limit of {} (`[model] image_max_mb`)",
                image.len(),
                limits.max_bytes
            )));
        }
        match super::image_size::dimensions(&image.bytes) {
            Some((w, h)) if u64::from(w) * u64::from(h) > limits.max_pixels => {
                Err(ProviderError::InvalidRequest(format!(
                    "the image is {w}×{h} pixels, over the limit of {} (`[model] image_max_pixels`)",
                    limits.max_pixels
                )))
            }
            Some((0, _) | (_, 0)) => Err(ProviderError::InvalidRequest(
                "the image has no pixels".into(),
            )),
            Some(_) => Ok(()),
            None => Err(ProviderError::InvalidRequest(
                "the image could not be read: not a PNG, JPEG, GIF, BMP or WebP file".into(),
            )),
        }
    }

    /// Decodes the image here, in Rust, within the limits: mtmd's own
    /// helper would hand bytes it cannot read as a picture to an audio
    /// decoder and to `ffmpeg` (its video support), outside the sandbox.
    fn decode(&self, image: &Image) -> Result<MtmdBitmap, ProviderError> {
        let damaged = |e: &dyn std::fmt::Display| {
            ProviderError::InvalidRequest(format!(
                "the image could not be read: it is damaged or not a PNG, JPEG, GIF, BMP or WebP file ({e})"
            ))
        };
        let mut reader = image::ImageReader::new(std::io::Cursor::new(&image.bytes[..]))
            .with_guessed_format()
            .map_err(|e| damaged(&e))?;
        let mut limits = image::Limits::default();
        let side = u32::try_from(self.limits.max_pixels).unwrap_or(u32::MAX);
        limits.max_image_width = Some(side);
        limits.max_image_height = Some(side);
        limits.max_alloc = Some(self.limits.max_pixels.saturating_mul(4).max(1 << 20));
        reader.limits(limits);
        let rgb = reader.decode().map_err(|e| damaged(&e))?.into_rgb8();
        let (width, height) = rgb.dimensions();
        if u64::from(width) * u64::from(height) > self.limits.max_pixels {
            return Err(ProviderError::InvalidRequest(format!(
                "the image is {width}×{height} pixels, over the limit of {} (`[model] image_max_pixels`)",
                self.limits.max_pixels
            )));
        }
        MtmdBitmap::from_image_data(width, height, rgb.as_raw()).map_err(|e| {
            ProviderError::Failed(format!("the image could not be handed to llama.cpp: {e}"))
        })
    }

    pub(super) fn per_message(&self) -> usize {
        self.limits.per_message
    }

    /// Decodes `picture`'s embeddings into sequence `seq` at its place.
    pub(super) fn show(
        &mut self,
        ctx: &mut LlamaContext<'_>,
        picture: &Picture,
        seq: usize,
        n_batch: usize,
    ) -> Result<(), ProviderError> {
        let made;
        let chunks = match &picture.chunks {
            Some(chunks) => chunks,
            None => {
                made = self.chunks(&picture.image)?;
                if made.total_tokens() != picture.run.len() {
                    return Err(ProviderError::Failed(
                        "the image takes another number of tokens than before".into(),
                    ));
                }
                &made
            }
        };
        chunks
            .eval_chunks(
                &mut self.ctx,
                ctx,
                picture.at as i32,
                seq as i32,
                n_batch as i32,
                false,
            )
            .map(|_| ())
            .map_err(|e| {
                ProviderError::Failed(format!("llama.cpp could not decode the image: {e}"))
            })
    }
}

/// Cuts a sequence that holds part of a picture back to where the picture
/// starts (a picture is decoded whole), and drops the pictures it holds
/// whole. Returns how many tokens are kept.
pub(super) fn whole_pictures(
    ctx: &mut LlamaContext<'_>,
    cache: &mut SeqCache,
    seq: usize,
    pictures: &mut Vec<Picture>,
    kept: usize,
) -> usize {
    let covered = cache.tokens_mut(seq).len();
    let cut = pictures
        .iter()
        .find(|p| p.at < covered && covered < p.end())
        .map(|p| p.at);
    let covered = match cut {
        None => covered,
        Some(at) => {
            tracing::debug!(
                seq,
                at,
                "the cache held part of a picture; it is decoded again whole"
            );
            if !ctx
                .clear_kv_cache_seq(Some(seq as u32), Some(at as u32), None)
                .unwrap_or(false)
            {
                cache.forget(ctx, seq);
            }
            let cached = cache.tokens_mut(seq);
            cached.truncate(at);
            cached.len()
        }
    };
    pictures.retain(|p| p.at >= covered);
    kept.min(covered)
}

/// A marker no message can contain.
pub(super) fn image_marker() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::process::id().into());
    format!("<hearth-image-{:016x}>", h.finish())
}

/// `n` stand-in tokens for the image of `digest`: negative, and each
/// derived from the digest and its place, so two runs are equal only for
/// the same image.
fn stand_ins(digest: &[u8; 32], n: usize) -> Vec<LlamaToken> {
    (0..n as u64)
        .map(|i| {
            let mut h = Sha256::new();
            h.update(digest);
            h.update(i.to_le_bytes());
            let d = h.finalize();
            let v = (u32::from_le_bytes([d[0], d[1], d[2], d[3]]) & 0x7fff_ffff) as i32;
            // -1 ..= -2^31: never a real token id.
            LlamaToken(-1 - v)
        })
        .collect()
}

/// Whether `token` stands in for part of an image.
pub(crate) fn is_stand_in(token: LlamaToken) -> bool {
    token.0 < 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stand_ins_are_negative_and_differ_between_images_and_places() {
        let a = stand_ins(&[1; 32], 64);
        let b = stand_ins(&[2; 32], 64);
        assert!(a.iter().chain(&b).all(|&t| is_stand_in(t)));
        assert_eq!(a, stand_ins(&[1; 32], 64), "the same image, the same run");
        assert_ne!(a, b);
        let distinct: std::collections::HashSet<_> = a.iter().map(|t| t.0).collect();
        assert_eq!(distinct.len(), 64, "no two places alike");
        assert!(!is_stand_in(LlamaToken(0)));
    }
}
