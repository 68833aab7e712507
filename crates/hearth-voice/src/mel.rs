//! Whisper's input: the log-mel spectrogram of 30-second windows, as the
//! model was trained on it (OpenAI's `log_mel_spectrogram`): a periodic
//! Hann window of 400 samples every 160, centred with reflected edges; the
//! power spectrum through 80 Slaney mel filters; log10, floored 8 below the
//! window's peak, scaled by (x + 4) / 4. A window is padded with silence,
//! which is what the model expects after speech ends.

use std::f64::consts::PI;
use std::sync::Arc;

use rustfft::num_complex::Complex;

/// Samples per window (30 s at 16 kHz).
pub const WINDOW: usize = 480_000;
/// Frames per window.
pub const FRAMES: usize = 3_000;
const N_FFT: usize = 400;
const HOP: usize = 160;
const BINS: usize = N_FFT / 2 + 1;

/// Computes spectrograms for one number of mel bands.
pub struct Mel {
    n_mels: usize,
    filters: Vec<f32>,
    hann: Vec<f32>,
    fft: Arc<dyn rustfft::Fft<f32>>,
}

impl Mel {
    pub fn new(n_mels: usize) -> Self {
        let hann = (0..N_FFT)
            .map(|i| (0.5 - 0.5 * (2.0 * PI * i as f64 / N_FFT as f64).cos()) as f32)
            .collect();
        Self {
            n_mels,
            filters: filters(n_mels),
            hann,
            fft: rustfft::FftPlanner::new().plan_fft_forward(N_FFT),
        }
    }

    pub fn n_mels(&self) -> usize {
        self.n_mels
    }

    /// The features of each 30-second window of `samples`, one after the
    /// other: `[windows][n_mels][FRAMES]`, flattened; and the window count.
    pub fn windows(&self, samples: &[f32]) -> (Vec<f32>, usize) {
        let mut out = Vec::new();
        let mut count = 0;
        for chunk in samples.chunks(WINDOW) {
            let mut padded = chunk.to_vec();
            padded.resize(WINDOW, 0.0);
            out.extend(self.window(&padded));
            count += 1;
        }
        (out, count)
    }

    /// One window of exactly [`WINDOW`] samples: `n_mels × FRAMES` values.
    fn window(&self, samples: &[f32]) -> Vec<f32> {
        let half = N_FFT / 2;
        // Centred frames: the signal reflected at both edges.
        let reflect = |i: isize| -> f32 {
            let n = samples.len() as isize;
            let j = if i < 0 {
                -i
            } else if i >= n {
                2 * (n - 1) - i
            } else {
                i
            };
            samples[j.clamp(0, n - 1) as usize]
        };
        let mut log = vec![0f32; self.n_mels * FRAMES];
        let mut buffer = vec![Complex::new(0f32, 0f32); N_FFT];
        let mut power = vec![0f32; BINS];
        for frame in 0..FRAMES {
            let start = (frame * HOP) as isize - half as isize;
            for (k, slot) in buffer.iter_mut().enumerate() {
                *slot = Complex::new(reflect(start + k as isize) * self.hann[k], 0.0);
            }
            self.fft.process(&mut buffer);
            for (p, c) in power.iter_mut().zip(&buffer) {
                *p = c.norm_sqr();
            }
            for m in 0..self.n_mels {
                let row = &self.filters[m * BINS..(m + 1) * BINS];
                let energy: f32 = row.iter().zip(&power).map(|(w, p)| w * p).sum();
                log[m * FRAMES + frame] = energy.max(1e-10).log10();
            }
        }
        let peak = log.iter().copied().fold(f32::MIN, f32::max);
        for v in &mut log {
            *v = (v.max(peak - 8.0) + 4.0) / 4.0;
        }
        log
    }
}

/// Slaney's mel scale (linear below 1 kHz, logarithmic above).
fn hz_to_mel(hz: f64) -> f64 {
    let (f_sp, min_log_hz) = (200.0 / 3.0, 1000.0);
    let min_log_mel = min_log_hz / f_sp;
    if hz < min_log_hz {
        hz / f_sp
    } else {
        min_log_mel + (hz / min_log_hz).ln() / (6.4f64.ln() / 27.0)
    }
}

fn mel_to_hz(mel: f64) -> f64 {
    let (f_sp, min_log_hz) = (200.0 / 3.0, 1000.0);
    let min_log_mel = min_log_hz / f_sp;
    if mel < min_log_mel {
        mel * f_sp
    } else {
        min_log_hz * ((mel - min_log_mel) * (6.4f64.ln() / 27.0)).exp()
    }
}

/// Triangular filters from 0 to 8 kHz, area-normalised (Slaney), as
/// `n_mels × BINS` weights.
fn filters(n_mels: usize) -> Vec<f32> {
    let (low, high) = (hz_to_mel(0.0), hz_to_mel(8_000.0));
    let points: Vec<f64> = (0..n_mels + 2)
        .map(|i| mel_to_hz(low + (high - low) * i as f64 / (n_mels + 1) as f64))
        .collect();
    let freq = |bin: usize| bin as f64 * 8_000.0 / (BINS - 1) as f64;
    let mut out = vec![0f32; n_mels * BINS];
    for m in 0..n_mels {
        let (left, centre, right) = (points[m], points[m + 1], points[m + 2]);
        let norm = 2.0 / (right - left);
        for bin in 0..BINS {
            let f = freq(bin);
            let rising = (f - left) / (centre - left);
            let falling = (right - f) / (right - centre);
            out[m * BINS + bin] = (rising.min(falling).max(0.0) * norm) as f32;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tone_lights_its_own_band_and_silence_is_the_floor() {
        let mel = Mel::new(80);
        // One second of 1 kHz, then silence to the end of the window.
        let tone: Vec<f32> = (0..16_000)
            .map(|i| 0.5 * (i as f32 * 1000.0 * std::f32::consts::TAU / 16_000.0).sin())
            .collect();
        let (features, windows) = mel.windows(&tone);
        assert_eq!((windows, features.len()), (1, 80 * FRAMES));
        let at = |m: usize, frame: usize| features[m * FRAMES + frame];
        // 1 kHz is mel 15: the band whose centre is nearest it.
        let loudest = (0..80)
            .max_by(|&a, &b| at(a, 50).total_cmp(&at(b, 50)))
            .unwrap_or_default();
        let centre = |m: usize| mel_to_hz(hz_to_mel(8_000.0) * (m + 1) as f64 / 81.0);
        assert!((centre(loudest) - 1000.0).abs() < 60.0, "band {loudest}");
        // After the tone: the floor, 8 below the peak, scaled: the peak minus 2.
        let peak = features.iter().copied().fold(f32::MIN, f32::max);
        assert!((at(40, 2_000) - (peak - 2.0)).abs() < 1e-4);
        // Two windows for 31 seconds.
        assert_eq!(mel.windows(&vec![0.0; WINDOW + 16_000]).1, 2);
    }
}
