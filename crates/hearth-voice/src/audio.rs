//! Audio bytes to 16 kHz mono samples, within limits. The kind is read
//! from the first bytes, never from a file name: OGG/Opus (Telegram's voice
//! notes) through libopus, WAV and MP3 through symphonia. A file longer
//! than the limit stops being decoded as soon as it passes it, so a
//! two-hour note costs no more than the limit.

use std::io::Cursor;

use symphonia::core::audio::SampleBuffer;
use symphonia::core::codecs::DecoderOptions;
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::FormatOptions;
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;
use symphonia::core::probe::Hint;

use crate::VoiceError;

/// The rate Whisper hears at, and every [`Pcm`] has.
pub const SAMPLE_RATE: u32 = 16_000;

/// How much audio one message may bring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AudioLimits {
    pub max_bytes: usize,
    pub max_seconds: u64,
}

impl Default for AudioLimits {
    /// 20 MB (what Telegram hands a bot) and ten minutes.
    fn default() -> Self {
        Self {
            max_bytes: 20 << 20,
            max_seconds: 600,
        }
    }
}

/// Mono samples in [-1, 1] at [`SAMPLE_RATE`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pcm {
    pub samples: Vec<f32>,
}

impl Pcm {
    pub fn seconds(&self) -> f64 {
        self.samples.len() as f64 / f64::from(SAMPLE_RATE)
    }
}

/// What the first bytes say a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ogg,
    Wav,
    Mp3,
}

fn kind(bytes: &[u8]) -> Option<Kind> {
    if bytes.starts_with(b"OggS") {
        Some(Kind::Ogg)
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WAVE" {
        Some(Kind::Wav)
    } else if bytes.starts_with(b"ID3")
        || (bytes.len() >= 2 && bytes[0] == 0xff && bytes[1] & 0xe0 == 0xe0)
    {
        Some(Kind::Mp3)
    } else {
        None
    }
}

/// Decodes `bytes` to 16 kHz mono.
pub fn decode(bytes: &[u8], limits: &AudioLimits) -> Result<Pcm, VoiceError> {
    if bytes.len() > limits.max_bytes {
        return Err(VoiceError::TooLarge {
            mb: (bytes.len() as u64).div_ceil(1 << 20),
            limit: (limits.max_bytes >> 20) as u64,
        });
    }
    let samples = match kind(bytes) {
        Some(Kind::Ogg) => crate::ogg_opus::decode(bytes, limits.max_seconds)?,
        Some(Kind::Wav) => {
            crate::wav_header::check(bytes)?;
            symphonia_decode(bytes, Kind::Wav, limits.max_seconds)?
        }
        Some(kind) => symphonia_decode(bytes, kind, limits.max_seconds)?,
        None => {
            return Err(VoiceError::Unreadable(
                "it is not OGG/Opus, WAV or MP3".into(),
            ));
        }
    };
    if samples.is_empty() {
        return Err(VoiceError::Unreadable("it holds no sound".into()));
    }
    Ok(Pcm { samples })
}

/// WAV or MP3 through symphonia, mixed to mono and resampled.
fn symphonia_decode(bytes: &[u8], kind: Kind, max_seconds: u64) -> Result<Vec<f32>, VoiceError> {
    let unreadable = |e: SymphoniaError| VoiceError::Unreadable(e.to_string());
    let source = MediaSourceStream::new(Box::new(Cursor::new(bytes.to_vec())), Default::default());
    let mut hint = Hint::new();
    hint.with_extension(if kind == Kind::Wav { "wav" } else { "mp3" });
    let probed = symphonia::default::get_probe()
        .format(
            &hint,
            source,
            &FormatOptions::default(),
            &MetadataOptions::default(),
        )
        .map_err(unreadable)?;
    let mut format = probed.format;
    let track = format
        .default_track()
        .ok_or_else(|| VoiceError::Unreadable("it has no audio track".into()))?;
    let (track_id, rate) = (track.id, track.codec_params.sample_rate.unwrap_or(0));
    if rate == 0 {
        return Err(VoiceError::Unreadable("it names no sample rate".into()));
    }
    let mut decoder = symphonia::default::get_codecs()
        .make(&track.codec_params, &DecoderOptions::default())
        .map_err(unreadable)?;
    let limit = max_seconds.saturating_mul(u64::from(rate)) as usize;
    let mut mono: Vec<f32> = Vec::new();
    loop {
        let packet = match format.next_packet() {
            Ok(p) => p,
            // The end, or a cut-off file: what came so far is the audio.
            Err(SymphoniaError::IoError(_)) | Err(SymphoniaError::ResetRequired) => break,
            Err(e) => return Err(unreadable(e)),
        };
        if packet.track_id() != track_id {
            continue;
        }
        let decoded = match decoder.decode(&packet) {
            Ok(d) => d,
            Err(SymphoniaError::DecodeError(why)) => {
                tracing::debug!("an undecodable audio packet skipped: {why}");
                continue;
            }
            Err(e) => return Err(unreadable(e)),
        };
        let spec = *decoded.spec();
        let channels = spec.channels.count().max(1);
        let mut buffer = SampleBuffer::<f32>::new(decoded.capacity() as u64, spec);
        buffer.copy_interleaved_ref(decoded);
        mono.extend(
            buffer
                .samples()
                .chunks(channels)
                .map(|frame| frame.iter().sum::<f32>() / channels as f32),
        );
        if mono.len() > limit {
            return Err(VoiceError::TooLong { limit: max_seconds });
        }
    }
    Ok(crate::resample::resample(&mono, rate, SAMPLE_RATE))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 16-bit PCM WAV of `samples` at `rate` Hz, `channels` interleaved.
    pub(crate) fn wav(samples: &[i16], rate: u32, channels: u16) -> Vec<u8> {
        let data = (samples.len() * 2) as u32;
        let mut out = Vec::new();
        out.extend_from_slice(b"RIFF");
        out.extend_from_slice(&(36 + data).to_le_bytes());
        out.extend_from_slice(b"WAVEfmt ");
        out.extend_from_slice(&16u32.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&channels.to_le_bytes());
        out.extend_from_slice(&rate.to_le_bytes());
        out.extend_from_slice(&(rate * u32::from(channels) * 2).to_le_bytes());
        out.extend_from_slice(&(channels * 2).to_le_bytes());
        out.extend_from_slice(&16u16.to_le_bytes());
        out.extend_from_slice(b"data");
        out.extend_from_slice(&data.to_le_bytes());
        for s in samples {
            out.extend_from_slice(&s.to_le_bytes());
        }
        out
    }

    #[test]
    fn a_stereo_wav_at_44k_becomes_mono_at_16k() {
        let frames = 44_100;
        let samples: Vec<i16> = (0..frames).flat_map(|_| [8_000, 8_000]).collect();
        let pcm = decode(&wav(&samples, 44_100, 2), &AudioLimits::default()).unwrap();
        assert!((pcm.seconds() - 1.0).abs() < 0.01, "{}", pcm.seconds());
        let level = 8_000.0 / 32_768.0;
        assert!(pcm.samples.iter().all(|s| (s - level).abs() < 1e-3));
    }

    #[test]
    fn what_is_not_audio_or_too_much_is_refused_by_name() {
        let limits = AudioLimits {
            max_bytes: 1 << 20,
            max_seconds: 2,
        };
        let text = decode(b"just some words, named voice.ogg", &limits).unwrap_err();
        assert!(
            text.to_string().contains("not OGG/Opus, WAV or MP3"),
            "{text}"
        );
        let fake_ogg = decode(b"OggS but then nothing of an ogg page", &limits).unwrap_err();
        assert!(matches!(fake_ogg, VoiceError::Unreadable(_)), "{fake_ogg}");
        let long = wav(&vec![100; 16_000 * 3], 16_000, 1);
        let e = decode(&long, &limits).unwrap_err();
        assert!(e.to_string().contains("`[voice] audio_max_seconds`"), "{e}");
        let big = vec![0u8; (1 << 20) + 1];
        let e = decode(&big, &limits).unwrap_err();
        assert!(e.to_string().contains("`[voice] audio_max_mb`"), "{e}");
        // Headers that describe no sound (symphonia panicked on a rate of 0).
        let good = wav(&vec![100; 16_000], 16_000, 1);
        for (at, bytes, what) in [
            (24, 0u32.to_le_bytes().to_vec(), "sample rate of 0"),
            (22, 0u16.to_le_bytes().to_vec(), "0 channels"),
            (32, 0u16.to_le_bytes().to_vec(), "block size of 0"),
            (34, 0u16.to_le_bytes().to_vec(), "0 bits per sample"),
        ] {
            let mut broken = good.clone();
            broken[at..at + bytes.len()].copy_from_slice(&bytes);
            let e = decode(&broken, &limits).unwrap_err();
            assert!(e.to_string().contains(what), "{what}: {e}");
        }
        // The positive control: within the limits, the same kind of file reads.
        let short = wav(&vec![100; 16_000], 16_000, 1);
        assert!((decode(&short, &limits).unwrap().seconds() - 1.0).abs() < 1e-3);
        let cut = &short[..short.len() / 2];
        assert!(
            decode(cut, &limits).unwrap().seconds() > 0.4,
            "a cut WAV reads to its end"
        );
    }
}
