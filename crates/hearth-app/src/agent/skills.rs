//! Skills: how-to notes the user keeps in the workspace, one folder each
//! (`skills/<name>/SKILL.md`). The system prompt lists them; the full
//! profile includes their bodies, the compact one only names and
//! descriptions (the model can read a body with `file_read`).

use std::path::Path;

/// Characters kept of one skill's body in the prompt.
pub const SKILL_BODY_LIMIT: usize = 4_000;
/// Skills listed at most.
pub const MAX_SKILLS: usize = 32;

/// One skill as found in the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The file without its front matter.
    pub body: String,
}

/// Bytes of one SKILL.md read at most.
const SKILL_BYTES: u64 = 256 << 10;

/// The skills under `<workspace>/skills`, sorted by name. Unreadable or
/// empty files are skipped.
pub fn load(workspace: &Path) -> Vec<Skill> {
    let Ok(entries) = std::fs::read_dir(workspace.join("skills")) else {
        return Vec::new();
    };
    let mut skills: Vec<Skill> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let file = format!("skills/{name}/SKILL.md");
            let text = crate::tools::confined::read_text(workspace, &file, SKILL_BYTES)?;
            parse(&name, &text)
        })
        .collect();
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    skills.truncate(MAX_SKILLS);
    skills
}

/// A skill from its file: `description:` from a `---` front matter, else
/// the first line of text that is not a heading.
fn parse(name: &str, text: &str) -> Option<Skill> {
    let text = text.trim();
    let (front, body) = match text.strip_prefix("---") {
        Some(rest) => match rest.split_once("\n---") {
            Some((front, body)) => (front, body.trim()),
            None => ("", text),
        },
        None => ("", text),
    };
    let from_front = front.lines().find_map(|l| {
        l.trim()
            .strip_prefix("description:")
            .map(|d| d.trim().trim_matches('"').to_string())
    });
    let description = from_front.unwrap_or_else(|| {
        body.lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .unwrap_or_default()
            .to_string()
    });
    if body.is_empty() && description.is_empty() {
        return None;
    }
    Some(Skill {
        name: name.to_string(),
        description,
        body: body.to_string(),
    })
}

/// The prompt section for `skills`; bodies only when `with_bodies`.
pub fn section(skills: &[Skill], with_bodies: bool) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "## Skills\nNotes on how to do things here; read skills/<name>/SKILL.md for the whole note.\n",
    );
    for skill in skills {
        out.push_str(&format!("- {}: {}\n", skill.name, skill.description));
        if with_bodies {
            let body: String = skill.body.chars().take(SKILL_BODY_LIMIT).collect();
            out.push_str(&format!("\n### Skill: {}\n{body}\n\n", skill.name));
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_or_first_line_describes_a_skill() {
        let dir = tempfile::tempdir().unwrap();
        let skills = dir.path().join("skills");
        std::fs::create_dir_all(skills.join("backup")).unwrap();
        std::fs::create_dir_all(skills.join("arxiv")).unwrap();
        std::fs::create_dir_all(skills.join("empty")).unwrap();
        std::fs::write(
            skills.join("backup/SKILL.md"),
            "---\nname: backup\ndescription: \"Back up the notes folder\"\n---\n# Backup\nRun tar on notes/.",
        )
        .unwrap();
        std::fs::write(
            skills.join("arxiv/SKILL.md"),
            "# arXiv\n\nFind papers by id.\nMore.",
        )
        .unwrap();
        std::fs::write(skills.join("empty/SKILL.md"), "  ").unwrap();
        let found = load(dir.path());
        let names: Vec<&str> = found.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["arxiv", "backup"]);
        assert_eq!(found[0].description, "Find papers by id.");
        assert_eq!(found[1].description, "Back up the notes folder");
        assert_eq!(found[1].body, "# Backup\nRun tar on notes/.");
        let full = section(&found, true);
        let compact = section(&found, false);
        assert!(full.contains("Run tar on notes/."));
        assert!(!compact.contains("Run tar"));
        assert!(compact.contains("- backup: Back up the notes folder"));
        assert!(load(&dir.path().join("nowhere")).is_empty());
    }
}
