//! Keys a newer hearth renamed or retired. A config written for an older
//! one is never refused or reset for them: a renamed key is read under
//! its new name, a retired one is set aside, and each is named in a
//! notice (logged at every start, printed by `hearth config check`) that
//! says what to write instead. Keys are dotted paths: `voice.max_mb`.

/// A key that moved: its value is read as `new` when `new` is not set.
pub(super) struct Renamed {
    pub old: &'static str,
    pub new: &'static str,
}

/// A key that no longer does anything, and why.
pub(super) struct Retired {
    pub key: &'static str,
    pub why: &'static str,
}

/// Every rename since the first release, oldest first.
pub(super) const RENAMED: &[Renamed] = &[
    // 0.2: named like `[model] image_max_mb`: what a recording may be.
    Renamed {
        old: "voice.max_mb",
        new: "voice.audio_max_mb",
    },
    Renamed {
        old: "voice.max_seconds",
        new: "voice.audio_max_seconds",
    },
];

/// Every retired key since the first release.
pub(super) const RETIRED: &[Retired] = &[];

/// Moves renamed keys of `table` to their new names and takes retired ones
/// out; one notice for each.
pub(super) fn carry_forward(
    table: &mut toml::Table,
    renamed: &[Renamed],
    retired: &[Retired],
) -> Vec<String> {
    let mut notices = Vec::new();
    for r in renamed {
        let Some(value) = take(table, r.old) else {
            continue;
        };
        if get(table, r.new).is_some() {
            notices.push(format!(
                "`{}` is now `{}`, which is also set: `{}` is ignored; delete it from the file",
                r.old, r.new, r.old
            ));
        } else {
            put(table, r.new, value);
            notices.push(format!(
                "`{}` is now `{}`: its value was read as `{}`; rename it in the file",
                r.old, r.new, r.new
            ));
        }
    }
    for r in retired {
        if take(table, r.key).is_some() {
            notices.push(format!(
                "`{}` is no longer used ({}); delete it from the file",
                r.key, r.why
            ));
        }
    }
    notices
}

/// The table holding `key`'s last part, and that part.
fn parent<'a>(table: &'a mut toml::Table, key: &'a str) -> Option<(&'a mut toml::Table, &'a str)> {
    let (sections, last) = match key.rsplit_once('.') {
        Some((sections, last)) => (Some(sections), last),
        None => (None, key),
    };
    let mut at = table;
    for section in sections.into_iter().flat_map(|s| s.split('.')) {
        at = at.get_mut(section)?.as_table_mut()?;
    }
    Some((at, last))
}

fn take(table: &mut toml::Table, key: &str) -> Option<toml::Value> {
    let (at, last) = parent(table, key)?;
    at.remove(last)
}

fn get(table: &mut toml::Table, key: &str) -> Option<toml::Value> {
    let (at, last) = parent(table, key)?;
    at.get(last).cloned()
}

fn put(table: &mut toml::Table, key: &str, value: toml::Value) {
    if let Some((at, last)) = parent(table, key) {
        at.insert(last.to_string(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &[Renamed] = &[Renamed {
        old: "voice.max_mb",
        new: "voice.audio_max_mb",
    }];
    const GONE: &[Retired] = &[Retired {
        key: "channels.telegram.polling",
        why: "webhooks were dropped",
    }];

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn a_renamed_key_is_read_under_its_new_name_with_a_notice() {
        let mut t = table("[voice]\nmax_mb = 7\n");
        let notices = carry_forward(&mut t, OLD, &[]);
        assert_eq!(t, table("[voice]\naudio_max_mb = 7\n"));
        assert_eq!(notices.len(), 1);
        assert!(notices[0].contains("`voice.audio_max_mb`"), "{notices:?}");
        // Positive control: a file already using the new key gets no notice.
        let mut t = table("[voice]\naudio_max_mb = 7\n");
        assert!(carry_forward(&mut t, OLD, &[]).is_empty());
        assert_eq!(t, table("[voice]\naudio_max_mb = 7\n"));
    }

    #[test]
    fn the_new_key_wins_over_the_old_and_retired_keys_are_set_aside() {
        let mut t = table("[voice]\nmax_mb = 7\naudio_max_mb = 9\n");
        let notices = carry_forward(&mut t, OLD, &[]);
        assert_eq!(t, table("[voice]\naudio_max_mb = 9\n"));
        assert!(notices[0].contains("ignored"), "{notices:?}");
        let mut t = table("[channels.telegram]\npolling = true\ntoken = \"x\"\n");
        let notices = carry_forward(&mut t, &[], GONE);
        assert_eq!(t, table("[channels.telegram]\ntoken = \"x\"\n"));
        assert!(notices[0].contains("webhooks were dropped"), "{notices:?}");
        // A section that is not a table, or is absent, is left to the parser.
        let mut t = table("voice = 3\n");
        assert!(carry_forward(&mut t, OLD, GONE).is_empty());
        assert_eq!(t, table("voice = 3\n"));
    }
}
