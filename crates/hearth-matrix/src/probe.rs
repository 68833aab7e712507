//! `hearth doctor`'s look at the homeserver: whether it answers, and whether
//! the saved session or the configured login is taken, without syncing.

use super::{MatrixChannel, MatrixError};

impl MatrixChannel {
    /// One line on what the homeserver said: who the bot is there. Asked
    /// with a client of its own, without the daemon's stores (a running
    /// daemon holds them) and without logging in anew (a password login
    /// makes a device: the doctor's is logged out again at once).
    pub async fn probe(&self) -> Result<String, MatrixError> {
        let s = &self.settings;
        let probe = self.build_unstored().await?;
        let session = self.state.session()?;
        let token = match (&session, &s.login) {
            (Some(saved), _) => saved.tokens.access_token.clone(),
            (None, super::Login::Token(token)) => token.expose().to_string(),
            (None, super::Login::Password(password)) => {
                // A password is tried the only way Matrix has: a login,
                // whose trial session is logged out again at once.
                self.password_login(
                    &probe,
                    password.expose(),
                    "hearth doctor (logged out again)",
                )
                .await?;
                if let Err(e) = probe.matrix_auth().logout().await {
                    tracing::warn!("matrix: the doctor's trial session was not logged out: {e}");
                }
                return Ok(format!(
                    "{} takes the password of {}; not logged in yet (the daemon logs in when it starts)",
                    s.homeserver, s.user
                ));
            }
        };
        let me = self.whoami(&probe, &token).await?;
        let device = me
            .device_id
            .map(|d| d.to_string())
            .unwrap_or_else(|| "no device".into());
        let kept = if session.is_some() {
            "the saved session"
        } else {
            "the access token"
        };
        Ok(format!(
            "{} takes {kept}: logged in as {} (device {device})",
            s.homeserver, me.user_id
        ))
    }
}

/// What to do about `e`, for `hearth doctor`.
pub fn fix(e: &MatrixError) -> &'static str {
    match e {
        MatrixError::Unreachable { why, .. }
            if why.to_ascii_lowercase().contains("certificate") =>
        {
            "this machine does not trust the homeserver's certificate: add its certificate authority to the system's (update-ca-certificates), or fix the server's certificate"
        }
        MatrixError::Unreachable { .. } => {
            "is the homeserver running, and is [channels.matrix] homeserver its client API address?"
        }
        MatrixError::Login { .. } => {
            "check [channels.matrix] user and password (or access_token, HEARTH_MATRIX_PASSWORD)"
        }
        MatrixError::WrongUser { .. } => "set [channels.matrix] user to the token's account",
        MatrixError::Session { .. } => {
            "move the data folder's matrix/ away to log in afresh (the bot's device then needs verifying again)"
        }
        MatrixError::Homeserver { .. } => {
            "give the homeserver as https://host (or http://127.0.0.1:port)"
        }
        _ => "see the daemon's log",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_refused_is_told_apart_from_a_server_away() {
        let away = MatrixError::Unreachable {
            url: "https://m.example.org".into(),
            why: "error sending request: connection refused".into(),
        };
        assert!(fix(&away).contains("is the homeserver running"));
        let untrusted = MatrixError::Unreachable {
            url: "https://m.example.org".into(),
            why: "invalid peer certificate: UnknownIssuer".into(),
        };
        assert!(fix(&untrusted).contains("does not trust the homeserver's certificate"));
    }
}
