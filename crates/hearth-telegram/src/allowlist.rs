//! Who may talk to the bot: numeric user ids, @usernames, or everyone.

use std::collections::HashSet;

/// `allowed_users` from the config, parsed once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    everyone: bool,
    ids: HashSet<u64>,
    /// Lower-case, without the `@`.
    usernames: HashSet<String>,
}

impl Allowlist {
    /// Entries as the config holds them: `"123"`, `"@alice"`, `"alice"`, `"*"`.
    pub fn new(entries: &[String]) -> Self {
        let mut list = Self::default();
        for entry in entries.iter().map(|e| e.trim()) {
            if entry == "*" {
                list.everyone = true;
            } else if let Ok(id) = entry.parse::<u64>() {
                list.ids.insert(id);
            } else {
                let name = entry.trim_start_matches('@').to_lowercase();
                if !name.is_empty() {
                    list.usernames.insert(name);
                }
            }
        }
        list
    }

    /// `"*"` is in the list: anyone who finds the bot may use it.
    pub fn allows_everyone(&self) -> bool {
        self.everyone
    }

    /// Nobody at all is allowed (the default, until the owner adds an id).
    pub fn is_empty(&self) -> bool {
        !self.everyone && self.ids.is_empty() && self.usernames.is_empty()
    }

    /// Whether the user `user_id` is allowed when only the id is known (a
    /// message recorded before a restart): no when the id is not listed
    /// and no @username entry could have let them in; yes otherwise.
    pub fn may_allow_id(&self, user_id: u64) -> bool {
        self.allows(user_id, None) || !self.usernames.is_empty()
    }

    pub fn allows(&self, user_id: u64, username: Option<&str>) -> bool {
        self.everyone
            || self.ids.contains(&user_id)
            || username.is_some_and(|u| self.usernames.contains(&u.to_lowercase()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> Allowlist {
        Allowlist::new(&entries.iter().map(|e| e.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn an_id_alone_is_refused_only_where_no_username_could_allow_it() {
        assert!(list(&["42"]).may_allow_id(42));
        assert!(!list(&["42"]).may_allow_id(7));
        assert!(!list(&[]).may_allow_id(7));
        assert!(list(&["*"]).may_allow_id(7));
        assert!(list(&["42", "@alice"]).may_allow_id(7), "7 may be @alice");
    }

    #[test]
    fn ids_and_usernames_match_and_others_do_not() {
        let l = list(&["42", "@Alice"]);
        assert!(l.allows(42, None));
        assert!(l.allows(7, Some("alice")));
        assert!(!l.allows(7, Some("bob")));
        assert!(!l.allows(43, None));
        assert!(!l.allows_everyone());
    }

    #[test]
    fn empty_allows_nobody_and_star_everyone() {
        assert!(!list(&[]).allows(1, Some("a")));
        assert!(list(&[]).is_empty());
        assert!(list(&["*"]).allows(1, None));
        assert!(list(&["*"]).allows_everyone());
    }
}
