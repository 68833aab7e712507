//! Turning a stream of token bytes into whole UTF-8 text.
//!
//! One token may hold part of a multi-byte character (emoji, CJK). The
//! decoder keeps an incomplete tail until the next token completes it, so a
//! streamed delta is always valid text and never a replacement character.

#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Adds bytes and returns the text that is now complete.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(std::str::from_utf8(&self.pending[..valid]).unwrap_or_default());
                    match e.error_len() {
                        // An incomplete character at the end: wait for more bytes.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        // Invalid bytes: replace them and go on.
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// Whatever is left at the end of the stream, lossily.
    pub fn finish(&mut self) -> String {
        let rest = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_split_characters() {
        let mut s = Utf8Stream::default();
        let bytes = "a😀b".as_bytes();
        assert_eq!(s.push(&bytes[..2]), "a");
        assert_eq!(s.push(&bytes[2..4]), "");
        assert_eq!(s.push(&bytes[4..]), "😀b");
        assert_eq!(s.finish(), "");
    }

    #[test]
    fn replaces_invalid_bytes() {
        let mut s = Utf8Stream::default();
        assert_eq!(s.push(&[b'x', 0xff, b'y']), "x\u{fffd}y");
        assert_eq!(s.push(&[0xe2, 0x82]), "");
        assert_eq!(s.finish(), "\u{fffd}");
    }
}
