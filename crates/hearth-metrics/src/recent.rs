//! The latest replies' speed, kept for the web page's small charts: time to
//! first token and decode tokens/s, newest last, at most [`KEPT`] of each.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde::Serialize;

/// Samples kept of each measure.
pub const KEPT: usize = 60;

/// One measure of one reply.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    /// When it was measured (Unix seconds).
    pub at: i64,
    pub value: f64,
}

/// What the recent replies measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Recent {
    /// Seconds from taking a message up to its reply's first text.
    pub first_token_secs: Vec<Sample>,
    /// The local model's decode speed per reply.
    pub decode_tokens_per_sec: Vec<Sample>,
}

#[derive(Debug, Default)]
pub struct RecentSpeed {
    first_token: Mutex<VecDeque<Sample>>,
    decode: Mutex<VecDeque<Sample>>,
}

fn push(ring: &Mutex<VecDeque<Sample>>, value: f64) {
    let mut ring = ring.lock().unwrap_or_else(|e| e.into_inner());
    if ring.len() == KEPT {
        ring.pop_front();
    }
    ring.push_back(Sample {
        at: chrono::Utc::now().timestamp(),
        value,
    });
}

impl RecentSpeed {
    pub fn first_token(&self, seconds: f64) {
        push(&self.first_token, seconds);
    }

    pub fn decode(&self, tokens_per_sec: f64) {
        push(&self.decode, tokens_per_sec);
    }

    pub fn read(&self) -> Recent {
        let all = |r: &Mutex<VecDeque<Sample>>| {
            r.lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .copied()
                .collect()
        };
        Recent {
            first_token_secs: all(&self.first_token),
            decode_tokens_per_sec: all(&self.decode),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_samples_are_kept_in_order() {
        let recent = RecentSpeed::default();
        for i in 0..KEPT + 5 {
            recent.decode(i as f64);
        }
        recent.first_token(0.25);
        let read = recent.read();
        assert_eq!(read.decode_tokens_per_sec.len(), KEPT);
        assert_eq!(read.decode_tokens_per_sec[0].value, 5.0);
        assert_eq!(
            read.decode_tokens_per_sec[KEPT - 1].value,
            (KEPT + 4) as f64
        );
        assert_eq!(read.first_token_secs.len(), 1);
    }
}
