//! Sign-ins on the web page: the gateway token, entered once, is exchanged
//! for a session cookie (`HttpOnly`, `SameSite=Strict`, with an expiry) and
//! a CSRF token that the page keeps in memory and sends with every request
//! that changes something. Both are random and live only in this process:
//! a restart signs everyone out.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, header};

/// The cookie's name.
pub const COOKIE: &str = "hearth_session";
/// The header that carries the CSRF token.
pub const CSRF_HEADER: &str = "x-hearth-csrf";
/// Sessions held at once; signing in past it ends the one that expires first.
const MOST: usize = 32;

/// One signed-in browser.
struct Live {
    csrf: String,
    expires: Instant,
}

/// What a valid session cookie gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    pub csrf: String,
    pub left: Duration,
}

#[derive(Debug)]
pub struct Sessions {
    lifetime: Duration,
    live: Mutex<HashMap<String, Live>>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Live(..)")
    }
}

impl Sessions {
    pub fn new(lifetime: Duration) -> Self {
        Self {
            lifetime,
            live: Mutex::default(),
        }
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Live>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// A new session: its id (the cookie's value) and CSRF token.
    pub fn open(&self) -> (String, String) {
        let id = random();
        let csrf = random();
        let now = Instant::now();
        let mut live = self.live();
        live.retain(|_, s| s.expires > now);
        if live.len() >= MOST
            && let Some(first) = live
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(k, _)| k.clone())
        {
            live.remove(&first);
        }
        live.insert(
            id.clone(),
            Live {
                csrf: csrf.clone(),
                expires: now + self.lifetime,
            },
        );
        (id, csrf)
    }

    /// The session `headers` carry in their cookie, while it lasts.
    pub fn signed(&self, headers: &HeaderMap) -> Option<Signed> {
        let id = cookie(headers)?;
        let now = Instant::now();
        let mut live = self.live();
        let session = live.get(&id)?;
        if session.expires <= now {
            live.remove(&id);
            return None;
        }
        Some(Signed {
            csrf: session.csrf.clone(),
            left: session.expires - now,
        })
    }

    /// Ends the session `headers` carry; true when there was one.
    pub fn close(&self, headers: &HeaderMap) -> bool {
        cookie(headers).is_some_and(|id| self.live().remove(&id).is_some())
    }
}

/// The session id in the `Cookie` header(s), if any.
fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == COOKIE && !value.is_empty()).then(|| value.to_string())
        })
}

/// 244 random bits, as 64 hex digits.
fn random() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// The `Set-Cookie` value that signs a browser in for `lifetime`.
pub fn set_cookie(id: &str, lifetime: Duration) -> String {
    format!(
        "{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
        lifetime.as_secs()
    )
}

/// The `Set-Cookie` value that signs a browser out.
pub fn clear_cookie() -> String {
    format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_cookie(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, value.parse().unwrap());
        h
    }

    #[test]
    fn a_session_lasts_its_lifetime_and_ends_when_closed() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let (id, csrf) = sessions.open();
        let headers = with_cookie(&format!("other=1; {COOKIE}={id}"));
        let signed = sessions.signed(&headers).unwrap();
        assert_eq!(signed.csrf, csrf);
        assert!(signed.left <= Duration::from_secs(60));
        assert_eq!(
            sessions.signed(&with_cookie(&format!("{COOKIE}=x{id}"))),
            None
        );
        assert_eq!(sessions.signed(&with_cookie(&format!("{COOKIE}="))), None);
        assert_eq!(sessions.signed(&HeaderMap::new()), None);
        assert!(sessions.close(&headers));
        assert_eq!(sessions.signed(&headers), None, "signed out");
        assert!(!sessions.close(&headers));
    }

    #[test]
    fn an_expired_session_is_refused_and_forgotten() {
        let sessions = Sessions::new(Duration::from_millis(20));
        let (id, _) = sessions.open();
        let headers = with_cookie(&format!("{COOKIE}={id}"));
        assert!(sessions.signed(&headers).is_some(), "control: fresh");
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(sessions.signed(&headers), None);
        assert!(sessions.live().is_empty());
    }

    #[test]
    fn sessions_are_bounded_and_unguessable() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let ids: Vec<String> = (0..MOST + 5).map(|_| sessions.open().0).collect();
        assert_eq!(sessions.live().len(), MOST);
        assert_eq!(ids[0].len(), 64);
        let unique: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
        let last = with_cookie(&format!("{COOKIE}={}", ids[MOST + 4]));
        assert!(sessions.signed(&last).is_some(), "the newest is kept");
    }
}
