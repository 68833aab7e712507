//! `GET /cal/<secret>.ics`: the person's deadlines for a calendar app to
//! subscribe to. The secret in the address is the credential (calendar
//! apps send no token), so the route stands outside the guard; a wrong or
//! revoked secret is answered 401 like a wrong token, which the brake
//! slows and then locks out per address. Read-only, and nothing but the
//! feed: the daemon hands the gateway a [`CalendarFeed`] and nothing more.

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::http::App;

/// What the daemon lets the gateway serve of the calendar.
pub trait CalendarFeed: Send + Sync {
    /// The feed's text when `secret` is its secret, `None` when it is not
    /// (or the feed was revoked).
    fn feed(&self, secret: &str) -> Result<Option<String>, CalendarError>;
}

/// The feed could not be read (its store failed).
#[derive(Debug, thiserror::Error)]
#[error("the calendar feed: {0}")]
pub struct CalendarError(pub String);

/// The longest secret looked at.
const MOST: usize = 128;

pub(super) async fn feed(State(app): State<App>, Path(file): Path<String>) -> Response {
    let secret = file.strip_suffix(".ics").unwrap_or("");
    let wrong = || {
        (
            StatusCode::UNAUTHORIZED,
            "no calendar feed at this address (revoked, or never made: `hearth cal url` prints the current one)\n",
        )
            .into_response()
    };
    if secret.is_empty()
        || secret.len() > MOST
        || !secret.bytes().all(|b| b.is_ascii_alphanumeric())
    {
        return wrong();
    }
    let Some(calendar) = app.shared.calendar.get() else {
        return (StatusCode::NOT_FOUND, "this box serves no calendar feed\n").into_response();
    };
    match calendar.feed(secret) {
        Ok(Some(text)) => (
            [
                (header::CONTENT_TYPE, "text/calendar; charset=utf-8"),
                (header::CACHE_CONTROL, "private, max-age=300"),
                (
                    header::CONTENT_DISPOSITION,
                    "inline; filename=\"hearth.ics\"",
                ),
            ],
            text,
        )
            .into_response(),
        Ok(None) => wrong(),
        Err(e) => {
            tracing::warn!("{e}");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "the calendar feed cannot be read now; try again later\n",
            )
                .into_response()
        }
    }
}
