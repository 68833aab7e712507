//! The latest warnings and errors hearth logged, kept for the web page:
//! what the owner would otherwise read in the journal. A `tracing` layer
//! copies each into a ring of [`KEPT`].

use std::collections::VecDeque;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// Lines kept.
pub const KEPT: usize = 50;
/// Characters kept of one line.
const LINE: usize = 2_000;

/// One warning or error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Logged {
    /// Unix seconds.
    pub at: i64,
    /// `warn` or `error`.
    pub level: &'static str,
    /// Where in hearth (or llama.cpp) it was logged.
    pub target: String,
    /// The message, then its fields as `name=value`.
    pub text: String,
}

#[derive(Debug, Default)]
pub struct RecentErrors {
    ring: Mutex<VecDeque<Logged>>,
}

impl RecentErrors {
    /// The kept lines, newest first.
    pub fn read(&self) -> Vec<Logged> {
        self.ring
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .rev()
            .cloned()
            .collect()
    }

    fn keep(&self, logged: Logged) {
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        if ring.len() == KEPT {
            ring.pop_front();
        }
        ring.push_back(logged);
    }
}

/// The layer that copies warnings and errors into a [`RecentErrors`].
pub struct Capture(pub Arc<RecentErrors>);

/// An event's message and fields as one line.
#[derive(Default)]
struct Line {
    message: String,
    fields: String,
}

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={value}", field.name());
        }
    }
}

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let level = match *event.metadata().level() {
            Level::ERROR => "error",
            Level::WARN => "warn",
            _ => return,
        };
        let mut line = Line::default();
        event.record(&mut line);
        let mut text = line.message + &line.fields;
        if let Some((cut, _)) = text.char_indices().nth(LINE) {
            text.truncate(cut);
            text.push('…');
        }
        self.0.keep(Logged {
            at: chrono::Utc::now().timestamp(),
            level,
            target: event.metadata().target().to_string(),
            text,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn warnings_and_errors_are_kept_newest_first_and_nothing_else() {
        let recent = Arc::new(RecentErrors::default());
        let subscriber = tracing_subscriber::registry().with(Capture(recent.clone()));
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("not kept");
            tracing::warn!(source = "school", "a poll failed");
            tracing::error!(error = %"disk full", "cannot save");
            for i in 0..KEPT {
                tracing::warn!(i, "many");
            }
        });
        let read = recent.read();
        assert_eq!(read.len(), KEPT);
        assert_eq!(read[0].text, format!("many i={}", KEPT - 1));
        let recent = Arc::new(RecentErrors::default());
        let subscriber = tracing_subscriber::registry().with(Capture(recent.clone()));
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(source = "school", "a poll failed");
            tracing::error!(error = %"disk full", "cannot save");
        });
        let read = recent.read();
        assert_eq!(read[0].level, "error");
        assert_eq!(read[0].text, "cannot save error=disk full");
        assert_eq!(read[1].text, "a poll failed source=school");
    }
}
