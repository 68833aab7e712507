//! Server-sent events, as OpenAI-compatible APIs stream them: `data:` lines
//! grouped into events by a blank line.
//!
//! Bytes arrive in arbitrary chunks (a line, or a UTF-8 character, may be
//! split between two), so the parser buffers until an event is complete.

/// Turns a byte stream into the `data` of each event.
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
    data: Vec<String>,
}

impl SseParser {
    /// Adds bytes; returns the data of every event they completed.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&raw);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() {
                    events.push(self.data.join("\n"));
                    self.data.clear();
                }
            } else if let Some(value) = line.strip_prefix("data:") {
                self.data
                    .push(value.strip_prefix(' ').unwrap_or(value).to_string());
            }
            // Comments (`:`), `event:`, `id:` and `retry:` carry nothing here.
        }
        events
    }

    /// The last event, when the stream ended without its blank line.
    pub fn finish(&mut self) -> Option<String> {
        // What is left holds no newline: at most one unfinished line.
        let rest = std::mem::take(&mut self.buffer);
        if !rest.is_empty() {
            let line = String::from_utf8_lossy(&rest);
            if let Some(value) = line.trim_end().strip_prefix("data:") {
                self.data
                    .push(value.strip_prefix(' ').unwrap_or(value).to_string());
            }
        }
        (!self.data.is_empty()).then(|| std::mem::take(&mut self.data).join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_survive_any_split_of_the_bytes() {
        let stream = ": keep-alive\r\n\r\ndata: {\"a\":\"é\"}\r\n\r\nevent: x\ndata: one\ndata: two\n\ndata: [DONE]\n\n";
        let bytes = stream.as_bytes();
        for split in 0..bytes.len() {
            let mut parser = SseParser::default();
            let mut events = parser.push(&bytes[..split]);
            events.extend(parser.push(&bytes[split..]));
            assert_eq!(parser.finish(), None);
            assert_eq!(
                events,
                ["{\"a\":\"é\"}", "one\ntwo", "[DONE]"],
                "split at {split}"
            );
        }
    }

    #[test]
    fn a_last_event_without_its_blank_line_is_kept() {
        let mut parser = SseParser::default();
        assert!(parser.push(b"data: {\"x\":1}").is_empty());
        assert_eq!(parser.finish().as_deref(), Some("{\"x\":1}"));
    }
}
