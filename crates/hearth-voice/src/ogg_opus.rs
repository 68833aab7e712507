//! OGG/Opus (RFC 7845), as Telegram's voice notes are: the `OpusHead`
//! packet, the tags, then audio packets, decoded by libopus straight to
//! 16 kHz mono (libopus mixes a stereo stream down itself).

use std::io::Cursor;

use crate::{SAMPLE_RATE, VoiceError};

/// The longest Opus packet: 120 ms.
const MAX_PACKET_MS: usize = 120;

/// The samples of an OGG/Opus file, at most `max_seconds` of them.
pub fn decode(bytes: &[u8], max_seconds: u64) -> Result<Vec<f32>, VoiceError> {
    let unreadable = |why: String| VoiceError::Unreadable(why);
    let mut reader = ogg::PacketReader::new(Cursor::new(bytes));
    let head = reader
        .read_packet()
        .map_err(|e| unreadable(format!("a broken OGG stream: {e}")))?
        .ok_or_else(|| unreadable("an empty OGG stream".into()))?;
    let head = &head.data;
    if !head.starts_with(b"OpusHead") || head.len() < 19 {
        return Err(unreadable(
            "an OGG stream that is not Opus (Vorbis, say)".into(),
        ));
    }
    let channels = head[9];
    if channels == 0 || channels > 2 {
        return Err(unreadable(format!("an Opus stream of {channels} channels")));
    }
    // Samples at 48 kHz the encoder put in front, to be dropped.
    let pre_skip =
        usize::from(u16::from_le_bytes([head[10], head[11]])) * SAMPLE_RATE as usize / 48_000;
    let mut decoder = opus::Decoder::new(SAMPLE_RATE, opus::Channels::Mono)
        .map_err(|e| unreadable(e.to_string()))?;
    let limit = (max_seconds as usize).saturating_mul(SAMPLE_RATE as usize) + pre_skip;
    let mut frame = vec![0f32; SAMPLE_RATE as usize * MAX_PACKET_MS / 1000];
    let mut out = Vec::new();
    let mut packets = 0usize;
    let mut bad = 0usize;
    loop {
        let packet = match reader.read_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            // A cut-off file: what came so far is the note.
            Err(e) if packets > 1 => {
                tracing::debug!("an OGG stream ends early: {e}");
                break;
            }
            Err(e) => return Err(unreadable(format!("a broken OGG stream: {e}"))),
        };
        packets += 1;
        if packets == 1 {
            // OpusTags: nothing to hear.
            continue;
        }
        match decoder.decode_float(&packet.data, &mut frame, false) {
            Ok(n) => out.extend_from_slice(&frame[..n]),
            Err(e) => {
                bad += 1;
                tracing::debug!("an undecodable Opus packet skipped: {e}");
            }
        }
        if out.len() > limit {
            return Err(VoiceError::TooLong { limit: max_seconds });
        }
    }
    if out.is_empty() && bad > 0 {
        return Err(unreadable(format!(
            "none of its {bad} Opus packets decodes"
        )));
    }
    Ok(out.split_off(pre_skip.min(out.len())))
}
