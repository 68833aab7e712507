//! A server's stderr: each line into hearth's log (cut, and only a count
//! past a limit), and its last lines kept, so that `hearth mcp list` and
//! `hearth doctor` can show a server's own words on why it failed instead
//! of a line hidden at the log's `info` level.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// A line of a server's stderr kept in the log, and how many lines are.
const STDERR_LINE_CHARS: usize = 1_000;
const STDERR_LINES: u64 = 500;

/// How many of a server's last stderr lines are kept to show.
const TAIL_LINES: usize = 5;
/// How much of each kept line is shown.
const TAIL_LINE_CHARS: usize = 300;

/// A server's last stderr lines (of its latest start).
#[derive(Debug, Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn push(&self, line: String) {
        if line.trim().is_empty() {
            return;
        }
        let mut lines = self.lock();
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(crate::tools::cap(&line, TAIL_LINE_CHARS).to_string());
    }

    /// Forgets the lines of an earlier start.
    pub(super) fn clear(&self) {
        self.lock().clear();
    }

    /// The lines kept, oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.lock().iter().cloned().collect()
    }
}

/// A server's stderr, line by line into the log: each line cut, and after
/// [`STDERR_LINES`] lines only a count, so a chatty server cannot fill the
/// disk.
pub(super) async fn follow(server: String, stderr: impl AsyncRead + Unpin, tail: StderrTail) {
    let mut lines = BufReader::new(stderr);
    let mut line = Vec::new();
    let mut seen = 0u64;
    loop {
        line.clear();
        match read_line_capped(&mut lines, &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        seen += 1;
        if seen > STDERR_LINES {
            let text = String::from_utf8_lossy(&line);
            tail.push(crate::tools::cap(text.trim_end(), STDERR_LINE_CHARS).to_string());
        }
        if seen <= STDERR_LINES {
            let text = String::from_utf8_lossy(&line);
            let text = crate::tools::cap(text.trim_end(), STDERR_LINE_CHARS);
            tracing::info!(server, "MCP server stderr: {text}");
            tail.push(text.to_string());
        } else if seen.is_power_of_two() {
            tracing::warn!(
                server,
                lines = seen,
                "MCP server keeps writing to stderr; not logged"
            );
        }
    }
}

/// One line, keeping at most [`STDERR_LINE_CHARS`] × 4 bytes of it.
async fn read_line_capped(
    reader: &mut BufReader<impl AsyncRead + Unpin>,
    line: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(total);
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let room = (STDERR_LINE_CHARS * 4).saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        reader.consume(take);
        total += take;
        if done {
            return Ok(total);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_last_lines_are_kept_and_blank_ones_are_not() {
        let tail = StderrTail::default();
        let text: String = (1..=8).map(|i| format!("line {i}\n\n")).collect();
        follow("s".into(), text.as_bytes(), tail.clone()).await;
        assert_eq!(
            tail.lines(),
            ["line 4", "line 5", "line 6", "line 7", "line 8"]
        );
        tail.push("x".repeat(5_000));
        assert!(tail.lines()[4].chars().count() < 400);
        tail.clear();
        assert!(tail.lines().is_empty());
    }
}
