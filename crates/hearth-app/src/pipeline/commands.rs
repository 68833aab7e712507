//! Runtime commands, answered without an LLM call: `/new`, `/model NAME`,
//! `/models`, `/stop`, `/status`, `/approvals reset`, `/help` (their
//! syntax is [`crate::channels::commands`]).

use super::Runtime;
use crate::channels::ChannelMessage;
use crate::channels::commands::{Command, HELP};

impl Runtime {
    /// The answer to a command.
    pub(super) async fn answer(
        &self,
        command: Command,
        message: &ChannelMessage,
        key: &str,
    ) -> String {
        let config = self.config();
        match command {
            Command::New => {
                self.chosen_models().remove(key);
                match self.sessions.clear(key) {
                    Ok(()) => {
                        "(new conversation) I have forgotten our earlier messages.".to_string()
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "cannot clear history");
                        "I could not forget this conversation: the history store failed."
                            .to_string()
                    }
                }
            }
            Command::Models => self.models(&config, key),
            Command::Model(name) => {
                if name == "default" {
                    self.chosen_models().remove(key);
                    format!("Back to the default model ({}).", config.model.path)
                } else if config.routing.models.contains_key(&name) {
                    self.chosen_models().insert(key.to_string(), name.clone());
                    format!("This chat now uses {name}.")
                } else {
                    format!("There is no model named `{name}`. /models lists them.")
                }
            }
            Command::Stop => "Nothing is running.".to_string(),
            Command::Status => self.status_of(&config, message, key).await,
            Command::ResetApprovals => match self.approvals.reset(message) {
                Ok(0) => "You had not allowed any tool for good in this chat.".to_string(),
                Ok(n) => format!(
                    "I will ask again before each of the {n} tools you had allowed for good in this chat."
                ),
                Err(e) => {
                    tracing::error!(error = %e, "cannot reset approvals");
                    "I could not forget your approvals: the history store failed.".to_string()
                }
            },
            Command::Help => HELP.to_string(),
        }
    }

    /// `/models`: the models this chat may use, the one in use marked.
    fn models(&self, config: &crate::config::Config, key: &str) -> String {
        let current = self
            .chosen_models()
            .get(key)
            .cloned()
            .unwrap_or_else(|| "default".to_string());
        let mut lines = vec![format!("default — {}", config.model.path)];
        lines.extend(
            config
                .routing
                .models
                .iter()
                .map(|(name, file)| format!("{name} — {file}")),
        );
        let marked: Vec<String> = lines
            .into_iter()
            .map(|l| {
                if l.split(" — ").next() == Some(current.as_str()) {
                    format!("• {l} (in use)")
                } else {
                    format!("• {l}")
                }
            })
            .collect();
        format!("Models:\n{}", marked.join("\n"))
    }

    /// `/status`: the daemon, the inbox, this chat and the data folder's
    /// stores against their limits.
    async fn status_of(
        &self,
        config: &crate::config::Config,
        message: &ChannelMessage,
        key: &str,
    ) -> String {
        let model = self
            .chosen_models()
            .get(key)
            .cloned()
            .unwrap_or_else(|| "default".to_string());
        let messages = self.sessions.load(key).map(|h| h.len()).unwrap_or(0);
        let inbox = match self.inbox.counts().await {
            Ok(counts) => crate::inbox::summary(&counts),
            Err(e) => format!("inbox: cannot be read ({e})"),
        };
        let stores = {
            let config = config.clone();
            // Without the folder's path: whoever may chat need not learn
            // where on the server (or under whose home) hearth keeps data.
            tokio::task::spawn_blocking(move || {
                crate::retention::render("data folder", &crate::retention::usage(&config))
            })
            .await
            .unwrap_or_else(|e| format!("data folder: cannot be read ({e})\n"))
        };
        format!(
            "{}\n{inbox}\nprovider: {}; model for this chat: {model}; {messages} messages in this conversation (channel {}).\n{}",
            self.status.render(),
            config.routing.default_provider,
            message.channel,
            stores.trim_end()
        )
    }
}
