//! Moodle's grades and quiz openings, as items told once each.
//!
//! A grade is an item once the teacher has graded it (`gradedategraded` of
//! `gradereport_user_get_grade_items`, per course and for the token's own
//! user): its feedback is the item's text, so new feedback is told as a
//! change; its mark is kept in the item's hash, so a regrade is told too,
//! and shown only where the source's `scores` is on. A quiz is an "open
//! quiz" item from its `timeopen` (`mod_quiz_get_quizzes_by_courses`) until
//! it closes, the user's own closing date read from the action events,
//! where an override shows. Either function refused leaves the rest of the
//! site as it was.

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{Course, Moodle};
use crate::item::plain_text;
use crate::json::{array, id_of, str_of, unix_of};
use crate::{ItemKind, LmsError, LmsItem};

impl Moodle {
    /// The released grades of every allowed course in `courses`.
    pub(super) async fn grades(
        &self,
        user: Option<&str>,
        courses: &HashMap<String, Course>,
        notes: &mut BTreeSet<String>,
    ) -> Result<Vec<LmsItem>, LmsError> {
        const FUNCTION: &str = "gradereport_user_get_grade_items";
        let Some(user) = user else {
            return Ok(Vec::new());
        };
        let mut items = Vec::new();
        for course in self.open_courses(courses) {
            let params = [
                ("courseid", course.id.clone()),
                ("userid", user.to_string()),
            ];
            let Some(body) = self.optional(FUNCTION, &params, notes).await? else {
                continue;
            };
            for report in array(&body, "usergrades", FUNCTION)? {
                let graded = report
                    .get("gradeitems")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten();
                items.extend(graded.filter_map(|g| self.grade(&course, g)));
            }
        }
        Ok(items)
    }

    /// One grade item, if it is a released grade of an activity or a
    /// manual item (not a course or category total).
    fn grade(&self, course: &Course, g: &Value) -> Option<LmsItem> {
        if matches!(str_of(g, "itemtype"), Some("course" | "category"))
            || g.get("gradeishidden").and_then(Value::as_bool) == Some(true)
        {
            return None;
        }
        let graded = unix_of(g, "gradedategraded")?;
        let id = id_of(g, "id")?;
        let mut item = LmsItem::new(
            &self.config.name,
            format!("grade:{}:{id}", course.id),
            ItemKind::Grade,
            str_of(g, "itemname")
                .filter(|n| !n.is_empty())
                .unwrap_or("(untitled grade item)"),
        );
        item.course = Some(course.full.clone()).filter(|f| !f.is_empty());
        item.url = Some(match (str_of(g, "itemmodule"), id_of(g, "cmid")) {
            (Some(module), Some(cm)) => format!("{}/mod/{module}/view.php?id={cm}", self.base()),
            _ => format!(
                "{}/grade/report/user/index.php?id={}",
                self.base(),
                course.id
            ),
        });
        item.updated = Some(graded);
        item.detail = str_of(g, "feedback")
            .map(plain_text)
            .filter(|t| !t.is_empty());
        item.mark = mark(g);
        Some(item)
    }

    /// The quizzes of the allowed courses that have opened and not closed
    /// by `now`; `closes` holds the user's own closing dates by quiz id.
    pub(super) async fn open_quizzes(
        &self,
        courses: &HashMap<String, Course>,
        closes: &HashMap<String, DateTime<Utc>>,
        now: DateTime<Utc>,
        notes: &mut BTreeSet<String>,
    ) -> Result<Vec<LmsItem>, LmsError> {
        const FUNCTION: &str = "mod_quiz_get_quizzes_by_courses";
        let open = self.open_courses(courses);
        if open.is_empty() {
            return Ok(Vec::new());
        }
        let params: Vec<(String, String)> = open
            .iter()
            .enumerate()
            .map(|(i, c)| (format!("courseids[{i}]"), c.id.clone()))
            .collect();
        let params: Vec<(&str, String)> = params
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        let Some(body) = self.optional(FUNCTION, &params, notes).await? else {
            return Ok(Vec::new());
        };
        let mut items = Vec::new();
        for q in array(&body, "quizzes", FUNCTION)? {
            let (Some(id), Some(opened)) = (id_of(q, "id"), unix_of(q, "timeopen")) else {
                continue;
            };
            let course_id = id_of(q, "course").unwrap_or_default();
            let Some(course) = open.iter().find(|c| c.id == course_id) else {
                continue;
            };
            let until = closes.get(&id).copied().or_else(|| unix_of(q, "timeclose"));
            if opened > now || until.is_some_and(|c| c <= now) {
                continue;
            }
            let mut item = LmsItem::new(
                &self.config.name,
                format!("quizopen:{id}"),
                ItemKind::QuizOpen,
                str_of(q, "name").unwrap_or("(untitled quiz)"),
            );
            item.course = Some(course.full.clone()).filter(|f| !f.is_empty());
            item.url = id_of(q, "coursemodule")
                .map(|cm| format!("{}/mod/quiz/view.php?id={cm}", self.base()));
            item.updated = Some(opened);
            item.closes = until;
            items.push(item);
        }
        Ok(items)
    }

    /// The allowed courses of `courses`, by id.
    pub(super) fn open_courses(&self, courses: &HashMap<String, Course>) -> Vec<Course> {
        let mut open: Vec<Course> = courses
            .values()
            .filter(|c| !c.id.is_empty() && self.allowed(c))
            .cloned()
            .collect();
        open.sort_by(|a, b| a.id.cmp(&b.id));
        open
    }
}

/// The user's own closing date of each quiz, by quiz id, from the action
/// events (an override shows there, and only there).
pub fn quiz_closes(events: &[Value]) -> HashMap<String, DateTime<Utc>> {
    events
        .iter()
        .filter(|e| str_of(e, "modulename") == Some("quiz"))
        .filter_map(|e| Some((id_of(e, "instance")?, unix_of(e, "timesort")?)))
        .collect()
}

/// A grade as Moodle formats it, out of its maximum where it is a number
/// (a scale's word stands alone).
fn mark(g: &Value) -> Option<String> {
    let formatted = str_of(g, "gradeformatted").filter(|f| !f.is_empty() && *f != "-")?;
    let scale = g.get("scaleid").and_then(Value::as_i64).unwrap_or(0) != 0;
    match g.get("grademax").and_then(Value::as_f64) {
        Some(max) if !scale && max > 0.0 => Some(format!("{formatted} / {max}")),
        _ => Some(formatted.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_mark_is_out_of_its_maximum_unless_a_scale() {
        assert_eq!(
            mark(&json!({"gradeformatted": "85.00", "grademax": 100.0})).as_deref(),
            Some("85.00 / 100")
        );
        assert_eq!(
            mark(&json!({"gradeformatted": "Good", "grademax": 3, "scaleid": 2})).as_deref(),
            Some("Good")
        );
        assert_eq!(mark(&json!({"gradeformatted": "-", "grademax": 10})), None);
    }

    #[test]
    fn a_quiz_s_own_close_comes_from_its_action_event() {
        let events = [
            json!({"modulename": "quiz", "instance": 12, "timesort": 1_741_798_800}),
            json!({"modulename": "assign", "instance": 31, "timesort": 1_742_079_540}),
        ];
        let closes = quiz_closes(&events);
        assert_eq!(closes.len(), 1);
        assert_eq!(closes["12"].timestamp(), 1_741_798_800);
    }
}
