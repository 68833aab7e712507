//! The deadlines written into a CalDAV calendar the person names, so they
//! appear in every client of that calendar: each event its own resource,
//! `<collection>/<uid>.ics`, put when it is new or changed and deleted when
//! it is gone, as `caldav_written` in `lms.sqlite3` remembers. A user and
//! password in the collection's URL go as HTTP basic auth, never in an
//! error or a log line.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rusqlite::params;
use sha2::{Digest, Sha256};

use super::calendar_feed::{FeedEvent, ics};
use super::store::SeenStore;
use super::{LmsError, http};

/// What one pass wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Published {
    pub put: usize,
    pub deleted: usize,
    pub unchanged: usize,
}

/// Writes `events` into the collection at `url`: what changed since the
/// last pass, and deletes what is gone.
pub async fn publish(
    store: &SeenStore,
    events: &[FeedEvent],
    url: &str,
    name: &str,
    (tz, now): (Tz, DateTime<Utc>),
) -> Result<Published, LmsError> {
    let (base, user, password) = split(url)?;
    let client = http::client();
    let written = store.caldav_written()?;
    let mut done = Published::default();
    for e in events {
        let hash = fingerprint(e);
        if written.iter().any(|(uid, h)| *uid == e.uid && *h == hash) {
            done.unchanged += 1;
            continue;
        }
        let body = ics(std::slice::from_ref(e), name, tz, now);
        let mut put = client
            .put(resource(&base, &e.uid))
            .header("content-type", "text/calendar; charset=utf-8")
            .body(body);
        if !user.is_empty() {
            put = put.basic_auth(&user, password.as_deref());
        }
        http::send(put).await?;
        store.caldav_wrote(&e.uid, Some(&hash))?;
        done.put += 1;
    }
    for (uid, _) in written
        .iter()
        .filter(|(uid, _)| events.iter().all(|e| e.uid != *uid))
    {
        let mut delete = client.delete(resource(&base, uid));
        if !user.is_empty() {
            delete = delete.basic_auth(&user, password.as_deref());
        }
        match http::send(delete).await {
            Ok(_) | Err(LmsError::Http { status: 404, .. }) => {}
            Err(e) => return Err(e),
        }
        store.caldav_wrote(uid, None)?;
        done.deleted += 1;
    }
    Ok(done)
}

/// The collection without its credentials, and those credentials.
fn split(url: &str) -> Result<(String, String, Option<String>), LmsError> {
    let mut parsed = reqwest::Url::parse(url)
        .map_err(|e| LmsError::Malformed(format!("the CalDAV calendar's address: {e}")))?;
    let user = super::files::unescaped(parsed.username());
    let password = parsed.password().map(super::files::unescaped);
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    let mut base = parsed.to_string();
    if !base.ends_with('/') {
        base.push('/');
    }
    Ok((base, user, password))
}

/// The resource of event `uid` (its hash part: no `@` in a path).
fn resource(base: &str, uid: &str) -> String {
    let name = uid.split('@').next().unwrap_or(uid);
    format!("{base}{name}.ics")
}

/// What the person would see change in an event.
fn fingerprint(e: &FeedEvent) -> String {
    let mut h = Sha256::new();
    for part in [
        e.summary.as_str(),
        &e.start.timestamp().to_string(),
        if e.all_day { "day" } else { "time" },
        e.description.as_deref().unwrap_or(""),
        e.url.as_deref().unwrap_or(""),
    ] {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    crate::hex::hex(&h.finalize())
}

impl SeenStore {
    /// The events written to the CalDAV calendar, with their fingerprints.
    pub fn caldav_written(&self) -> Result<Vec<(String, String)>, LmsError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare("SELECT uid, hash FROM caldav_written ORDER BY uid")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Records event `uid` as written with `hash`, or as deleted.
    pub fn caldav_wrote(&self, uid: &str, hash: Option<&str>) -> Result<(), LmsError> {
        let conn = self.lock();
        match hash {
            Some(hash) => conn.execute(
                "INSERT INTO caldav_written (uid, hash) VALUES (?1, ?2)
                 ON CONFLICT (uid) DO UPDATE SET hash = excluded.hash",
                params![uid, hash],
            ),
            None => conn.execute("DELETE FROM caldav_written WHERE uid = ?1", [uid]),
        }
        .map(drop)
        .map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_leave_the_address_and_a_uid_makes_a_path() {
        let (base, user, password) =
            split("https://me:p%40ss@dav.example.org/me/deadlines").unwrap();
        assert_eq!(base, "https://dav.example.org/me/deadlines/");
        assert_eq!((user.as_str(), password.as_deref()), ("me", Some("p@ss")));
        assert_eq!(
            resource(&base, "0123abcd@hearth"),
            "https://dav.example.org/me/deadlines/0123abcd.ics"
        );
    }
}
