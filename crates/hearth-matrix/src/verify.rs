//! Cross-signing: on its first password login the bot's account gets an
//! identity of its own, and the bot's device is signed by it, so a person's
//! client sees a device its owner vouched for rather than an unknown
//! session. (Verifying the bot's account itself by emoji is not offered.)

use matrix_sdk::Client;
use matrix_sdk::ruma::api::client::uiaa;

use super::MatrixChannel;
use super::settings::Login;

impl MatrixChannel {
    /// Signs the bot's device with its account's identity, making the
    /// identity first where the account has none. Said in the log either way.
    pub(super) async fn sign_own_device(&self, client: &Client) {
        let encryption = client.encryption();
        let status = encryption.cross_signing_status().await;
        if status.as_ref().is_some_and(|s| s.is_complete()) {
            return;
        }
        let Login::Password(password) = &self.settings.login else {
            tracing::info!(
                "matrix: the bot's device is not cross-signed (a token login cannot make an identity): verify it from Element"
            );
            return;
        };
        let result = match encryption.bootstrap_cross_signing_if_needed(None).await {
            Err(e) => match e.as_uiaa_response() {
                Some(asked) => {
                    let mut auth = uiaa::Password::new(
                        uiaa::UserIdentifier::Matrix(uiaa::MatrixUserIdentifier::new(
                            self.settings.user.clone(),
                        )),
                        password.expose().to_string(),
                    );
                    auth.session = asked.session.clone();
                    encryption
                        .bootstrap_cross_signing(Some(uiaa::AuthData::Password(auth)))
                        .await
                }
                None => Err(e),
            },
            ok => ok,
        };
        let complete = encryption
            .cross_signing_status()
            .await
            .is_some_and(|s| s.is_complete());
        match result {
            Ok(()) if complete => {
                tracing::info!("matrix: the bot's device is cross-signed by its account")
            }
            Ok(()) => tracing::info!(
                "matrix: the account already has an identity whose keys this device lacks: verify the bot's device from Element"
            ),
            Err(e) => tracing::warn!("matrix: cannot cross-sign the bot's device: {e}"),
        }
    }
}
