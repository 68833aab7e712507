//! hearth-metrics: what hearth counts for a home-server user to graph: one [`Metrics`] per
//! daemon, handed to the parts that record, and read by the gateway's
//! `GET /metrics` in the OpenMetrics text format (which Prometheus
//! scrapes).
//!
//! - `hearth_messages_total{channel,outcome}`: messages handled;
//! - `hearth_reply_seconds` and `hearth_first_token_seconds`: how long a
//!   message took, and until its reply's first text;
//! - `hearth_prompt_tokens_total{kind,tier}`: prompt tokens `decoded` or
//!   `reused` from the KV cache, by where the conversation was found
//!   (`fresh`, `slot`, `ram`, `disk`);
//! - `hearth_decode_tokens_per_second`: the last local reply's speed;
//! - `hearth_queue_depth{priority}`: requests waiting for the model;
//! - `hearth_tool_calls_total{tool,outcome}`: `ok`, `error` or `refused`;
//! - `hearth_lms_polls_total{source,outcome}`, `hearth_lms_notices_total{source}`;
//! - `hearth_channel_errors_total{channel,operation}`: a platform's API
//!   failing (Telegram's included), on `listen` or `send`;
//! - `hearth_build_info{version}` and the process ([`process`]).
//!
//! Every label set that is known at start (the channels, outcomes, tools
//! and LMS sources, [`Metrics::known`]) is there at 0 before it first
//! happens, so a graph or an alert sees the series from the start. The
//! text is OpenMetrics or the older Prometheus format ([`format`]), as the
//! scraper asks.

pub mod format;
mod process;
pub use process::resident_bytes;
pub mod errors;
pub mod recent;

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Metric, Registry};

use hearth_core::chat::{CacheOrigin, Priority, Usage};

pub use format::{OPENMETRICS as CONTENT_TYPE, PROMETHEUS_TEXT};

/// The label values known when the daemon starts.
#[derive(Debug, Clone, Default)]
pub struct Known {
    pub channels: Vec<String>,
    /// Every outcome a message can have (`pipeline::Outcome::LABELS`).
    pub outcomes: Vec<&'static str>,
    pub tools: Vec<String>,
    pub lms_sources: Vec<String>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MessageLabels {
    channel: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PromptLabels {
    kind: &'static str,
    tier: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabels {
    source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PollLabels {
    source: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChannelErrorLabels {
    channel: String,
    operation: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PriorityLabels {
    priority: &'static str,
}

/// How many requests of each priority wait for the model now.
pub type QueueDepth = dyn Fn() -> Vec<(Priority, usize)> + Send + Sync;

pub struct Metrics {
    registry: Registry,
    /// Metrics named without hearth's prefix (the process's).
    plain: Registry,
    process: process::ProcessMetrics,
    messages: Family<MessageLabels, Counter>,
    reply: Histogram,
    first_token: Histogram,
    prompt_tokens: Family<PromptLabels, Counter>,
    decode_rate: Gauge<f64, AtomicU64>,
    queue: Family<PriorityLabels, Gauge>,
    queue_depth: Mutex<Option<Arc<QueueDepth>>>,
    tool_calls: Family<ToolLabels, Counter>,
    lms_polls: Family<PollLabels, Counter>,
    lms_notices: Family<SourceLabels, Counter>,
    channel_errors: Family<ChannelErrorLabels, Counter>,
    recent: recent::RecentSpeed,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("hearth");
        let mut plain = Registry::default();
        let process = process::ProcessMetrics::register(&mut plain, &mut registry);
        let r = &mut registry;
        let messages = registered(
            r,
            "messages",
            "Messages handled, by channel and outcome",
            Family::default(),
        );
        // 50 ms to about 7 minutes.
        let reply = registered(
            r,
            "reply_seconds",
            "Time from taking a message up to its outcome",
            Histogram::new(exponential_buckets(0.05, 2.0, 14)),
        );
        let first_token = registered(
            r,
            "first_token_seconds",
            "Time from taking a message up to its reply's first text",
            Histogram::new(exponential_buckets(0.025, 2.0, 12)),
        );
        let prompt_tokens = registered(
            r,
            "prompt_tokens",
            "Prompt tokens decoded, or reused from the KV cache, by where the conversation was found",
            Family::default(),
        );
        let decode_rate = registered(
            r,
            "decode_tokens_per_second",
            "Decode speed of the last reply of the local model",
            Gauge::default(),
        );
        let queue = registered(
            r,
            "queue_depth",
            "Requests waiting for the local model, by priority",
            Family::default(),
        );
        let tool_calls = registered(
            r,
            "tool_calls",
            "Tool calls by tool and outcome",
            Family::default(),
        );
        let (lms_polls, lms_notices, channel_errors) = outside_metrics(r);
        Self {
            registry,
            plain,
            process,
            messages,
            reply,
            first_token,
            prompt_tokens,
            decode_rate,
            queue,
            queue_depth: Mutex::new(None),
            tool_calls,
            lms_polls,
            lms_notices,
            channel_errors,
            recent: recent::RecentSpeed::default(),
        }
    }

    /// Makes every known label set show at 0 until it first happens.
    pub fn known(&self, known: &Known) {
        for channel in &known.channels {
            for outcome in &known.outcomes {
                let _ = self.messages.get_or_create(&MessageLabels {
                    channel: channel.clone(),
                    outcome: outcome.to_string(),
                });
            }
            for operation in ["listen", "send"] {
                let _ = self.channel_errors.get_or_create(&ChannelErrorLabels {
                    channel: channel.clone(),
                    operation,
                });
            }
        }
        for tool in &known.tools {
            for outcome in ["ok", "error", "refused"] {
                let _ = self.tool_calls.get_or_create(&ToolLabels {
                    tool: tool.clone(),
                    outcome,
                });
            }
        }
        for source in &known.lms_sources {
            for outcome in ["ok", "failed"] {
                let _ = self.lms_polls.get_or_create(&PollLabels {
                    source: source.clone(),
                    outcome,
                });
            }
            let _ = self.lms_notices.get_or_create(&SourceLabels {
                source: source.clone(),
            });
        }
        for kind in ["decoded", "reused"] {
            for tier in ["fresh", "slot", "ram", "disk", "shared"] {
                let _ = self
                    .prompt_tokens
                    .get_or_create(&PromptLabels { kind, tier });
            }
        }
        for priority in ["interactive", "background"] {
            let _ = self.queue.get_or_create(&PriorityLabels { priority });
        }
    }

    /// A message handled, with its outcome and how long it took.
    pub fn message(&self, channel: &str, outcome: &str, seconds: Option<f64>) {
        self.messages
            .get_or_create(&MessageLabels {
                channel: channel.to_string(),
                outcome: outcome.to_string(),
            })
            .inc();
        if let Some(s) = seconds {
            self.reply.observe(s);
        }
    }

    pub fn first_token(&self, seconds: f64) {
        self.first_token.observe(seconds);
        self.recent.first_token(seconds);
    }

    /// The latest replies' first-token times and decode speeds.
    pub fn recent(&self) -> recent::Recent {
        self.recent.read()
    }

    /// One model reply's token counts and speed.
    pub fn usage(&self, usage: &Usage) {
        let tier = match usage.cache_origin {
            CacheOrigin::Fresh => "fresh",
            CacheOrigin::Resident => "slot",
            CacheOrigin::Ram => "ram",
            CacheOrigin::Disk => "disk",
            CacheOrigin::Shared => "shared",
        };
        let reused = u64::from(usage.cached_tokens.min(usage.prompt_tokens));
        let decoded = u64::from(usage.prompt_tokens) - reused;
        self.prompt_tokens
            .get_or_create(&PromptLabels {
                kind: "reused",
                tier,
            })
            .inc_by(reused);
        self.prompt_tokens
            .get_or_create(&PromptLabels {
                kind: "decoded",
                tier,
            })
            .inc_by(decoded);
        if usage.completion_tokens > 0 && usage.generation_ms > 0.0 {
            let rate = f64::from(usage.completion_tokens) * 1000.0 / usage.generation_ms;
            self.decode_rate.set(rate);
            self.recent.decode(rate);
        }
    }

    /// Where the queue depth is read from at each scrape.
    pub fn queue_source(&self, depth: Arc<QueueDepth>) {
        *self.queue_depth.lock().unwrap_or_else(|e| e.into_inner()) = Some(depth);
    }

    /// A tool call's outcome: `ok`, `error` or `refused`.
    pub fn tool_call(&self, tool: &str, outcome: &'static str) {
        self.tool_calls
            .get_or_create(&ToolLabels {
                tool: tool.to_string(),
                outcome,
            })
            .inc();
    }

    pub fn lms_poll(&self, source: &str, ok: bool) {
        let outcome = if ok { "ok" } else { "failed" };
        self.lms_polls
            .get_or_create(&PollLabels {
                source: source.to_string(),
                outcome,
            })
            .inc();
    }

    pub fn lms_notices(&self, source: &str, n: u64) {
        self.lms_notices
            .get_or_create(&SourceLabels {
                source: source.to_string(),
            })
            .inc_by(n);
    }

    /// A platform's API failed on `operation` (`listen` or `send`).
    pub fn channel_error(&self, channel: &str, operation: &'static str) {
        self.channel_errors
            .get_or_create(&ChannelErrorLabels {
                channel: channel.to_string(),
                operation,
            })
            .inc();
    }

    /// Everything, in the OpenMetrics text format.
    pub fn render(&self) -> String {
        let source = self
            .queue_depth
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(depth) = source {
            for (priority, n) in depth() {
                let priority = match priority {
                    Priority::Interactive => "interactive",
                    Priority::Background => "background",
                };
                self.queue
                    .get_or_create(&PriorityLabels { priority })
                    .set(n as i64);
            }
        }
        self.process.refresh();
        let mut out = String::new();
        let written = prometheus_client::encoding::text::encode_registry(&mut out, &self.plain)
            .and_then(|()| {
                prometheus_client::encoding::text::encode_registry(&mut out, &self.registry)
            })
            .and_then(|()| prometheus_client::encoding::text::encode_eof(&mut out));
        if let Err(e) = written {
            tracing::error!(error = %e, "cannot write the metrics");
        }
        out
    }

    /// The text in the format an `Accept` header asks for, and its
    /// content type.
    pub fn render_for(&self, accept: Option<&str>) -> (&'static str, String) {
        let text = self.render();
        if format::wants_openmetrics(accept) {
            (CONTENT_TYPE, text)
        } else {
            (PROMETHEUS_TEXT, format::to_prometheus_text(&text))
        }
    }
}

/// What is counted of the world outside: LMS polls and notices, platform
/// API failures.
fn outside_metrics(
    r: &mut Registry,
) -> (
    Family<PollLabels, Counter>,
    Family<SourceLabels, Counter>,
    Family<ChannelErrorLabels, Counter>,
) {
    let lms_polls = registered(
        r,
        "lms_polls",
        "LMS polls by source and outcome",
        Family::default(),
    );
    let lms_notices = registered(
        r,
        "lms_notices",
        "LMS notices queued for delivery, by source",
        Family::default(),
    );
    let channel_errors = registered(
        r,
        "channel_errors",
        "Failures of a platform's API, by channel and operation",
        Family::default(),
    );
    (lms_polls, lms_notices, channel_errors)
}

/// `metric`, registered in `registry` under `name` with `help`.
fn registered<M: Metric + Clone>(registry: &mut Registry, name: &str, help: &str, metric: M) -> M {
    registry.register(name, help, metric.clone());
    metric
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_show_in_the_text() {
        let m = Metrics::new();
        m.message("gateway", "replied", Some(0.2));
        m.usage(&Usage {
            prompt_tokens: 100,
            cached_tokens: 80,
            cache_origin: CacheOrigin::Ram,
            completion_tokens: 50,
            prompt_ms: 10.0,
            generation_ms: 500.0,
            ..Usage::default()
        });
        m.queue_source(Arc::new(|| vec![(Priority::Interactive, 2)]));
        let text = m.render();
        assert!(
            text.contains(r#"hearth_messages_total{channel="gateway",outcome="replied"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"hearth_prompt_tokens_total{kind="reused",tier="ram"} 80"#),
            "{text}"
        );
        assert!(
            text.contains(r#"hearth_prompt_tokens_total{kind="decoded",tier="ram"} 20"#),
            "{text}"
        );
        assert!(
            text.contains("hearth_decode_tokens_per_second 100"),
            "{text}"
        );
        assert!(
            text.contains(r#"hearth_queue_depth{priority="interactive"} 2"#),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
        assert!(text.contains("hearth_build_info{version="), "{text}");
        assert!(text.contains("process_resident_memory_bytes "), "{text}");
    }

    #[test]
    fn known_label_sets_show_at_zero_before_they_happen() {
        let m = Metrics::new();
        let text = m.render();
        assert!(!text.contains("file_read"), "nothing known yet: {text}");
        m.known(&Known {
            channels: vec!["telegram".into()],
            outcomes: vec!["replied", "failed"],
            tools: vec!["file_read".into()],
            lms_sources: vec!["uni".into()],
        });
        let text = m.render();
        for line in [
            r#"hearth_messages_total{channel="telegram",outcome="failed"} 0"#,
            r#"hearth_tool_calls_total{tool="file_read",outcome="refused"} 0"#,
            r#"hearth_lms_polls_total{source="uni",outcome="failed"} 0"#,
            r#"hearth_lms_notices_total{source="uni"} 0"#,
            r#"hearth_channel_errors_total{channel="telegram",operation="send"} 0"#,
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }
}
