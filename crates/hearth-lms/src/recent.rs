//! `lms_recent`: what the LMS sites posted lately (announcements, news, new
//! assignments), newest first, read from the seen-store.

use std::sync::Arc;

use serde_json::Value;

use super::Clock;
use super::store::SeenStore;
use crate::tools::{Tool, ToolContext, ToolResult};
use futures::future::BoxFuture;

/// The most items listed.
const MOST: u32 = 30;
/// Characters of each item's text shown.
const DETAIL: usize = 300;

pub struct LmsRecent {
    store: Arc<SeenStore>,
    clock: Arc<dyn Clock>,
}

impl LmsRecent {
    pub fn new(store: Arc<SeenStore>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }

    fn answer(&self, days: i64) -> ToolResult {
        let since = self.clock.now() - chrono::Duration::days(days);
        let items = match self.store.recent(since, MOST) {
            Ok(items) => items,
            Err(e) => return ToolResult::error(e.to_string()),
        };
        if items.is_empty() {
            return ToolResult::ok(format!(
                "Nothing new appeared in the last {days} day(s) in the LMS sources polled so far."
            ));
        }
        let lines: Vec<String> = items
            .iter()
            .map(|i| {
                let course = i
                    .course
                    .as_deref()
                    .map(|c| format!(", {c}"))
                    .unwrap_or_default();
                let mut line = format!("- {} ({}{course}; {})", i.title, i.kind.as_str(), i.source);
                if let Some(detail) = i.detail.as_deref().filter(|d| !d.trim().is_empty()) {
                    line.push_str(&format!(": {}", crate::tools::cap(detail.trim(), DETAIL)));
                }
                line
            })
            .collect();
        ToolResult::ok(format!(
            "New in the last {days} day(s), newest first:\n{}",
            lines.join("\n")
        ))
    }
}

impl Tool for LmsRecent {
    fn name(&self) -> &str {
        "lms_recent"
    }

    fn description(&self) -> &str {
        "List what the LMS sites posted in the last N days (announcements, news, new assignments), newest first."
    }

    fn read_only(&self) -> bool {
        true
    }

    fn schema(&self) -> Value {
        super::tool::days_schema("back")
    }

    fn execute<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        let days = super::tool::days(&args);
        Box::pin(async move { self.answer(days) })
    }
}
