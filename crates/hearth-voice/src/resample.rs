//! Samples at any rate to [`SAMPLE_RATE`](crate::SAMPLE_RATE): each output
//! sample is the mean of the input samples its span covers (a box filter,
//! which keeps speech intelligible and aliasing low enough for Whisper),
//! or an interpolation where the input is slower than the output.

/// `samples` at `from` Hz, at `to` Hz.
pub fn resample(samples: &[f32], from: u32, to: u32) -> Vec<f32> {
    if from == to || samples.is_empty() || from == 0 {
        return samples.to_vec();
    }
    let ratio = f64::from(from) / f64::from(to);
    let n = ((samples.len() as f64) / ratio).floor() as usize;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let start = i as f64 * ratio;
        if ratio > 1.0 {
            let (a, b) = (
                start as usize,
                ((start + ratio) as usize).min(samples.len()),
            );
            let span = &samples[a..b.max(a + 1).min(samples.len())];
            out.push(span.iter().sum::<f32>() / span.len().max(1) as f32);
        } else {
            let a = start as usize;
            let frac = (start - a as f64) as f32;
            let next = samples.get(a + 1).copied().unwrap_or(samples[a]);
            out.push(samples[a] * (1.0 - frac) + next * frac);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_follow_the_rates_and_a_level_stays_level() {
        let flat = vec![0.5_f32; 48_000];
        let down = resample(&flat, 48_000, 16_000);
        assert_eq!(down.len(), 16_000);
        assert!(down.iter().all(|s| (s - 0.5).abs() < 1e-6));
        let up = resample(&flat[..8_000], 8_000, 16_000);
        assert_eq!(up.len(), 16_000);
        let odd = resample(&flat[..44_100], 44_100, 16_000);
        assert_eq!(odd.len(), 16_000);
        assert_eq!(resample(&[], 48_000, 16_000), Vec::<f32>::new());
    }

    #[test]
    fn a_tone_below_the_new_nyquist_survives() {
        // 440 Hz at 48 kHz to 16 kHz: still a 440 Hz wave of nearly full size.
        let tone: Vec<f32> = (0..48_000)
            .map(|i| (i as f32 * 440.0 * std::f32::consts::TAU / 48_000.0).sin())
            .collect();
        let down = resample(&tone, 48_000, 16_000);
        let peak = down.iter().fold(0.0_f32, |m, s| m.max(s.abs()));
        assert!(peak > 0.9, "{peak}");
        let crossings = down
            .windows(2)
            .filter(|w| w[0] < 0.0 && w[1] >= 0.0)
            .count();
        assert!((438..=442).contains(&crossings), "{crossings}");
    }
}
