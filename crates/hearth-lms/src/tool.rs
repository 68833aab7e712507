//! `lms_upcoming`: what is due in the next N days, read from the seen-store,
//! so the agent can answer "what is due this week?" without a network call.

use std::sync::Arc;

use chrono_tz::Tz;
use serde_json::{Value, json};

use super::Clock;
use super::notice::format_due;
use super::store::SeenStore;
use crate::tools::{Tool, ToolContext, ToolResult};
use futures::future::BoxFuture;

const DEFAULT_DAYS: i64 = 7;
const MAX_DAYS: i64 = 90;

pub struct LmsUpcoming {
    store: Arc<SeenStore>,
    time_zone: Tz,
    clock: Arc<dyn Clock>,
}

impl LmsUpcoming {
    pub fn new(store: Arc<SeenStore>, time_zone: Tz, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            time_zone,
            clock,
        }
    }

    fn answer(&self, days: i64) -> ToolResult {
        let now = self.clock.now();
        let until = now + chrono::Duration::days(days);
        let items = match self.store.upcoming(now, until) {
            Ok(items) => items,
            Err(e) => return ToolResult::error(e.to_string()),
        };
        if items.is_empty() {
            return ToolResult::ok(format!(
                "Nothing is due in the next {days} day(s) in the LMS sources polled so far."
            ));
        }
        let lines: Vec<String> = items
            .iter()
            .filter_map(|i| {
                let due = i.due?;
                let mut line = format!(
                    "- {}: {} ({}",
                    format_due(due, i.all_day, self.time_zone),
                    i.title,
                    i.kind.as_str()
                );
                if let Some(course) = &i.course {
                    line.push_str(&format!(", {course}"));
                }
                line.push(')');
                if i.done {
                    line.push_str(" [handed in or done]");
                }
                if let Some(url) = &i.url {
                    line.push_str(&format!(" {url}"));
                }
                Some(line)
            })
            .collect();
        ToolResult::ok(format!(
            "Due in the next {days} day(s), soonest first:\n{}",
            lines.join("\n")
        ))
    }
}

impl Tool for LmsUpcoming {
    fn name(&self) -> &str {
        "lms_upcoming"
    }

    fn description(&self) -> &str {
        "List course items (assignments, quizzes, events) due in the next N days, from the LMS sites hearth polls."
    }

    fn read_only(&self) -> bool {
        true
    }

    fn schema(&self) -> Value {
        days_schema("ahead")
    }

    fn execute<'a>(&'a self, args: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        let days = days(&args);
        Box::pin(async move { self.answer(days) })
    }
}

/// The LMS tools' one argument: a number of days, 1 to 90, default 7.
pub(super) fn days_schema(direction: &str) -> Value {
    json!({
        "type": "object",
        "properties": {
            "days": {"type": "integer", "minimum": 1, "maximum": MAX_DAYS, "description": format!("How many days {direction}; default 7.")}
        }
    })
}

/// The `days` of `args`, within bounds.
pub(super) fn days(args: &Value) -> i64 {
    args.get("days")
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_DAYS)
        .clamp(1, MAX_DAYS)
}
