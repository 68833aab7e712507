//! Samples to an OGG/Opus voice note (RFC 7845), as Telegram's `sendVoice`
//! takes them: mono, 48 kHz inside, 20 ms packets.

use std::io::Cursor;

use ogg::writing::{PacketWriteEndInfo, PacketWriter};

use crate::VoiceError;

const RATE: u32 = 48_000;
const FRAME: usize = 960;

/// `samples` at `rate` Hz as an OGG/Opus file.
pub fn encode(samples: &[f32], rate: u32) -> Result<Vec<u8>, VoiceError> {
    let failed = |e: String| VoiceError::Synthesis(format!("cannot encode the voice note: {e}"));
    let mut samples = crate::resample::resample(samples, rate, RATE);
    let mut encoder = opus::Encoder::new(RATE, opus::Channels::Mono, opus::Application::Voip)
        .map_err(|e| failed(e.to_string()))?;
    encoder
        .set_bitrate(opus::Bitrate::Bits(32_000))
        .map_err(|e| failed(e.to_string()))?;
    let pre_skip = encoder.get_lookahead().map_err(|e| failed(e.to_string()))? as u16;
    let mut out = Vec::new();
    let mut writer = PacketWriter::new(Cursor::new(&mut out));
    let serial = 0x6865_6172; // "hear"
    let mut head = b"OpusHead".to_vec();
    head.push(1);
    head.push(1);
    head.extend_from_slice(&pre_skip.to_le_bytes());
    head.extend_from_slice(&rate.to_le_bytes());
    head.extend_from_slice(&0i16.to_le_bytes());
    head.push(0);
    let mut tags = b"OpusTags".to_vec();
    tags.extend_from_slice(&6u32.to_le_bytes());
    tags.extend_from_slice(b"hearth");
    tags.extend_from_slice(&0u32.to_le_bytes());
    for header in [head, tags] {
        writer
            .write_packet(header, serial, PacketWriteEndInfo::EndPage, 0)
            .map_err(|e| failed(e.to_string()))?;
    }
    // Whole frames: the end padded with silence.
    let real = samples.len();
    samples.resize(real.div_ceil(FRAME).max(1) * FRAME, 0.0);
    let frames = samples.len() / FRAME;
    let mut packet = vec![0u8; 4000];
    for (i, frame) in samples.chunks(FRAME).enumerate() {
        let n = encoder
            .encode_float(frame, &mut packet)
            .map_err(|e| failed(e.to_string()))?;
        let last = i + 1 == frames;
        let granule = if last {
            real as u64 + u64::from(pre_skip)
        } else {
            ((i + 1) * FRAME) as u64 + u64::from(pre_skip)
        };
        // A page a second, as voice-note players expect.
        let end = if last {
            PacketWriteEndInfo::EndStream
        } else if (i + 1) % 50 == 0 {
            PacketWriteEndInfo::EndPage
        } else {
            PacketWriteEndInfo::NormalPacket
        };
        writer
            .write_packet(packet[..n].to_vec(), serial, end, granule)
            .map_err(|e| failed(e.to_string()))?;
    }
    drop(writer);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tone_goes_out_and_comes_back_as_long_as_it_was() {
        let tone: Vec<f32> = (0..22_050)
            .map(|i| 0.3 * (i as f32 * 440.0 * std::f32::consts::TAU / 22_050.0).sin())
            .collect();
        let ogg = encode(&tone, 22_050).unwrap();
        assert!(ogg.starts_with(b"OggS"));
        let back = crate::audio::decode(&ogg, &crate::AudioLimits::default()).unwrap();
        assert!((back.seconds() - 1.0).abs() < 0.03, "{}", back.seconds());
        let loud = back.samples.iter().fold(0f32, |m, s| m.max(s.abs()));
        assert!(loud > 0.2, "{loud}");
    }
}
