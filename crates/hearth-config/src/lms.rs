//! The `[lms]` section: which course sites the LMS notifier polls, how often,
//! when it reminds, and where its notices go.
//!
//! Like the rest of the config it has two stages: [`RawLms`] as written
//! (unknown keys refused) and [`LmsConfig`] checked, with defaults filled in.
//! A source's token may come from the file or, preferably, from the
//! environment variable `HEARTH_LMS_<NAME>_TOKEN` (the source name in upper
//! case, other characters as `_`), which wins.

use std::fmt::Write;
use std::time::Duration;

use serde::Deserialize;

use super::{ConfigError, Environment, Secret};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLms {
    pub poll_interval_mins: Option<u64>,
    pub remind_before: Option<Vec<String>>,
    pub time_zone: Option<String>,
    pub summarise: Option<bool>,
    pub summary_timeout_secs: Option<u64>,
    pub recurrence_horizon_days: Option<u64>,
    pub announce_past: Option<bool>,
    pub deliver: Option<RawLmsDeliver>,
    pub caldav: Option<String>,
    pub sources: Option<Vec<RawLmsSource>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLmsDeliver {
    pub channel: Option<String>,
    pub to: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLmsSource {
    pub kind: Option<String>,
    pub name: Option<String>,
    pub url: Option<String>,
    pub token: Option<String>,
    pub courses: Option<Vec<String>>,
    pub files: Option<bool>,
    pub files_mb: Option<u64>,
    pub files_poll_mins: Option<u64>,
    pub scores: Option<bool>,
}

/// The checked `[lms]` section.
#[derive(Debug, Clone)]
pub struct LmsConfig {
    pub poll_interval: Duration,
    /// How long before a due date to remind, longest first.
    pub remind_before: Vec<Duration>,
    /// The user's time zone, for due dates in notices and floating iCal times.
    pub time_zone: chrono_tz::Tz,
    /// Ask the model for a one-line summary of each notice.
    pub summarise: bool,
    pub summary_timeout: Duration,
    /// How far ahead a recurring calendar event is expanded into occurrences.
    pub recurrence_horizon: Duration,
    /// On a source's first poll, send a notice for every item already past
    /// too (off: they are recorded silently, with one summary line).
    pub announce_past: bool,
    /// Where notices go; `None` leaves the choice to the daemon.
    pub deliver: Option<LmsTarget>,
    /// A CalDAV collection the deadlines are written into (credentials in
    /// the URL go as HTTP basic auth).
    pub caldav: Option<String>,
    pub sources: Vec<LmsSourceConfig>,
}

impl Default for LmsConfig {
    fn default() -> Self {
        Self {
            poll_interval: Duration::from_secs(30 * 60),
            remind_before: vec![Duration::from_secs(24 * 3600), Duration::from_secs(3600)],
            time_zone: chrono_tz::UTC,
            summarise: false,
            summary_timeout: Duration::from_secs(30),
            recurrence_horizon: Duration::from_secs(14 * 86_400),
            announce_past: false,
            deliver: None,
            caldav: None,
            sources: Vec::new(),
        }
    }
}

/// A chat on a channel: `{channel = "telegram", to = "123456"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LmsTarget {
    pub channel: String,
    pub to: String,
}

/// The kind of site a source polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LmsKind {
    Moodle,
    Canvas,
    Ical,
    Rss,
}

impl LmsKind {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "moodle" => Some(Self::Moodle),
            "canvas" => Some(Self::Canvas),
            "ical" => Some(Self::Ical),
            "rss" => Some(Self::Rss),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Moodle => "moodle",
            Self::Canvas => "canvas",
            Self::Ical => "ical",
            Self::Rss => "rss",
        }
    }
}

/// One `[[lms.sources]]` entry.
#[derive(Debug, Clone)]
pub struct LmsSourceConfig {
    pub kind: LmsKind,
    /// Unique; names the source in notices, the store and the token variable.
    pub name: String,
    /// The site's base URL (Moodle, Canvas) or the feed's URL (iCal, RSS).
    pub url: String,
    pub token: Option<Secret>,
    /// Only items of these courses (id, short or full name, case-insensitive);
    /// empty means all.
    pub courses: Vec<String>,
    /// Fetch the courses' files into the person's documents (by default a site's;
    /// a feed's linked documents only when set).
    pub files: bool,
    /// The most of this source's files kept, in MB.
    pub files_mb: u64,
    /// How often a site's course files are listed (its items every poll).
    pub files_poll: Duration,
    /// Show a released grade's score in the chat; off, a notice says only
    /// that the work was graded, with the feedback.
    pub scores: bool,
}

/// The environment variable that holds a source's token.
pub fn token_variable(source_name: &str) -> String {
    let upper: String = source_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("HEARTH_LMS_{upper}_TOKEN")
}

/// `"24h"`, `"90m"`, `"2d"`, `"45s"` as a duration.
pub fn parse_span(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().ok()?;
    let unit_secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return None,
    };
    n.checked_mul(unit_secs).map(Duration::from_secs)
}

/// The shortest form of a span, as [`parse_span`] reads it.
pub fn format_span(span: Duration) -> String {
    let s = span.as_secs();
    if s.is_multiple_of(86_400) && s >= 2 * 86_400 {
        format!("{}d", s / 86_400)
    } else if s.is_multiple_of(3600) && s > 0 {
        format!("{}h", s / 3600)
    } else if s.is_multiple_of(60) && s > 0 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

impl LmsConfig {
    /// Stage two for `[lms]`.
    pub(super) fn from_raw(raw: Option<RawLms>, env: &Environment) -> Result<Self, ConfigError> {
        let raw = raw.unwrap_or_default();
        let d = Self::default();
        let poll_mins = raw
            .poll_interval_mins
            .unwrap_or(d.poll_interval.as_secs() / 60);
        if !(1..=1440).contains(&poll_mins) {
            return Err(ConfigError::invalid(
                "lms.poll_interval_mins",
                "must be between 1 and 1440",
            ));
        }
        let remind_before = remind_before(raw.remind_before, d.remind_before)?;
        let time_zone = match raw.time_zone.as_deref() {
            None => d.time_zone,
            Some(tz) => tz.parse().map_err(|_| {
                ConfigError::invalid(
                    "lms.time_zone",
                    format!("`{tz}` is not an IANA time zone such as \"Europe/Berlin\""),
                )
            })?,
        };
        let summary_secs = raw
            .summary_timeout_secs
            .unwrap_or(d.summary_timeout.as_secs());
        if !(1..=600).contains(&summary_secs) {
            return Err(ConfigError::invalid(
                "lms.summary_timeout_secs",
                "must be between 1 and 600",
            ));
        }
        let horizon_days = raw
            .recurrence_horizon_days
            .unwrap_or(d.recurrence_horizon.as_secs() / 86_400);
        if !(1..=366).contains(&horizon_days) {
            return Err(ConfigError::invalid(
                "lms.recurrence_horizon_days",
                "must be between 1 and 366",
            ));
        }
        let deliver = raw.deliver.map(target).transpose()?;
        let caldav = raw.caldav.filter(|c| !c.trim().is_empty());
        if caldav.as_deref().is_some_and(|u| {
            reqwest::Url::parse(u).map_or(true, |u| !matches!(u.scheme(), "http" | "https"))
        }) {
            return Err(ConfigError::invalid("lms.caldav", "is not an http(s) URL"));
        }
        let mut sources: Vec<LmsSourceConfig> = Vec::new();
        for (i, s) in raw.sources.unwrap_or_default().into_iter().enumerate() {
            let source = LmsSourceConfig::from_raw(i, s, env)?;
            if sources.iter().any(|o| o.name == source.name) {
                return Err(ConfigError::invalid(
                    &format!("lms.sources[{i}].name"),
                    format!("`{}` names two sources", source.name),
                ));
            }
            sources.push(source);
        }
        Ok(Self {
            poll_interval: Duration::from_secs(poll_mins * 60),
            remind_before,
            time_zone,
            summarise: raw.summarise.unwrap_or(d.summarise),
            summary_timeout: Duration::from_secs(summary_secs),
            recurrence_horizon: Duration::from_secs(horizon_days * 86_400),
            announce_past: raw.announce_past.unwrap_or(d.announce_past),
            deliver,
            caldav,
            sources,
        })
    }

    /// The section as TOML, tokens masked.
    pub(super) fn render(&self, out: &mut String) {
        let spans: Vec<String> = self
            .remind_before
            .iter()
            .map(|d| quote(&format_span(*d)))
            .collect();
        let _ = writeln!(
            out,
            "[lms]\npoll_interval_mins = {}\nremind_before = [{}]\ntime_zone = {}\nsummarise = {}\nsummary_timeout_secs = {}\nrecurrence_horizon_days = {}\nannounce_past = {}",
            self.poll_interval.as_secs() / 60,
            spans.join(", "),
            quote(self.time_zone.name()),
            self.summarise,
            self.summary_timeout.as_secs(),
            self.recurrence_horizon.as_secs() / 86_400,
            self.announce_past
        );
        match &self.deliver {
            Some(t) => {
                let _ = writeln!(
                    out,
                    "deliver = {{ channel = {}, to = {} }}",
                    quote(&t.channel),
                    quote(&t.to)
                );
            }
            None => out.push_str("# deliver: not set\n"),
        }
        match &self.caldav {
            Some(url) => {
                let _ = writeln!(out, "caldav = {}", quote(&super::mask_url(url)));
            }
            None => out.push_str("# caldav: not set\n"),
        }
        if self.sources.is_empty() {
            out.push_str("# sources: none\n");
        }
        for s in &self.sources {
            let courses: Vec<String> = s.courses.iter().map(|c| quote(c)).collect();
            let _ = writeln!(
                out,
                "\n[[lms.sources]]\nkind = \"{}\"\nname = {}\nurl = {}\n{}\ncourses = [{}]\nfiles = {}\nfiles_mb = {}\nfiles_poll_mins = {}\nscores = {}",
                s.kind.as_str(),
                quote(&s.name),
                quote(&super::mask_url(&s.url)),
                match &s.token {
                    Some(t) => format!("token = \"{t}\""),
                    None => "# token: not set".to_string(),
                },
                courses.join(", "),
                s.files,
                s.files_mb,
                s.files_poll.as_secs() / 60,
                s.scores
            );
        }
    }
}

impl LmsSourceConfig {
    /// Stage two for `[[lms.sources]]` number `i`.
    fn from_raw(i: usize, s: RawLmsSource, env: &Environment) -> Result<Self, ConfigError> {
        let key = |field: &str| format!("lms.sources[{i}].{field}");
        let kind_text = s
            .kind
            .ok_or_else(|| ConfigError::invalid(&key("kind"), "is required"))?;
        let kind = LmsKind::parse(&kind_text).ok_or_else(|| {
            ConfigError::invalid(
                &key("kind"),
                format!("`{kind_text}` is not one of moodle, canvas, ical, rss"),
            )
        })?;
        let name = s
            .name
            .filter(|n| !n.trim().is_empty())
            .ok_or_else(|| ConfigError::invalid(&key("name"), "is required"))?;
        let url = s
            .url
            .ok_or_else(|| ConfigError::invalid(&key("url"), "is required"))?;
        match reqwest::Url::parse(&url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => {}
            _ => {
                return Err(ConfigError::invalid(
                    &key("url"),
                    format!("`{url}` is not an http(s) URL"),
                ));
            }
        }
        let token = env
            .var(&token_variable(&name))
            .map(str::to_string)
            .or(s.token.filter(|t| !t.is_empty()))
            .map(Secret::new);
        if token.is_none() && matches!(kind, LmsKind::Moodle | LmsKind::Canvas) {
            return Err(ConfigError::invalid(
                &key("token"),
                format!(
                    "a {} source needs a token (or set {})",
                    kind.as_str(),
                    token_variable(&name)
                ),
            ));
        }
        let files_mb = s.files_mb.unwrap_or(100);
        if !(1..=10_000).contains(&files_mb) {
            return Err(ConfigError::invalid(
                &key("files_mb"),
                format!("{files_mb} is not between 1 and 10000"),
            ));
        }
        let files_poll_mins = s.files_poll_mins.unwrap_or(360);
        if !(1..=10_080).contains(&files_poll_mins) {
            return Err(ConfigError::invalid(
                &key("files_poll_mins"),
                format!("{files_poll_mins} is not between 1 and 10080 (a week)"),
            ));
        }
        Ok(Self {
            kind,
            name,
            url,
            token,
            courses: s.courses.unwrap_or_default(),
            files: s
                .files
                .unwrap_or(matches!(kind, LmsKind::Moodle | LmsKind::Canvas)),
            files_mb,
            files_poll: Duration::from_secs(files_poll_mins * 60),
            scores: s.scores.unwrap_or(false),
        })
    }
}

/// `[lms] remind_before`: spans up to 60 days, longest first.
fn remind_before(
    spans: Option<Vec<String>>,
    default: Vec<Duration>,
) -> Result<Vec<Duration>, ConfigError> {
    let mut remind_before = match spans {
        None => default,
        Some(spans) => spans
            .iter()
            .map(|s| {
                parse_span(s)
                    .filter(|d| d.as_secs() > 0 && d.as_secs() <= 60 * 86_400)
                    .ok_or_else(|| {
                        ConfigError::invalid(
                            "lms.remind_before",
                            format!(
                                "`{s}` is not a span like \"24h\", \"90m\" or \"2d\" (up to 60d)"
                            ),
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    remind_before.sort_by(|a, b| b.cmp(a));
    remind_before.dedup();
    Ok(remind_before)
}

/// `[lms.deliver]`: the chat notices go to.
fn target(t: RawLmsDeliver) -> Result<LmsTarget, ConfigError> {
    let channel = t
        .channel
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| ConfigError::invalid("lms.deliver.channel", "must name a channel"))?;
    let to =
        t.to.filter(|c| !c.trim().is_empty())
            .ok_or_else(|| ConfigError::invalid("lms.deliver.to", "must name a chat"))?;
    Ok(LmsTarget { channel, to })
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::Config;

    fn parse(text: &str, env: &Environment) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/c.toml"), env)
    }

    #[test]
    fn sources_parse_and_the_environment_supplies_tokens() {
        let env =
            Environment::with_home("/h").set("HEARTH_LMS_MY_UNI_TOKEN", "env-token-0123456789");
        let c = parse(
            "[lms]\npoll_interval_mins = 15\nremind_before = [\"1h\", \"2d\"]\ntime_zone = \"Europe/Berlin\"\ndeliver = { channel = \"telegram\", to = \"42\" }\n[[lms.sources]]\nkind = \"moodle\"\nname = \"my-uni\"\nurl = \"https://moodle.example.edu\"\ntoken = \"file-token\"\ncourses = [\"CS101\"]\n[[lms.sources]]\nkind = \"ical\"\nname = \"cal\"\nurl = \"https://example.edu/cal.ics\"\n",
            &env,
        )
        .unwrap();
        let l = &c.lms;
        assert_eq!(l.poll_interval, Duration::from_secs(900));
        assert_eq!(
            l.remind_before,
            vec![Duration::from_secs(2 * 86_400), Duration::from_secs(3600)]
        );
        assert_eq!(l.time_zone, chrono_tz::Europe::Berlin);
        assert_eq!(l.sources.len(), 2);
        assert_eq!(
            l.sources[0].token.as_ref().unwrap().expose(),
            "env-token-0123456789"
        );
        assert_eq!(l.sources[0].courses, vec!["CS101".to_string()]);
        assert!(l.sources[1].token.is_none());
        // A site's files are fetched unless turned off; a feed's links only when asked.
        assert!(l.sources[0].files && !l.sources[1].files);
        assert_eq!(l.sources[0].files_mb, 100);
        assert_eq!(l.sources[0].files_poll, Duration::from_secs(6 * 3600));
        assert_eq!(l.deliver.as_ref().unwrap().to, "42");
        let shown = c.render();
        assert!(shown.contains("[[lms.sources]]"), "{shown}");
        assert!(!shown.contains("env-token"), "{shown}");
    }

    #[test]
    fn bad_values_name_their_key() {
        let env = Environment::with_home("/h");
        let cases = [
            ("[lms]\nremind_before = [\"soon\"]\n", "lms.remind_before"),
            ("[lms]\ntime_zone = \"Mars/Olympus\"\n", "lms.time_zone"),
            ("[lms]\npoll_interval_mins = 0\n", "lms.poll_interval_mins"),
            (
                "[[lms.sources]]\nkind = \"blackboard\"\nname = \"x\"\nurl = \"https://x\"\n",
                "lms.sources[0].kind",
            ),
            (
                "[[lms.sources]]\nkind = \"canvas\"\nname = \"x\"\nurl = \"https://x\"\n",
                "lms.sources[0].token",
            ),
            (
                "[[lms.sources]]\nkind = \"rss\"\nname = \"x\"\nurl = \"ftp://x\"\n",
                "lms.sources[0].url",
            ),
            (
                "[[lms.sources]]\nkind = \"rss\"\nname = \"x\"\nurl = \"https://x\"\nfiles_mb = 0\n",
                "lms.sources[0].files_mb",
            ),
            (
                "[[lms.sources]]\nkind = \"rss\"\nname = \"x\"\nurl = \"https://x\"\ncolor = 1\n",
                "color",
            ),
        ];
        for (text, key) in cases {
            let e = parse(text, &env).unwrap_err().to_string();
            assert!(e.contains(key), "{text}: {e}");
        }
    }

    #[test]
    fn spans_round_trip() {
        for s in ["24h", "1h", "90m", "2d", "45s"] {
            assert_eq!(format_span(parse_span(s).unwrap()), s);
        }
        assert_eq!(parse_span("1 h"), None);
        assert_eq!(parse_span("h"), None);
    }
}
