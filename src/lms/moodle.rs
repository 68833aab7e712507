//! Moodle over its Web Services REST API (`/webservice/rest/server.php`).
//!
//! Three reads make a poll: calendar action events by time sort (what is due),
//! assignments (with their descriptions), and the discussions of each course's
//! news forum (announcements). Moodle reports failures as HTTP 200 with an
//! `exception`/`errorcode` body; `invalidtoken` and its kin are auth errors.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use super::item::{course_allowed, plain_text};
use super::json::{array, id_of, str_of, unix_of};
use super::{ItemKind, LmsError, LmsItem, LmsSource, http};
use crate::config::LmsSourceConfig;
use futures::future::BoxFuture;

/// Error codes that mean the token is wrong, expired or not allowed.
const AUTH_CODES: &[&str] = &[
    "invalidtoken",
    "accessexception",
    "invalidlogin",
    "servicerequireslogin",
    "usernotfullysetup",
];

/// How far back calendar events are asked for.
const EVENTS_LOOKBACK_DAYS: i64 = 7;
/// Discussions read per news forum.
const DISCUSSIONS_PER_FORUM: u32 = 20;

pub struct Moodle {
    config: LmsSourceConfig,
    http: reqwest::Client,
}

/// A course as Moodle names it.
#[derive(Default, Clone)]
struct Course {
    id: String,
    short: String,
    full: String,
}

impl Moodle {
    pub fn new(config: LmsSourceConfig, http: reqwest::Client) -> Self {
        Self { config, http }
    }

    fn base(&self) -> &str {
        self.config.url.trim_end_matches('/')
    }

    /// One web-service function call.
    async fn call(&self, function: &str, params: &[(&str, String)]) -> Result<Value, LmsError> {
        let token = self
            .config
            .token
            .as_ref()
            .map(|t| t.expose().to_string())
            .unwrap_or_default();
        let mut form: Vec<(&str, String)> = vec![
            ("wstoken", token),
            ("wsfunction", function.to_string()),
            ("moodlewsrestformat", "json".to_string()),
        ];
        form.extend(params.iter().cloned());
        let url = format!("{}/webservice/rest/server.php", self.base());
        let response = http::send(self.http.post(url).form(&form)).await?;
        let body = http::json(response).await?;
        if let Some(code) = body
            .get("errorcode")
            .or_else(|| body.get("exception"))
            .and_then(Value::as_str)
        {
            let message = str_of(&body, "message").unwrap_or(code);
            return Err(if AUTH_CODES.contains(&code) {
                LmsError::Auth(format!("Moodle {code}: {message}"))
            } else {
                LmsError::Remote(format!("{function}: {code}: {message}"))
            });
        }
        Ok(body)
    }

    fn allowed(&self, course: &Course) -> bool {
        course_allowed(
            &self.config.courses,
            &[&course.id, &course.short, &course.full],
        )
    }

    async fn fetch(&self, now: DateTime<Utc>) -> Result<Vec<LmsItem>, LmsError> {
        let mut courses: HashMap<String, Course> = HashMap::new();
        let mut items = Vec::new();

        let assignments = self.call("mod_assign_get_assignments", &[]).await?;
        let mut assignment_ids = HashSet::new();
        for c in array(&assignments, "courses", "mod_assign_get_assignments")? {
            let course = Course {
                id: id_of(c, "id").unwrap_or_default(),
                short: str_of(c, "shortname").unwrap_or_default().to_string(),
                full: str_of(c, "fullname").unwrap_or_default().to_string(),
            };
            courses.insert(course.id.clone(), course.clone());
            for a in c
                .get("assignments")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(id) = id_of(a, "id") else { continue };
                assignment_ids.insert(id.clone());
                if !self.allowed(&course) {
                    continue;
                }
                let mut item = LmsItem::new(
                    &self.config.name,
                    format!("assign:{id}"),
                    ItemKind::Assignment,
                    str_of(a, "name").unwrap_or("(untitled assignment)"),
                );
                item.course = Some(course.full.clone()).filter(|f| !f.is_empty());
                item.url = id_of(a, "cmid")
                    .map(|cm| format!("{}/mod/assign/view.php?id={cm}", self.base()));
                item.due = unix_of(a, "duedate");
                item.updated = unix_of(a, "timemodified");
                item.detail = str_of(a, "intro").map(plain_text).filter(|t| !t.is_empty());
                items.push(item);
            }
        }

        let from = (now - Duration::days(EVENTS_LOOKBACK_DAYS)).timestamp();
        let events = self
            .call(
                "core_calendar_get_action_events_by_timesort",
                &[
                    ("timesortfrom", from.to_string()),
                    ("limitnum", "50".into()),
                ],
            )
            .await?;
        for e in array(
            &events,
            "events",
            "core_calendar_get_action_events_by_timesort",
        )? {
            let Some(id) = id_of(e, "id") else { continue };
            let module = str_of(e, "modulename").unwrap_or("");
            let instance = id_of(e, "instance").unwrap_or_default();
            if module == "assign" && assignment_ids.contains(&instance) {
                continue; // the assignment item says it, with more detail
            }
            let course = e.get("course").map(|c| Course {
                id: id_of(c, "id").unwrap_or_default(),
                short: str_of(c, "shortname").unwrap_or_default().to_string(),
                full: str_of(c, "fullname").unwrap_or_default().to_string(),
            });
            if let Some(c) = &course {
                if !self.allowed(c) {
                    continue;
                }
                courses.entry(c.id.clone()).or_insert_with(|| c.clone());
            }
            let kind = match module {
                "assign" => ItemKind::Assignment,
                "quiz" => ItemKind::Quiz,
                _ => ItemKind::Event,
            };
            let mut item = LmsItem::new(
                &self.config.name,
                format!("event:{id}"),
                kind,
                str_of(e, "activityname")
                    .or_else(|| str_of(e, "name"))
                    .unwrap_or("(untitled event)"),
            );
            item.course = course.map(|c| c.full).filter(|f| !f.is_empty());
            item.url = str_of(e, "url").map(str::to_string);
            item.due = unix_of(e, "timesort").or_else(|| unix_of(e, "timestart"));
            item.updated = unix_of(e, "timemodified");
            items.push(item);
        }

        let forums = self.call("mod_forum_get_forums_by_courses", &[]).await?;
        let forums = super::json::as_array(&forums, "mod_forum_get_forums_by_courses")?;
        for forum in forums {
            if str_of(forum, "type") != Some("news") {
                continue;
            }
            let Some(forum_id) = id_of(forum, "id") else {
                continue;
            };
            let course_id = id_of(forum, "course").unwrap_or_default();
            let course = courses.get(&course_id).cloned().unwrap_or(Course {
                id: course_id.clone(),
                ..Course::default()
            });
            if !self.allowed(&course) {
                continue;
            }
            let discussions = self
                .call(
                    "mod_forum_get_forum_discussions",
                    &[
                        ("forumid", forum_id),
                        ("sortorder", "-1".into()),
                        ("page", "0".into()),
                        ("perpage", DISCUSSIONS_PER_FORUM.to_string()),
                    ],
                )
                .await?;
            for d in array(
                &discussions,
                "discussions",
                "mod_forum_get_forum_discussions",
            )? {
                let Some(id) = id_of(d, "discussion").or_else(|| id_of(d, "id")) else {
                    continue;
                };
                let mut item = LmsItem::new(
                    &self.config.name,
                    format!("discussion:{id}"),
                    ItemKind::Announcement,
                    str_of(d, "subject")
                        .or_else(|| str_of(d, "name"))
                        .unwrap_or("(untitled announcement)"),
                );
                item.course = Some(course.full.clone()).filter(|f| !f.is_empty());
                item.url = Some(format!("{}/mod/forum/discuss.php?d={id}", self.base()));
                item.updated = unix_of(d, "timemodified").or_else(|| unix_of(d, "created"));
                item.detail = str_of(d, "message")
                    .map(plain_text)
                    .filter(|t| !t.is_empty());
                items.push(item);
            }
        }
        Ok(items)
    }
}

impl LmsSource for Moodle {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn poll(&self, now: DateTime<Utc>) -> BoxFuture<'_, Result<Vec<LmsItem>, LmsError>> {
        Box::pin(self.fetch(now))
    }
}
