//! Canvas's grades and quiz openings, as items told once each.
//!
//! A course's submissions for the token's own user
//! (`/students/submissions?student_ids[]=self`, with the assignment and the
//! comments): one is a grade item once Canvas has graded and posted it
//! (`graded_at`; an unposted grade the student cannot see is not one). Its
//! comments are the item's text, so new feedback is told as a change; its
//! mark is kept in the hash (a regrade is told) and shown only where the
//! source's `scores` is on. A classic quiz with an `unlock_at` is an "open
//! quiz" item from then until its `lock_at`. A course that refuses either
//! list loses only that list, with a note.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::canvas::Canvas;
use super::item::plain_text;
use super::json::{id_of, iso_of, str_of};
use super::{ItemKind, LmsError, LmsItem};

/// Comments a grade's text holds, the latest last.
const COMMENTS: usize = 5;

/// The released grades and open quizzes of course `id` (`course` its name).
pub async fn of_course(
    canvas: &Canvas,
    id: &str,
    course: &str,
    now: DateTime<Utc>,
    notes: &mut Vec<String>,
) -> Result<Vec<LmsItem>, LmsError> {
    let mut items = Vec::new();
    let submissions = format!(
        "/api/v1/courses/{id}/students/submissions?student_ids[]=self&include[]=assignment&include[]=submission_comments&per_page=100"
    );
    if let Some(list) = refusable(canvas.list(&submissions).await, "grades", course, notes)? {
        items.extend(list.iter().filter_map(|s| grade(canvas, id, course, s)));
    }
    let quizzes = format!("/api/v1/courses/{id}/quizzes?per_page=100");
    if let Some(list) = refusable(canvas.list(&quizzes).await, "quizzes", course, notes)? {
        items.extend(
            list.iter()
                .filter_map(|q| open_quiz(canvas, course, q, now)),
        );
    }
    Ok(items)
}

/// A list the course may refuse the student (401/403/404): `None` and a
/// note; any other failure stands.
fn refusable(
    listed: Result<Vec<Value>, LmsError>,
    what: &str,
    course: &str,
    notes: &mut Vec<String>,
) -> Result<Option<Vec<Value>>, LmsError> {
    match listed {
        Ok(list) => Ok(Some(list)),
        Err(
            LmsError::Auth(why)
            | LmsError::Http {
                status: 404,
                message: why,
            },
        ) => {
            notes.push(format!(
                "skipped the {what} of {course}: Canvas refuses them ({why})"
            ));
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// One submission, if Canvas has graded it and shows the grade.
fn grade(canvas: &Canvas, course_id: &str, course: &str, s: &Value) -> Option<LmsItem> {
    let graded = iso_of(s, "graded_at")?;
    let posted = s.get("posted_at").is_none_or(|p| !p.is_null());
    if !posted || str_of(s, "workflow_state") != Some("graded") {
        return None;
    }
    let assignment = s.get("assignment").cloned().unwrap_or(Value::Null);
    let assignment_id = id_of(s, "assignment_id").or_else(|| id_of(&assignment, "id"))?;
    let mut item = LmsItem::new(
        canvas.name_of(),
        format!("grade:{course_id}:{assignment_id}"),
        ItemKind::Grade,
        str_of(&assignment, "name").unwrap_or("(untitled assignment)"),
    );
    item.course = Some(course.to_string()).filter(|c| !c.is_empty());
    item.url = str_of(&assignment, "html_url").map(str::to_string);
    item.updated = Some(graded);
    item.detail = comments(s);
    item.mark = mark(s, &assignment);
    Some(item)
}

/// The submission's latest comments, each with its author.
fn comments(s: &Value) -> Option<String> {
    let all: Vec<String> = s
        .get("submission_comments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let text = plain_text(str_of(c, "comment")?);
            let text = text.trim();
            (!text.is_empty()).then(|| match str_of(c, "author_name") {
                Some(who) => format!("{who}: {text}"),
                None => text.to_string(),
            })
        })
        .collect();
    let from = all.len().saturating_sub(COMMENTS);
    Some(all[from..].join(" / ")).filter(|t| !t.is_empty())
}

/// The score out of the assignment's points, or Canvas's own grade where
/// it is a letter or a word.
fn mark(s: &Value, assignment: &Value) -> Option<String> {
    let points = assignment.get("points_possible").and_then(Value::as_f64);
    match (s.get("score").and_then(Value::as_f64), points) {
        (Some(score), Some(points)) if points > 0.0 => {
            let letter = str_of(s, "grade").filter(|g| g.parse::<f64>().is_err());
            Some(match letter {
                Some(letter) => format!("{letter} ({score} / {points})"),
                None => format!("{score} / {points}"),
            })
        }
        _ => str_of(s, "grade").map(str::to_string),
    }
}

/// A classic quiz that unlocked by `now` and has not locked.
fn open_quiz(canvas: &Canvas, course: &str, q: &Value, now: DateTime<Utc>) -> Option<LmsItem> {
    let id = id_of(q, "id")?;
    let opened = iso_of(q, "unlock_at")?;
    let until = iso_of(q, "lock_at");
    if opened > now
        || until.is_some_and(|c| c <= now)
        || q.get("published").and_then(Value::as_bool) == Some(false)
    {
        return None;
    }
    let mut item = LmsItem::new(
        canvas.name_of(),
        format!("quizopen:{id}"),
        ItemKind::QuizOpen,
        str_of(q, "title").unwrap_or("(untitled quiz)"),
    );
    item.course = Some(course.to_string()).filter(|c| !c.is_empty());
    item.url = str_of(q, "html_url").map(str::to_string);
    item.updated = Some(opened);
    item.closes = until;
    Some(item)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_mark_is_the_score_out_of_the_points_or_the_letter() {
        let a = json!({"points_possible": 20.0});
        assert_eq!(
            mark(&json!({"score": 17.5, "grade": "17.5"}), &a).as_deref(),
            Some("17.5 / 20")
        );
        assert_eq!(
            mark(&json!({"score": 18.0, "grade": "A-"}), &a).as_deref(),
            Some("A- (18 / 20)")
        );
        assert_eq!(
            mark(&json!({"score": null, "grade": "complete"}), &a).as_deref(),
            Some("complete")
        );
    }

    #[test]
    fn comments_keep_their_authors_and_the_latest_five() {
        let s = json!({"submission_comments": (1..=7).map(|i| json!({"author_name": "T", "comment": format!("<p>c{i}</p>")})).collect::<Vec<_>>()});
        assert_eq!(
            comments(&s).as_deref(),
            Some("T: c3 / T: c4 / T: c5 / T: c6 / T: c7")
        );
        assert_eq!(comments(&json!({"submission_comments": []})), None);
    }
}
