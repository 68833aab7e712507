//! A WAV file's `fmt ` chunk, checked before symphonia reads it: a header
//! that names a sample rate, a channel count or a block size of 0 makes
//! symphonia divide by zero (a panic), so such a file is refused here with
//! what is wrong with it.

use crate::VoiceError;

/// Refuses a RIFF/WAVE file whose `fmt ` chunk cannot describe sound.
/// A file without one is left to symphonia, which says so itself.
pub(crate) fn check(bytes: &[u8]) -> Result<(), VoiceError> {
    let Some(fmt) = fmt_chunk(bytes) else {
        return Ok(());
    };
    let field = |at: usize, len: usize| -> u32 {
        fmt.get(at..at + len).map_or(0, |b| {
            b.iter()
                .rev()
                .fold(0, |n, &byte| (n << 8) | u32::from(byte))
        })
    };
    let bad = |what: &str| {
        Err(VoiceError::Unreadable(format!(
            "its WAV header gives {what}, so it describes no sound"
        )))
    };
    if fmt.len() < 16 {
        return bad("a format chunk shorter than 16 bytes");
    }
    if field(2, 2) == 0 {
        return bad("0 channels");
    }
    if field(4, 4) == 0 {
        return bad("a sample rate of 0");
    }
    if field(12, 2) == 0 {
        return bad("a block size of 0");
    }
    if field(14, 2) == 0 {
        return bad("0 bits per sample");
    }
    Ok(())
}

/// The body of the first `fmt ` chunk, cut at the end of the file.
fn fmt_chunk(bytes: &[u8]) -> Option<&[u8]> {
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let size = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().ok()?) as usize;
        let body = at + 8;
        if id == b"fmt " {
            return Some(&bytes[body..body.saturating_add(size).min(bytes.len())]);
        }
        // Chunks are padded to an even length.
        at = body.checked_add(size)?.checked_add(size & 1)?;
    }
    None
}
