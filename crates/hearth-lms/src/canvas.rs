//! Canvas over its REST API with a bearer token.
//!
//! A poll reads the active courses, their announcements, and the planner
//! items (assignments, quizzes, events with their due dates). Every list is
//! paginated through the `Link` header's `rel="next"`, followed only on the
//! site's own origin so the token never travels elsewhere. Then each
//! course's released grades and open quizzes (`canvas_grades.rs`), and
//! with `files` on, its files (`canvas_files.rs`).

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use reqwest::Url;
use serde_json::Value;

use super::item::{course_allowed, plain_text};
use super::json::{as_array, id_of, iso_of, str_of};
use super::{ItemKind, LmsError, LmsItem, LmsSource, http};
use crate::config::LmsSourceConfig;
use futures::future::BoxFuture;

/// Pages followed per list, at most.
const MAX_PAGES: usize = 50;
/// How far back announcements and planner items are asked for.
const LOOKBACK_DAYS: i64 = 14;

pub struct Canvas {
    config: LmsSourceConfig,
    http: reqwest::Client,
    /// What the last poll skipped, for `hearth lms status`.
    notes: Mutex<Vec<String>>,
    files_listed: super::LastListed,
}

struct Course {
    name: String,
    code: String,
}

impl Canvas {
    pub fn new(config: LmsSourceConfig, http: reqwest::Client) -> Self {
        Self {
            config,
            http,
            notes: Mutex::default(),
            files_listed: super::LastListed::default(),
        }
    }

    pub(super) fn base(&self) -> &str {
        self.config.url.trim_end_matches('/')
    }

    pub(super) fn name_of(&self) -> &str {
        &self.config.name
    }

    fn token(&self) -> &str {
        self.config.token.as_ref().map(|t| t.expose()).unwrap_or("")
    }

    /// One object, such as a file's details.
    pub(super) async fn get(&self, path: &str) -> Result<Value, LmsError> {
        let url = format!("{}{path}", self.base());
        http::json(http::send(self.http.get(&url).bearer_auth(self.token())).await?).await
    }

    /// Every element of a paginated list.
    pub(super) async fn list(&self, path_and_query: &str) -> Result<Vec<Value>, LmsError> {
        let token = self.token().to_string();
        Url::parse(self.base()).map_err(|e| LmsError::Malformed(format!("the source URL: {e}")))?;
        let mut next = Some(format!("{}{path_and_query}", self.base()));
        let mut all = Vec::new();
        for _ in 0..MAX_PAGES {
            let Some(url) = next.take() else { break };
            let response = http::send(self.http.get(&url).bearer_auth(&token)).await?;
            next = response
                .headers()
                .get_all(reqwest::header::LINK)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .find_map(next_link)
                .filter(|n| http::same_origin(self.base(), n));
            let page = http::json(response).await?;
            all.extend(as_array(&page, path_and_query)?.iter().cloned());
        }
        Ok(all)
    }

    async fn fetch(&self, now: DateTime<Utc>) -> Result<Vec<LmsItem>, LmsError> {
        let since =
            (now - Duration::days(LOOKBACK_DAYS)).to_rfc3339_opts(SecondsFormat::Secs, true);
        let courses = self.courses().await?;
        let mut items = Vec::new();
        let mut notes = Vec::new();
        for a in self.announcements(&courses, &since, &mut notes).await? {
            let Some(id) = id_of(&a, "id") else { continue };
            let course_id = str_of(&a, "context_code")
                .and_then(|c| c.strip_prefix("course_"))
                .unwrap_or_default();
            let mut item = LmsItem::new(
                &self.config.name,
                format!("announcement:{id}"),
                ItemKind::Announcement,
                str_of(&a, "title").unwrap_or("(untitled announcement)"),
            );
            item.course = courses.get(course_id).map(|c| c.name.clone());
            item.url = str_of(&a, "html_url").map(|u| self.absolute(u));
            item.updated = iso_of(&a, "posted_at");
            item.detail = str_of(&a, "message")
                .map(plain_text)
                .filter(|t| !t.is_empty());
            items.push(item);
        }
        items.extend(self.files(&courses, &mut notes, now).await?);
        let mut ids: Vec<&String> = courses.keys().collect();
        ids.sort();
        for id in ids {
            let name = &courses[id].name;
            items.extend(super::canvas_grades::of_course(self, id, name, now, &mut notes).await?);
        }
        *self.notes.lock().unwrap_or_else(|e| e.into_inner()) = notes;
        let path = format!("/api/v1/planner/items?per_page=100&start_date={since}");
        for p in self.list(&path).await? {
            let kind = match str_of(&p, "plannable_type").unwrap_or("") {
                "assignment" => ItemKind::Assignment,
                "quiz" => ItemKind::Quiz,
                "announcement" => continue, // read above, with their text
                _ => ItemKind::Event,
            };
            let (Some(ptype), Some(pid)) =
                (str_of(&p, "plannable_type"), id_of(&p, "plannable_id"))
            else {
                continue;
            };
            let course_id = id_of(&p, "course_id");
            let course = match &course_id {
                Some(id) => match courses.get(id) {
                    Some(c) => Some(c.name.clone()),
                    None => continue, // filtered out, or a course no longer active
                },
                None => str_of(&p, "context_name").map(str::to_string),
            };
            let plannable = p.get("plannable").cloned().unwrap_or(Value::Null);
            let mut item = LmsItem::new(
                &self.config.name,
                format!("{ptype}:{pid}"),
                kind,
                str_of(&plannable, "title")
                    .or_else(|| str_of(&plannable, "name"))
                    .unwrap_or("(untitled)"),
            );
            item.course = course;
            item.url = str_of(&p, "html_url").map(|u| self.absolute(u));
            item.due = iso_of(&plannable, "due_at").or_else(|| iso_of(&p, "plannable_date"));
            item.updated = iso_of(&plannable, "updated_at");
            item.done = done(&p);
            items.push(item);
        }
        Ok(items)
    }

    /// The user's active courses the config allows, by id.
    async fn courses(&self) -> Result<HashMap<String, Course>, LmsError> {
        let mut courses = HashMap::new();
        for c in self
            .list("/api/v1/courses?enrollment_state=active&per_page=100")
            .await?
        {
            let Some(id) = id_of(&c, "id") else { continue };
            let course = Course {
                name: str_of(&c, "name").unwrap_or_default().to_string(),
                code: str_of(&c, "course_code").unwrap_or_default().to_string(),
            };
            if course_allowed(&self.config.courses, &[&id, &course.name, &course.code]) {
                courses.insert(id, course);
            }
        }
        Ok(courses)
    }

    /// The announcements of every course: one call for all of them, and if
    /// that is refused (401/403: a course the user may not read), one call
    /// per course, so a closed course loses only itself.
    async fn announcements(
        &self,
        courses: &HashMap<String, Course>,
        since: &str,
        notes: &mut Vec<String>,
    ) -> Result<Vec<Value>, LmsError> {
        let mut ids: Vec<&String> = courses.keys().collect();
        ids.sort();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let path = |ids: &[&String]| {
            let contexts: String = ids
                .iter()
                .map(|id| format!("&context_codes[]=course_{id}"))
                .collect();
            format!("/api/v1/announcements?per_page=50&start_date={since}{contexts}")
        };
        match self.list(&path(&ids)).await {
            // The courses call just worked, so the token is good.
            Err(LmsError::Auth(_)) => {}
            other => return other,
        }
        let mut all = Vec::new();
        for id in ids {
            match self.list(&path(&[id])).await {
                Ok(list) => all.extend(list),
                Err(LmsError::Auth(why)) => {
                    let name = courses.get(id).map_or(id.as_str(), |c| c.name.as_str());
                    tracing::warn!(source = %self.config.name, course = %name, "Canvas refuses its announcements: {why}");
                    notes.push(format!(
                        "skipped the announcements of {name}: Canvas refuses them ({why})"
                    ));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(all)
    }

    /// The files of every course, when the source fetches them.
    async fn files(
        &self,
        courses: &HashMap<String, Course>,
        notes: &mut Vec<String>,
        now: DateTime<Utc>,
    ) -> Result<Vec<LmsItem>, LmsError> {
        if !self.config.files {
            return Ok(Vec::new());
        }
        if let Some((items, noted)) = self.files_listed.fresh(now, self.config.files_poll) {
            notes.extend(noted);
            return Ok(items);
        }
        let (mut items, mut noted) = (Vec::new(), Vec::new());
        let mut ids: Vec<&String> = courses.keys().collect();
        ids.sort();
        for id in ids {
            let name = &courses[id].name;
            items.extend(super::canvas_files::of_course(self, id, name, &mut noted).await?);
        }
        self.files_listed.keep(now, &items, &noted);
        notes.extend(noted);
        Ok(items)
    }

    /// Planner URLs are relative to the site.
    fn absolute(&self, url: &str) -> String {
        if url.starts_with('/') {
            format!("{}{url}", self.base())
        } else {
            url.to_string()
        }
    }
}

impl LmsSource for Canvas {
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
        Box::pin(super::canvas_files::download(
            &self.http,
            self.base(),
            self.token(),
            file,
            max,
        ))
    }
}

/// Handed in, excused, or marked done in the planner: no reminders.
fn done(planner_item: &Value) -> bool {
    let submissions = planner_item.get("submissions");
    let flag = |v: Option<&Value>, key: &str| {
        v.and_then(|v| v.get(key))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    flag(submissions, "submitted")
        || flag(submissions, "excused")
        || flag(planner_item.get("planner_override"), "marked_complete")
}

/// The `rel="next"` target of a `Link` header value.
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let mut pieces = part.split(';');
        let target = pieces.next()?.trim();
        let url = target.strip_prefix('<')?.strip_suffix('>')?;
        pieces
            .any(|p| {
                let p = p.trim();
                p == "rel=\"next\"" || p == "rel=next"
            })
            .then(|| url.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_header_next() {
        let h = "<https://c.example/api/v1/courses?page=1>; rel=\"current\", <https://c.example/api/v1/courses?page=2&per_page=10>; rel=\"next\", <https://c.example/api/v1/courses?page=5>; rel=\"last\"";
        assert_eq!(
            next_link(h).as_deref(),
            Some("https://c.example/api/v1/courses?page=2&per_page=10")
        );
        assert_eq!(next_link("<https://c.example/x>; rel=\"last\""), None);
    }

    #[test]
    fn submitted_excused_or_marked_complete_is_done() {
        let item = |v: serde_json::Value| done(&v);
        assert!(item(
            serde_json::json!({"submissions": {"submitted": true}})
        ));
        assert!(item(serde_json::json!({"submissions": {"excused": true}})));
        assert!(item(
            serde_json::json!({"submissions": false, "planner_override": {"marked_complete": true}})
        ));
        assert!(!item(
            serde_json::json!({"submissions": {"submitted": false, "missing": true}, "planner_override": null})
        ));
        assert!(!item(serde_json::json!({"submissions": false})));
    }

    #[test]
    fn next_is_followed_only_on_the_same_origin() {
        let origin = "https://c.example";
        assert!(http::same_origin(
            origin,
            "https://c.example/api/v1/x?page=2"
        ));
        assert!(!http::same_origin(origin, "https://evil.example/api/v1/x"));
        assert!(!http::same_origin(origin, "http://c.example/api/v1/x"));
    }
}
