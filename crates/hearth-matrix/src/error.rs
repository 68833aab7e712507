//! What can go wrong with the homeserver, and how a listener's failure is
//! told to the supervisor.

use hearth_channel::ChannelError;

#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    #[error("[channels.matrix] homeserver `{url}`: {why}")]
    Homeserver { url: String, why: String },
    #[error("cannot reach the homeserver {url}: {why}")]
    Unreachable { url: String, why: String },
    #[error(
        "login as `{user}` refused: {why} (check [channels.matrix] user and password or access_token)"
    )]
    Login { user: String, why: String },
    #[error(
        "the access token belongs to `{found}`, not to `{user}` (check [channels.matrix] user)"
    )]
    WrongUser { user: String, found: String },
    #[error(
        "the saved session in {path} is not this account's ({why}); move that folder away to log in afresh"
    )]
    Session { path: String, why: String },
    #[error("the homeserver answered: {0}")]
    Server(String),
    #[error("cannot send to `{0}`: not a room this bot is in")]
    NoRoom(String),
    #[error("the channel's state in {path}: {source}")]
    State {
        path: String,
        source: std::io::Error,
    },
}

impl MatrixError {
    /// An error of the SDK, sorted into reachability and refusal.
    pub fn from_sdk(url: &str, e: matrix_sdk::Error) -> Self {
        match e {
            matrix_sdk::Error::Http(http) => Self::from_http(url, *http),
            other => Self::Server(other.to_string()),
        }
    }

    pub fn from_http(url: &str, e: matrix_sdk::HttpError) -> Self {
        if e.as_client_api_error().is_some() {
            Self::Server(e.to_string())
        } else {
            Self::Unreachable {
                url: url.to_string(),
                why: e.to_string(),
            }
        }
    }
}

/// Why sending failed, for the inbox: a refusal by the homeserver (not a
/// member of the room, a bad request) is for good; anything else (the
/// server unreachable, rate limits, the keys of an encrypted room not
/// shared yet) may pass, and the reply is tried again later.
pub fn send_error(e: matrix_sdk::Error) -> ChannelError {
    if let matrix_sdk::Error::Http(http) = &e
        && let Some(api) = http.as_client_api_error()
        && api.status_code.is_client_error()
        && api.status_code.as_u16() != 429
    {
        return ChannelError::Rejected(format!("the homeserver refused the message: {e}"));
    }
    ChannelError::Network(format!("the message did not reach the homeserver: {e}"))
}

impl From<MatrixError> for ChannelError {
    fn from(e: MatrixError) -> Self {
        match e {
            MatrixError::Unreachable { .. } => ChannelError::Network(e.to_string()),
            MatrixError::Login { .. }
            | MatrixError::WrongUser { .. }
            | MatrixError::Homeserver { .. }
            | MatrixError::NoRoom(_) => ChannelError::Rejected(e.to_string()),
            _ => ChannelError::Other(e.to_string()),
        }
    }
}
