//! A string that never prints itself: tokens and API keys.
//!
//! `Debug` and `Display` show a masked form (`12…(46 chars)`), so a secret cannot
//! leak through a log line or `hearth config check` by accident. The one way to
//! read it is `expose`, which makes every use visible in review.

use std::fmt;

#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    fn masked(&self) -> String {
        let chars = self.0.chars().count();
        if chars < 12 {
            format!("***({chars} chars)")
        } else {
            let head: String = self.0.chars().take(2).collect();
            format!("{head}***({chars} chars)")
        }
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.masked())
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.masked())
    }
}
