//! Streaming text to the caller without waking it for every token.
//!
//! On a small machine the engine's decode threads and the async runtime
//! share the same cores; waking the receiver for each token costs decode
//! speed. The outbox sends the first text at once (time to first token is
//! what a user feels), then merges deltas of the same kind and sends them
//! at most every `INTERVAL` — still smooth to the eye.

use std::time::{Duration, Instant};

use tokio::sync::mpsc::Sender;

use hearth_core::chat::StreamEvent;

const INTERVAL: Duration = Duration::from_millis(40);

/// The receiver is gone: the caller stopped listening.
#[derive(Debug)]
pub struct Gone;

pub struct Outbox {
    events: Sender<StreamEvent>,
    pending: Option<StreamEvent>,
    last_sent: Option<Instant>,
}

impl Outbox {
    pub fn new(events: Sender<StreamEvent>) -> Self {
        Self {
            events,
            pending: None,
            last_sent: None,
        }
    }

    /// Queues a text or reasoning delta; other events go out at once,
    /// after whatever is pending.
    pub fn push(&mut self, event: StreamEvent) -> Result<(), Gone> {
        match (&mut self.pending, event) {
            (Some(StreamEvent::TextDelta(a)), StreamEvent::TextDelta(b))
            | (Some(StreamEvent::ReasoningDelta(a)), StreamEvent::ReasoningDelta(b)) => {
                a.push_str(&b)
            }
            (_, event @ (StreamEvent::TextDelta(_) | StreamEvent::ReasoningDelta(_))) => {
                self.flush()?;
                self.pending = Some(event);
            }
            (_, event) => {
                self.flush()?;
                return self.send(event);
            }
        }
        let due = self.last_sent.is_none_or(|t| t.elapsed() >= INTERVAL);
        if due { self.flush() } else { Ok(()) }
    }

    /// The channel back, for a job handed on before anything was sent.
    pub fn into_sender(self) -> Sender<StreamEvent> {
        self.events
    }

    pub fn flush(&mut self) -> Result<(), Gone> {
        match self.pending.take() {
            Some(event) => self.send(event),
            None => Ok(()),
        }
    }

    fn send(&mut self, event: StreamEvent) -> Result<(), Gone> {
        self.last_sent = Some(Instant::now());
        self.events.blocking_send(event).map_err(|_| Gone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_text_goes_at_once_then_deltas_merge_in_order() {
        let (tx, mut rx) = tokio::sync::mpsc::channel(16);
        let mut out = Outbox::new(tx.clone());
        out.push(StreamEvent::TextDelta("a".into())).unwrap();
        assert!(matches!(rx.try_recv(), Ok(StreamEvent::TextDelta(t)) if t == "a"));
        out.push(StreamEvent::TextDelta("b".into())).unwrap();
        out.push(StreamEvent::TextDelta("c".into())).unwrap();
        assert!(rx.try_recv().is_err(), "held for the interval");
        out.push(StreamEvent::ReasoningDelta("r".into())).unwrap();
        assert!(matches!(rx.try_recv(), Ok(StreamEvent::TextDelta(t)) if t == "bc"));
        out.flush().unwrap();
        assert!(matches!(rx.try_recv(), Ok(StreamEvent::ReasoningDelta(t)) if t == "r"));
        drop(rx);
        assert!(
            out.push(StreamEvent::TextDelta("x".into()))
                .and_then(|_| out.flush())
                .is_err()
        );
    }
}
