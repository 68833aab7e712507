//! Canvas's course files: `/api/v1/courses/:id/files`, or, where Canvas
//! refuses a student the course's Files page, the `File` items of its
//! modules. A file is downloaded from the `url` Canvas gives (it carries
//! its own verifier); the token goes with it only on the site's origin.

use serde_json::Value;

use super::canvas::Canvas;
use super::json::{id_of, iso_of, str_of};
use super::{CourseFile, ItemKind, LmsError, LmsItem, http};

/// Module items whose file details are read, per course, at most.
const MAX_MODULE_FILES: usize = 200;

/// The files of course `id` (`course` its name); a course whose files
/// and modules Canvas both refuses gives a note instead.
pub async fn of_course(
    canvas: &Canvas,
    id: &str,
    course: &str,
    notes: &mut Vec<String>,
) -> Result<Vec<LmsItem>, LmsError> {
    let files = match canvas
        .list(&format!("/api/v1/courses/{id}/files?per_page=100"))
        .await
    {
        Ok(files) => files,
        Err(LmsError::Auth(_) | LmsError::Http { status: 404, .. }) => {
            match from_modules(canvas, id).await {
                Ok(files) => files,
                Err(LmsError::Auth(why) | LmsError::Http { message: why, .. }) => {
                    notes.push(format!(
                        "skipped the files of {course}: Canvas refuses them ({why})"
                    ));
                    return Ok(Vec::new());
                }
                Err(e) => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    Ok(files
        .iter()
        .filter_map(|f| item(canvas, id, course, f))
        .collect())
}

/// The files the course's modules link to, each read from the files API.
async fn from_modules(canvas: &Canvas, id: &str) -> Result<Vec<Value>, LmsError> {
    let modules = canvas
        .list(&format!(
            "/api/v1/courses/{id}/modules?include[]=items&per_page=100"
        ))
        .await?;
    let mut files = Vec::new();
    let items = modules.iter().flat_map(|m| {
        m.get("items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    });
    for file in items
        .filter(|i| str_of(i, "type") == Some("File"))
        .take(MAX_MODULE_FILES)
    {
        let Some(fid) = id_of(file, "content_id") else {
            continue;
        };
        files.push(
            canvas
                .get(&format!("/api/v1/courses/{id}/files/{fid}"))
                .await?,
        );
    }
    Ok(files)
}

/// One file as an item, unless it is locked or hidden for the user.
fn item(canvas: &Canvas, course_id: &str, course: &str, f: &Value) -> Option<LmsItem> {
    let locked = |key: &str| f.get(key).and_then(Value::as_bool).unwrap_or(false);
    if locked("locked_for_user") || locked("hidden_for_user") || locked("hidden") {
        return None;
    }
    let id = id_of(f, "id")?;
    let download = str_of(f, "url").filter(|u| !u.is_empty())?;
    let name = str_of(f, "display_name").or_else(|| str_of(f, "filename"))?;
    let mut item = LmsItem::new(canvas.name_of(), format!("file:{id}"), ItemKind::File, name);
    item.course = Some(course.to_string()).filter(|c| !c.is_empty());
    item.url = Some(format!("{}/courses/{course_id}/files/{id}", canvas.base()));
    item.updated = iso_of(f, "modified_at").or_else(|| iso_of(f, "updated_at"));
    let size = f.get("size").and_then(Value::as_u64);
    item.file = Some(CourseFile::new(download, name, size, item.updated));
    Some(item)
}

/// The file's bytes; the token goes along only on the site's own origin.
pub async fn download(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    file: &CourseFile,
    max: u64,
) -> Result<Vec<u8>, LmsError> {
    let mut request = client.get(&file.download);
    if http::same_origin(base, &file.download) {
        request = request.bearer_auth(token);
    }
    http::bytes(http::send(request).await?, max).await
}
