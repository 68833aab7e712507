//! Moodle over its Web Services REST API (`/webservice/rest/server.php`).
//!
//! A poll checks the token (`core_webservice_get_site_info`), then reads the
//! assignments (with their descriptions), the user's calendar action events
//! by time sort (paged with `aftereventid`; the only place a user's
//! extension or group override shows, so their date wins), and the
//! discussions of each course's news forum (announcements). Moodle drops an
//! assignment's action event once it is submitted, so an upcoming
//! assignment without one counts as handed in and gets no reminders.
//! Then the grades released and the quizzes open in every course the user
//! is enrolled in (`moodle_grades.rs`), and with `files` on, each course's
//! files (`moodle_files.rs`).
//!
//! Moodle reports failures as HTTP 200 with an `exception`/`errorcode`
//! body. Only on the site-info call do `invalidtoken`/`accessexception` mean
//! a bad token; a later function the site refuses is skipped with a
//! one-time warning, and the rest of the site still arrives.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use super::item::{course_allowed, plain_text};
use super::json::{array, id_of, str_of, unix_of};
use super::{ItemKind, LmsError, LmsItem, LmsSource, http};
use crate::config::LmsSourceConfig;
use futures::future::BoxFuture;

#[path = "moodle_files.rs"]
mod files;
#[path = "moodle_grades.rs"]
mod grades;

/// Error codes of the site-info call that mean the token is wrong, expired
/// or not allowed.
const AUTH_CODES: &[&str] = &[
    "invalidtoken",
    "accessexception",
    "invalidlogin",
    "servicerequireslogin",
    "usernotfullysetup",
];

/// How far back calendar events are asked for.
const EVENTS_LOOKBACK_DAYS: i64 = 7;
/// Action events per page: Moodle's own maximum.
const EVENTS_PER_PAGE: usize = 50;
/// Pages of action events read at most.
const MAX_EVENT_PAGES: usize = 100;
/// Discussions read per news forum.
const DISCUSSIONS_PER_FORUM: u32 = 20;

pub struct Moodle {
    config: LmsSourceConfig,
    http: reqwest::Client,
    /// Functions the site refused, each warned about once.
    warned: Mutex<BTreeSet<String>>,
    /// What the last poll skipped, for `hearth lms status`.
    notes: Mutex<Vec<String>>,
    files_listed: super::LastListed,
}

/// A course as Moodle names it.
#[derive(Default, Clone)]
struct Course {
    id: String,
    short: String,
    full: String,
}

impl Course {
    fn of(value: &Value) -> Self {
        Self {
            id: id_of(value, "id").unwrap_or_default(),
            short: str_of(value, "shortname").unwrap_or_default().to_string(),
            full: str_of(value, "fullname").unwrap_or_default().to_string(),
        }
    }
}

/// A Moodle error body: its code and message.
struct Refusal {
    code: String,
    message: String,
}

impl Moodle {
    pub fn new(config: LmsSourceConfig, http: reqwest::Client) -> Self {
        Self {
            config,
            http,
            warned: Mutex::default(),
            notes: Mutex::default(),
            files_listed: super::LastListed::default(),
        }
    }

    fn base(&self) -> &str {
        self.config.url.trim_end_matches('/')
    }

    /// One web-service function call: the body, or the site's refusal.
    async fn call_raw(
        &self,
        function: &str,
        params: &[(&str, String)],
    ) -> Result<Result<Value, Refusal>, LmsError> {
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
        match body
            .get("errorcode")
            .or_else(|| body.get("exception"))
            .and_then(Value::as_str)
        {
            Some(code) => Ok(Err(Refusal {
                code: code.to_string(),
                message: str_of(&body, "message").unwrap_or(code).to_string(),
            })),
            None => Ok(Ok(body)),
        }
    }

    /// A function the poll can do without: `None` when the site refuses it
    /// (warned once, noted each poll). An expired token still fails.
    async fn optional(
        &self,
        function: &str,
        params: &[(&str, String)],
        notes: &mut BTreeSet<String>,
    ) -> Result<Option<Value>, LmsError> {
        match self.call_raw(function, params).await? {
            Ok(body) => Ok(Some(body)),
            Err(r) if r.code == "invalidtoken" => {
                Err(LmsError::Auth(format!("Moodle {}: {}", r.code, r.message)))
            }
            Err(r) => {
                // Moodle's access message runs to seven numbered reasons.
                let mut why: String = r.message.chars().take(80).collect();
                if why.len() < r.message.len() {
                    why.push('…');
                }
                let note = format!(
                    "skipped {function}: the site refuses it ({}: {why}); fix: ask the site's admin to add it to the web service",
                    r.code
                );
                let first = self
                    .warned
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(function.to_string());
                if first {
                    tracing::warn!(source = %self.config.name, "Moodle: {note}");
                }
                notes.insert(note);
                Ok(None)
            }
        }
    }

    fn allowed(&self, course: &Course) -> bool {
        course_allowed(
            &self.config.courses,
            &[&course.id, &course.short, &course.full],
        )
    }

    async fn fetch(&self, now: DateTime<Utc>) -> Result<Vec<LmsItem>, LmsError> {
        let user = self.check_site().await?;
        let mut notes = BTreeSet::new();
        let mut courses: HashMap<String, Course> = HashMap::new();
        // Assignments by instance id, in the order listed.
        let mut assignments: Vec<(String, LmsItem)> = Vec::new();
        let mut items = Vec::new();

        self.assignments(&mut courses, &mut assignments, &mut notes)
            .await?;

        let from = now - Duration::days(EVENTS_LOOKBACK_DAYS);
        let events = self.action_events(from, &mut notes).await?;
        if let Some(events) = &events {
            items = self.event_items(events, from, &mut courses, &mut assignments);
        }
        let mut all: Vec<LmsItem> = assignments.into_iter().map(|(_, a)| a).collect();
        all.append(&mut items);
        let mut items = all;
        self.announcements(&courses, &mut items, &mut notes).await?;
        self.enrolled(user.as_deref(), &mut courses, &mut notes)
            .await?;
        items.extend(self.grades(user.as_deref(), &courses, &mut notes).await?);
        let closes = grades::quiz_closes(events.as_deref().unwrap_or_default());
        items.extend(
            self.open_quizzes(&courses, &closes, now, &mut notes)
                .await?,
        );
        if self.config.files {
            let (files, noted) = self.course_files(&courses, now).await?;
            items.extend(files);
            notes.extend(noted);
        }
        *self.notes.lock().unwrap_or_else(|e| e.into_inner()) = notes.into_iter().collect();
        Ok(items)
    }

    /// The courses the user is enrolled in, besides those seen, by
    /// `core_enrol_get_users_courses`.
    async fn enrolled(
        &self,
        user: Option<&str>,
        courses: &mut HashMap<String, Course>,
        notes: &mut BTreeSet<String>,
    ) -> Result<(), LmsError> {
        const ENROLLED: &str = "core_enrol_get_users_courses";
        let Some(user) = user else { return Ok(()) };
        let params = [("userid", user.to_string())];
        if let Some(body) = self.optional(ENROLLED, &params, notes).await? {
            for c in super::json::as_array(&body, ENROLLED)? {
                let c = Course::of(c);
                courses.entry(c.id.clone()).or_insert(c);
            }
        }
        Ok(())
    }

    /// The site answers the token (with the user's id), or says why not.
    async fn check_site(&self) -> Result<Option<String>, LmsError> {
        match self.call_raw("core_webservice_get_site_info", &[]).await? {
            Ok(info) => Ok(id_of(&info, "userid")),
            Err(r) => {
                let what = format!("Moodle {}: {}", r.code, r.message);
                Err(if AUTH_CODES.contains(&r.code.as_str()) {
                    LmsError::Auth(what)
                } else {
                    LmsError::Remote(format!("core_webservice_get_site_info: {what}"))
                })
            }
        }
    }

    /// The assignments of the allowed courses, by instance id in the order
    /// listed; every course seen goes into `courses`.
    async fn assignments(
        &self,
        courses: &mut HashMap<String, Course>,
        assignments: &mut Vec<(String, LmsItem)>,
        notes: &mut BTreeSet<String>,
    ) -> Result<(), LmsError> {
        if let Some(body) = self
            .optional("mod_assign_get_assignments", &[], notes)
            .await?
        {
            for c in array(&body, "courses", "mod_assign_get_assignments")? {
                let course = Course::of(c);
                courses.insert(course.id.clone(), course.clone());
                if !self.allowed(&course) {
                    continue;
                }
                for a in c
                    .get("assignments")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let Some(id) = id_of(a, "id") else { continue };
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
                    assignments.push((id, item));
                }
            }
        }
        Ok(())
    }

    /// Items from the action events since `from`: quizzes and events, and
    /// the user's own due dates of `assignments` (an assignment without an
    /// event any more was submitted).
    fn event_items(
        &self,
        events: &[Value],
        from: DateTime<Utc>,
        courses: &mut HashMap<String, Course>,
        assignments: &mut [(String, LmsItem)],
    ) -> Vec<LmsItem> {
        let mut items = Vec::new();
        let mut with_event = BTreeSet::new();
        for e in events {
            let course = e.get("course").map(Course::of);
            if let Some(c) = &course {
                if !self.allowed(c) {
                    continue;
                }
                courses.entry(c.id.clone()).or_insert_with(|| c.clone());
            }
            let module = str_of(e, "modulename").unwrap_or("");
            let instance = id_of(e, "instance").unwrap_or_default();
            let due = unix_of(e, "timesort").or_else(|| unix_of(e, "timestart"));
            if module == "assign" {
                with_event.insert(instance.clone());
                if let Some((_, a)) = assignments.iter_mut().find(|(i, _)| *i == instance) {
                    // The user's own date: an extension or an override.
                    a.due = due.or(a.due);
                    continue;
                }
            }
            let Some(id) = id_of(e, "id") else { continue };
            let (id, kind) = match module {
                "assign" => (format!("assign:{instance}"), ItemKind::Assignment),
                "quiz" => (format!("event:{id}"), ItemKind::Quiz),
                _ => (format!("event:{id}"), ItemKind::Event),
            };
            let mut item = LmsItem::new(
                &self.config.name,
                id,
                kind,
                str_of(e, "activityname")
                    .or_else(|| str_of(e, "name"))
                    .unwrap_or("(untitled event)"),
            );
            item.course = course.map(|c| c.full).filter(|f| !f.is_empty());
            item.url = str_of(e, "url").map(str::to_string);
            item.due = due;
            item.updated = unix_of(e, "timemodified");
            items.push(item);
        }
        for (instance, a) in assignments.iter_mut() {
            // Submitted: Moodle lists no action event for it any more.
            a.done = !with_event.contains(instance) && a.due.is_some_and(|d| d > from);
        }
        items
    }

    /// Every action event from `from` on, page by page; `None` when the site
    /// refuses the function.
    async fn action_events(
        &self,
        from: DateTime<Utc>,
        notes: &mut BTreeSet<String>,
    ) -> Result<Option<Vec<Value>>, LmsError> {
        const FUNCTION: &str = "core_calendar_get_action_events_by_timesort";
        let mut events: Vec<Value> = Vec::new();
        for _ in 0..MAX_EVENT_PAGES {
            let mut params = vec![
                ("timesortfrom", from.timestamp().to_string()),
                ("limitnum", EVENTS_PER_PAGE.to_string()),
            ];
            if let Some(last) = events.last().and_then(|e| id_of(e, "id")) {
                params.push(("aftereventid", last));
            }
            let Some(body) = self.optional(FUNCTION, &params, notes).await? else {
                return Ok(None);
            };
            let page = array(&body, "events", FUNCTION)?;
            let full = page.len() >= EVENTS_PER_PAGE;
            events.extend(page.iter().cloned());
            if !full {
                break;
            }
        }
        Ok(Some(events))
    }

    /// The discussions of each course's news forum.
    async fn announcements(
        &self,
        courses: &HashMap<String, Course>,
        items: &mut Vec<LmsItem>,
        notes: &mut BTreeSet<String>,
    ) -> Result<(), LmsError> {
        let Some(forums) = self
            .optional("mod_forum_get_forums_by_courses", &[], notes)
            .await?
        else {
            return Ok(());
        };
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
            let params = [
                ("forumid", forum_id),
                ("sortorder", "-1".into()),
                ("page", "0".into()),
                ("perpage", DISCUSSIONS_PER_FORUM.to_string()),
            ];
            let Some(discussions) = self
                .optional("mod_forum_get_forum_discussions", &params, notes)
                .await?
            else {
                continue;
            };
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
        Ok(())
    }
}

impl LmsSource for Moodle {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn poll(&self, now: DateTime<Utc>) -> BoxFuture<'_, Result<Vec<LmsItem>, LmsError>> {
        Box::pin(self.fetch(now))
    }

    fn notes(&self) -> Vec<String> {
        self.notes.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn download<'a>(
        &'a self,
        file: &'a crate::CourseFile,
        max: u64,
    ) -> BoxFuture<'a, Result<Vec<u8>, LmsError>> {
        let token = self.config.token.as_ref().map(|t| t.expose()).unwrap_or("");
        Box::pin(files::download(&self.http, self.base(), token, file, max))
    }
}
