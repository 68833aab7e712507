//! Moodle's course files: the `resource` and `folder` modules of
//! `core_course_get_contents`, and their download through
//! `webservice/pluginfile.php` with the token, on the site's own origin only.

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{Course, Moodle};
use crate::json::{id_of, str_of, unix_of};
use crate::{CourseFile, ItemKind, LmsError, LmsItem, http};

impl Moodle {
    /// The course files and the notes their listing made: listed again
    /// every `files_poll`, the last listing's between.
    pub(super) async fn course_files(
        &self,
        courses: &HashMap<String, Course>,
        now: DateTime<Utc>,
    ) -> Result<(Vec<LmsItem>, Vec<String>), LmsError> {
        if let Some(listed) = self.files_listed.fresh(now, self.config.files_poll) {
            return Ok(listed);
        }
        let (mut files, mut noted) = (Vec::new(), BTreeSet::new());
        self.files(courses, &mut files, &mut noted).await?;
        let noted: Vec<String> = noted.into_iter().collect();
        self.files_listed.keep(now, &files, &noted);
        Ok((files, noted))
    }

    /// The files of every allowed course (the user's enrolled courses
    /// among them).
    async fn files(
        &self,
        courses: &HashMap<String, Course>,
        items: &mut Vec<LmsItem>,
        notes: &mut BTreeSet<String>,
    ) -> Result<(), LmsError> {
        for course in self.open_courses(courses) {
            let params = [("courseid", course.id.clone())];
            if let Some(body) = self
                .optional("core_course_get_contents", &params, notes)
                .await?
            {
                items.extend(self::items(&self.config.name, &course.full, &body));
            }
        }
        Ok(())
    }
}

/// The files of one course's contents (`body`, its sections).
pub fn items(source: &str, course: &str, body: &Value) -> Vec<LmsItem> {
    let mut items = Vec::new();
    let sections = body.as_array().into_iter().flatten();
    let modules = sections.flat_map(|s| {
        s.get("modules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    });
    for module in modules {
        let kind = str_of(module, "modname").unwrap_or("");
        if !matches!(kind, "resource" | "folder") {
            continue;
        }
        let Some(cm) = id_of(module, "id") else {
            continue;
        };
        let module_name = str_of(module, "name").unwrap_or("(untitled file)");
        let files = module
            .get("contents")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for f in files.filter(|f| str_of(f, "type") == Some("file")) {
            let (Some(name), Some(url)) = (str_of(f, "filename"), str_of(f, "fileurl")) else {
                continue;
            };
            let path = str_of(f, "filepath").unwrap_or("/");
            let title = match kind {
                "resource" => module_name.to_string(),
                _ => format!("{module_name}: {name}"),
            };
            let mut item = LmsItem::new(
                source,
                format!("file:{cm}:{path}{name}"),
                ItemKind::File,
                title,
            );
            item.course = Some(course.to_string()).filter(|c| !c.is_empty());
            item.url = str_of(module, "url").map(str::to_string);
            item.updated = unix_of(f, "timemodified");
            let size = f.get("filesize").and_then(Value::as_u64);
            item.file = Some(CourseFile::new(url, name, size, item.updated));
            items.push(item);
        }
    }
    items
}

/// The file's bytes: its URL with the token, only on `base`'s origin.
pub async fn download(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    file: &CourseFile,
    max: u64,
) -> Result<Vec<u8>, LmsError> {
    if !http::same_origin(base, &file.download) {
        return Err(LmsError::Malformed(
            "the file is not on the site's own address, and the token goes nowhere else".into(),
        ));
    }
    let mut url = reqwest::Url::parse(&file.download)
        .map_err(|e| LmsError::Malformed(format!("the file's address: {e}")))?;
    url.query_pairs_mut().append_pair("token", token);
    let response = http::send(client.get(url)).await?;
    let json = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    let bytes = http::bytes(response, max).await?;
    // Moodle's refusal of a file is a JSON error body, not a document.
    let refusal = json
        .then(|| serde_json::from_slice::<Value>(&bytes).ok())
        .flatten();
    if let Some(code) = refusal.as_ref().and_then(|b| str_of(b, "errorcode")) {
        let message = refusal
            .as_ref()
            .and_then(|b| str_of(b, "error"))
            .unwrap_or(code);
        return Err(LmsError::Remote(format!("{code}: {message}")));
    }
    Ok(bytes)
}
