//! A brake on guessing the gateway's token, per client address and across
//! connections: each wrong token from an address is answered later than
//! the one before, and after [`LOCK_AFTER`] of them in [`WINDOW`] the
//! address is refused (429, whatever it sends) for a while that doubles
//! with each lock, up to [`LONGEST_LOCK`]. Nothing is refused for ever: a
//! quiet [`WINDOW`] forgets the address, so an owner who mistyped, or who
//! shares an address with the guesser, is let in again. Every lock is
//! logged with the address.
//!
//! It wraps the whole router ([`layer`]): a 401 is what every route
//! answers a wrong or missing token with (the page's sign-in too), so the
//! brake needs no route's cooperation.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use hearth_core::retry::RetryPolicy;

/// Wrong tokens from one address, within [`WINDOW`], before it is locked.
pub const LOCK_AFTER: u32 = 10;
/// How long wrong tokens are remembered.
pub const WINDOW: Duration = Duration::from_secs(10 * 60);
/// The first lock; each next one within the window doubles it.
pub const FIRST_LOCK: Duration = Duration::from_secs(60);
pub const LONGEST_LOCK: Duration = Duration::from_secs(15 * 60);
/// The extra wait each wrong token adds to the answer, up to [`MOST_DELAY`].
const DELAY_STEP: Duration = Duration::from_millis(200);
const MOST_DELAY: Duration = Duration::from_secs(3);
/// Addresses remembered at most; the stalest goes first.
const MOST_ADDRESSES: usize = 4096;

/// The address a request came from, put on it by the connection loop.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub IpAddr);

#[derive(Debug, Clone, Copy)]
struct Record {
    wrong: u32,
    last: Instant,
    locks: u32,
    locked_until: Option<Instant>,
}

/// What the brake says of a request before it is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// Locked: refused for this long yet.
    Locked(Duration),
}

#[derive(Debug, Default)]
pub struct Brake {
    addresses: Mutex<HashMap<IpAddr, Record>>,
}

impl Brake {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Record>> {
        self.addresses.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a request from `ip` may be looked at, at `now`.
    pub fn check(&self, ip: IpAddr, now: Instant) -> Verdict {
        let mut addresses = self.lock();
        let Some(r) = addresses.get_mut(&ip) else {
            return Verdict::Pass;
        };
        match r.locked_until {
            Some(until) if until > now => Verdict::Locked(until - now),
            _ => {
                if now.duration_since(r.last) > WINDOW {
                    addresses.remove(&ip);
                }
                Verdict::Pass
            }
        }
    }

    /// A wrong token from `ip` at `now`: how long to wait before saying so.
    pub fn wrong(&self, ip: IpAddr, now: Instant) -> Duration {
        let mut addresses = self.lock();
        if addresses.len() >= MOST_ADDRESSES && !addresses.contains_key(&ip) {
            let stalest = addresses
                .iter()
                .min_by_key(|(_, r)| r.last)
                .map(|(a, _)| *a);
            if let Some(a) = stalest {
                addresses.remove(&a);
            }
        }
        let r = addresses.entry(ip).or_insert(Record {
            wrong: 0,
            last: now,
            locks: 0,
            locked_until: None,
        });
        if now.duration_since(r.last) > WINDOW {
            *r = Record {
                wrong: 0,
                last: now,
                locks: 0,
                locked_until: None,
            };
        }
        r.wrong += 1;
        r.last = now;
        if r.wrong >= LOCK_AFTER {
            r.locks += 1;
            r.wrong = 0;
            let lock = RetryPolicy::new(FIRST_LOCK, LONGEST_LOCK).after(r.locks);
            r.locked_until = Some(now + lock);
            tracing::warn!(
                address = %ip,
                seconds = lock.as_secs(),
                "{LOCK_AFTER} wrong gateway tokens from one address: it is refused for a while"
            );
        } else {
            tracing::info!(address = %ip, wrong = r.wrong, "a wrong gateway token");
        }
        (DELAY_STEP * r.wrong.max(1)).min(MOST_DELAY)
    }

    /// The right token from `ip`: its wrong ones are forgotten.
    pub fn right(&self, ip: IpAddr) {
        self.lock().remove(&ip);
    }
}

/// The middleware: a locked address is refused before its request is
/// looked at; a 401 is answered after the brake's wait.
pub async fn layer(State(brake): State<Arc<Brake>>, request: Request, next: Next) -> Response {
    let Some(Peer(ip)) = request.extensions().get::<Peer>().copied() else {
        return next.run(request).await;
    };
    if request.uri().path() == "/health" {
        return next.run(request).await;
    }
    let carried = request.headers().contains_key(header::AUTHORIZATION)
        || request.uri().path() == "/ui/login";
    if let Verdict::Locked(left) = brake.check(ip, Instant::now()) {
        return locked(left);
    }
    let response = next.run(request).await;
    if response.status() == StatusCode::UNAUTHORIZED {
        tokio::time::sleep(brake.wrong(ip, Instant::now())).await;
    } else if carried && response.status().is_success() {
        brake.right(ip);
    }
    response
}

fn locked(left: Duration) -> Response {
    let secs = left.as_secs().max(1);
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        axum::Json(json!({ "error": format!(
            "too many wrong tokens from this address; try again in {secs} s"
        ) })),
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, v);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_tokens_slow_then_lock_an_address_for_a_while_and_never_for_ever() {
        let brake = Brake::default();
        let (guesser, owner) = ("127.0.0.9".parse().unwrap(), "127.0.0.1".parse().unwrap());
        let t0 = Instant::now();
        let mut waits = Vec::new();
        for i in 0..LOCK_AFTER - 1 {
            assert_eq!(brake.check(guesser, t0), Verdict::Pass, "{i}");
            waits.push(brake.wrong(guesser, t0));
        }
        assert!(waits.windows(2).all(|w| w[0] <= w[1]), "{waits:?}");
        assert!(waits[0] < waits[waits.len() - 1]);
        brake.wrong(guesser, t0);
        assert_eq!(brake.check(guesser, t0), Verdict::Locked(FIRST_LOCK));
        // Another address is not held up (the control).
        assert_eq!(brake.check(owner, t0), Verdict::Pass);
        // The lock ends; the next one is longer; a quiet window forgets.
        let later = t0 + FIRST_LOCK + Duration::from_secs(1);
        assert_eq!(brake.check(guesser, later), Verdict::Pass);
        for _ in 0..LOCK_AFTER {
            brake.wrong(guesser, later);
        }
        assert_eq!(brake.check(guesser, later), Verdict::Locked(FIRST_LOCK * 2));
        let quiet = later + FIRST_LOCK * 2 + WINDOW + Duration::from_secs(1);
        assert_eq!(brake.check(guesser, quiet), Verdict::Pass);
        brake.wrong(guesser, quiet);
        assert_eq!(
            brake.check(guesser, quiet),
            Verdict::Pass,
            "the count began again"
        );
    }
}
