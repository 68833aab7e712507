//! The cron tools: `cron_add`, `cron_list`, `cron_remove`.
//!
//! A job set from a chat is delivered to that chat (the call's
//! [`ToolOrigin`]): "remind me tomorrow at 9" from Telegram comes back to
//! the same Telegram chat, runs as the person who set it, and a person sees
//! and removes only the jobs they set in that chat.
//! Only calls from no chat (the command line) may name another target.

use std::sync::Arc;

use serde_json::{Value, json};

use super::job::{Delivery, Job, NewJob, Payload, Schedule};
use super::parse::{parse_at, parse_duration};
use super::runner::{Holder, Scheduler};
use futures::future::BoxFuture;
use hearth_tools::{Tool, ToolContext, ToolOrigin, ToolResult};

/// The three cron tools over one scheduler, ready to register.
pub fn cron_tools(scheduler: Arc<Scheduler>) -> Vec<Box<dyn Tool>> {
    vec![
        Box::new(CronAdd(Arc::clone(&scheduler))),
        Box::new(CronList(Arc::clone(&scheduler))),
        Box::new(CronRemove(scheduler)),
    ]
}

pub struct CronAdd(pub Arc<Scheduler>);
pub struct CronList(pub Arc<Scheduler>);
pub struct CronRemove(pub Arc<Scheduler>);

/// Whether a call from `origin` may see `job`: the command line sees every
/// job; a chat member only the jobs they set in that chat.
fn belongs_to(job: &Job, origin: Option<&ToolOrigin>) -> bool {
    origin.is_none_or(|o| {
        job.delivery.channel == o.channel
            && job.delivery.to == o.reply_target
            && job.delivery.owner() == o.sender
    })
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

impl CronAdd {
    fn job(&self, args: &Value, origin: Option<&ToolOrigin>) -> Result<NewJob, String> {
        let scheduler = &self.0;
        let prompt = str_arg(args, "prompt").ok_or("`prompt` must say what to do or remind")?;
        let timezone = match str_arg(args, "tz") {
            None => scheduler.config().timezone,
            Some(name) => name
                .parse()
                .map_err(|_| format!("`{name}` is not an IANA time zone (like Asia/Seoul)"))?,
        };
        let given: Vec<&str> = ["cron", "at", "in", "every"]
            .into_iter()
            .filter(|k| str_arg(args, k).is_some())
            .collect();
        let [kind] = given[..] else {
            return Err("give exactly one of `cron`, `at`, `in` or `every`".into());
        };
        let text = str_arg(args, kind).unwrap_or_default();
        let now = scheduler.now();
        let schedule = match kind {
            "cron" => Schedule::cron(text).map_err(|e| e.to_string())?,
            "at" => Schedule::At(parse_at(text, timezone, now).map_err(|e| e.to_string())?),
            "in" => {
                let d = parse_duration(text).map_err(|e| e.to_string())?;
                let d =
                    chrono::Duration::from_std(d).map_err(|_| format!("`{text}` is too long"))?;
                Schedule::At(now + d)
            }
            _ => Schedule::Every(parse_duration(text).map_err(|e| e.to_string())?),
        };
        let delivery = match (origin, str_arg(args, "channel"), str_arg(args, "to")) {
            (Some(o), channel, to) => {
                if channel.is_some_and(|c| c != o.channel)
                    || to.is_some_and(|t| t != o.reply_target)
                {
                    return Err("a job set from a chat is delivered to that chat".into());
                }
                Delivery {
                    channel: o.channel.clone(),
                    to: o.reply_target.clone(),
                    thread: o.thread_ts.clone(),
                    owner: Some(o.sender.clone()),
                }
            }
            (None, Some(channel), Some(to)) => Delivery {
                channel: channel.to_string(),
                to: to.to_string(),
                thread: str_arg(args, "thread").map(str::to_string),
                owner: None,
            },
            (None, _, _) => return Err("no chat to deliver to: give `channel` and `to`".into()),
        };
        Ok(NewJob {
            name: str_arg(args, "name").map(str::to_string),
            schedule,
            timezone,
            payload: Payload::AgentPrompt {
                prompt: prompt.to_string(),
            },
            delivery,
        })
    }
}

impl Tool for CronAdd {
    fn name(&self) -> &str {
        "cron_add"
    }

    fn description(&self) -> &str {
        "Schedule a prompt (a reminder or a recurring task); the answer is sent to this chat. \
         Give one of: `at` (\"2025-06-02 09:00\" or \"09:00\", local time), `in` (\"20m\", \"2h\"), \
         `every` (\"1h\", \"1d\"), `cron` (\"0 9 * * 1-5\"). `tz` is an IANA zone."
    }

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "prompt": {"type": "string"},
            "at": {"type": "string"},
            "in": {"type": "string"},
            "every": {"type": "string"},
            "cron": {"type": "string"},
            "tz": {"type": "string"},
            "name": {"type": "string"},
            "channel": {"type": "string"},
            "to": {"type": "string"},
            "thread": {"type": "string"}
        }, "required": ["prompt"]})
    }

    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let job = match self.job(&args, ctx.origin.as_ref()) {
                Ok(j) => j,
                Err(e) => return ToolResult::error(e),
            };
            let holder = match &ctx.origin {
                Some(o) if o.one_credential => Holder::Channel,
                _ => Holder::Owner,
            };
            match self.0.add_held(job, holder) {
                Ok(job) => ToolResult::ok(format!("scheduled {}", job.describe())),
                Err(e) => ToolResult::error(e.to_string()),
            }
        })
    }
}

impl Tool for CronList {
    fn name(&self) -> &str {
        "cron_list"
    }

    fn description(&self) -> &str {
        "List the scheduled jobs and reminders of this chat, with their ids."
    }

    fn read_only(&self) -> bool {
        true
    }

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    fn execute<'a>(&'a self, _args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match self.0.list() {
                Ok(jobs) => {
                    let lines: Vec<String> = jobs
                        .iter()
                        .filter(|j| belongs_to(j, ctx.origin.as_ref()))
                        .map(Job::describe)
                        .collect();
                    if lines.is_empty() {
                        ToolResult::ok("no jobs are scheduled")
                    } else {
                        ToolResult::ok(lines.join("\n"))
                    }
                }
                Err(e) => ToolResult::error(e.to_string()),
            }
        })
    }
}

impl Tool for CronRemove {
    fn name(&self) -> &str {
        "cron_remove"
    }

    fn description(&self) -> &str {
        "Remove a scheduled job of this chat by its id (as cron_list shows it)."
    }

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]})
    }

    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let Some(id) = args.get("id").and_then(Value::as_i64) else {
                return ToolResult::error("`id` must be a job id");
            };
            match self.0.get(id) {
                Ok(Some(job)) if belongs_to(&job, ctx.origin.as_ref()) => match self.0.remove(id) {
                    Ok(_) => ToolResult::ok(format!("removed job #{id}")),
                    Err(e) => ToolResult::error(e.to_string()),
                },
                Ok(_) => ToolResult::error(format!("this chat has no job #{id}")),
                Err(e) => ToolResult::error(e.to_string()),
            }
        })
    }
}
