//! The SDK's client for the bot: built once on its store, logged in with the
//! saved session, or with the configured password or token on the first
//! run (the session then saved).

use matrix_sdk::authentication::matrix::MatrixSession;
use matrix_sdk::config::RequestConfig;
use matrix_sdk::store::RoomLoadSettings;
use matrix_sdk::{Client, SessionMeta, SessionTokens};

use super::settings::Login;
use super::{MatrixChannel, MatrixError};

impl MatrixChannel {
    /// The logged-in client, made on first use and kept: the SDK's stores
    /// are opened once per process.
    pub(super) async fn client(&self) -> Result<Client, MatrixError> {
        let mut held = self.client.lock().await;
        if let Some(client) = held.as_ref() {
            return Ok(client.clone());
        }
        let client = self.log_in().await?;
        *held = Some(client.clone());
        Ok(client)
    }

    /// The client when one is logged in, without trying to log in.
    pub(super) async fn logged_in(&self) -> Option<Client> {
        self.client.lock().await.clone()
    }

    async fn build(&self) -> Result<Client, MatrixError> {
        let s = &self.settings;
        let requests = RequestConfig::new()
            .timeout(s.request_timeout)
            // A request that fails is the listener's to retry, with the
            // daemon's backoff, and a reply's to be sent again later.
            .retry_limit(1);
        Client::builder()
            .homeserver_url(&s.homeserver)
            .sqlite_store(self.state.store_dir(), None)
            .request_config(requests)
            .build()
            .await
            .map_err(|e| MatrixError::Homeserver {
                url: s.homeserver.clone(),
                why: e.to_string(),
            })
    }

    async fn log_in(&self) -> Result<Client, MatrixError> {
        let s = &self.settings;
        let client = self.build().await?;
        let auth = client.matrix_auth();
        if let Some(session) = self.state.session()? {
            if session.meta.user_id.as_str() != s.user {
                return Err(MatrixError::Session {
                    path: self.state.session_path().display().to_string(),
                    why: format!("it is {}'s", session.meta.user_id),
                });
            }
            auth.restore_session(session, RoomLoadSettings::default())
                .await
                .map_err(|e| MatrixError::from_sdk(&s.homeserver, e))?;
            // Whether the server still takes it.
            client.whoami().await.map_err(|e| self.refused(e))?;
            self.state.tighten();
            return Ok(client);
        }
        match &s.login {
            Login::Password(password) => {
                self.password_login(&client, password.expose(), &s.device_name)
                    .await?;
            }
            Login::Token(token) => {
                let probe = self.build_unstored().await?;
                let me = self.whoami(&probe, token.expose()).await?;
                if me.user_id.as_str() != s.user {
                    return Err(MatrixError::WrongUser {
                        user: s.user.clone(),
                        found: me.user_id.to_string(),
                    });
                }
                let device_id = me.device_id.ok_or_else(|| MatrixError::Login {
                    user: s.user.clone(),
                    why: "the token belongs to no device".into(),
                })?;
                auth.restore_session(
                    MatrixSession {
                        meta: SessionMeta {
                            user_id: me.user_id,
                            device_id,
                        },
                        tokens: SessionTokens {
                            access_token: token.expose().to_string(),
                            refresh_token: None,
                        },
                    },
                    RoomLoadSettings::default(),
                )
                .await
                .map_err(|e| MatrixError::from_sdk(&s.homeserver, e))?;
            }
        }
        let session = auth.session().ok_or_else(|| MatrixError::Login {
            user: s.user.clone(),
            why: "no session after login".into(),
        })?;
        self.state.save_session(&session)?;
        self.state.tighten();
        tracing::info!(
            "matrix: logged in as {} on a new device {} ({})",
            session.meta.user_id,
            session.meta.device_id,
            s.device_name
        );
        Ok(client)
    }

    /// Logs `client` in as the bot with `password`, as a new device named
    /// `device_name`.
    pub(super) async fn password_login(
        &self,
        client: &Client,
        password: &str,
        device_name: &str,
    ) -> Result<(), MatrixError> {
        client
            .matrix_auth()
            .login_username(&self.settings.user, password)
            .initial_device_display_name(device_name)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| match e {
                matrix_sdk::Error::Http(h) => self.refused(*h),
                other => MatrixError::Server(other.to_string()),
            })
    }

    /// Who the server says `token` is, asked with `probe` (a client
    /// without a store).
    pub(super) async fn whoami(
        &self,
        probe: &Client,
        token: &str,
    ) -> Result<matrix_sdk::ruma::api::client::account::whoami::v3::Response, MatrixError> {
        let s = &self.settings;
        let user_id = s.user.as_str().try_into().map_err(|_| MatrixError::Login {
            user: s.user.clone(),
            why: "not a Matrix ID (@name:server)".into(),
        })?;
        probe
            .restore_session(MatrixSession {
                meta: SessionMeta {
                    user_id,
                    device_id: "HEARTHPROBE".into(),
                },
                tokens: SessionTokens {
                    access_token: token.to_string(),
                    refresh_token: None,
                },
            })
            .await
            .map_err(|e| MatrixError::from_sdk(&s.homeserver, e))?;
        probe.whoami().await.map_err(|e| self.refused(e))
    }

    /// A client without a store, to ask the server whose a token is.
    pub(super) async fn build_unstored(&self) -> Result<Client, MatrixError> {
        Client::builder()
            .homeserver_url(&self.settings.homeserver)
            .request_config(
                RequestConfig::new()
                    .timeout(self.settings.request_timeout)
                    .retry_limit(1),
            )
            .build()
            .await
            .map_err(|e| MatrixError::Homeserver {
                url: self.settings.homeserver.clone(),
                why: e.to_string(),
            })
    }

    /// A login or whoami that failed: refused by the server, or not heard.
    pub(super) fn refused(&self, e: matrix_sdk::HttpError) -> MatrixError {
        match e.as_client_api_error() {
            Some(api) => MatrixError::Login {
                user: self.settings.user.clone(),
                why: api.to_string(),
            },
            None => MatrixError::from_http(&self.settings.homeserver, e),
        }
    }
}
