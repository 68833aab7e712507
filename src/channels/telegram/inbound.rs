//! What arrives besides plain text: mentions in groups, and photos and
//! documents, saved into the workspace and handed on as markers.

use std::future::IntoFuture;
use std::path::{Path, PathBuf};

use teloxide::net::Download;
use teloxide::prelude::Requester;
use teloxide::types::{FileId, Message, UserId};

use super::TelegramChannel;
use super::error::{channel_error, download_error};
use super::media::safe_file_name;
use crate::channels::ChannelError;

/// Received files go here, in the chat's workspace folder.
pub const INBOX: &str = "received";

/// Who the bot is, to tell whether a group message is meant for it.
#[derive(Debug, Clone)]
pub(super) struct Addressing {
    pub bot_id: UserId,
    pub username: Option<String>,
}

impl Addressing {
    /// The text without the bot's @mention, if the message mentions the bot
    /// or replies to one of its messages; `None` if it is not addressed to it.
    pub fn strip(&self, message: &Message, text: &str) -> Option<String> {
        let replied = message
            .reply_to_message()
            .and_then(|r| r.from.as_ref())
            .is_some_and(|u| u.id == self.bot_id);
        let mention = self.username.as_ref().map(|u| format!("@{u}"));
        let found = mention
            .as_ref()
            .and_then(|m| find_mention(text, m).map(|i| (i, m.len())));
        match found {
            Some((i, len)) => {
                let rest = format!("{}{}", &text[..i], &text[i + len..]);
                Some(self.strip_command_suffix(rest.trim()))
            }
            None if replied => Some(self.strip_command_suffix(text.trim())),
            None => None,
        }
    }

    /// `/new@this_bot args` → `/new args`; other text unchanged.
    pub fn strip_command_suffix(&self, text: &str) -> String {
        let (Some(name), true) = (&self.username, text.starts_with('/')) else {
            return text.to_string();
        };
        let (command, rest) = text.split_at(text.find(char::is_whitespace).unwrap_or(text.len()));
        match command.split_once('@') {
            Some((cmd, bot)) if bot.eq_ignore_ascii_case(name) => format!("{cmd}{rest}"),
            _ => text.to_string(),
        }
    }
}

/// Where `@name` occurs in `text` as a whole name (any case).
fn find_mention(text: &str, mention: &str) -> Option<usize> {
    text.char_indices().map(|(i, _)| i).find(|&i| {
        let here = text
            .get(i..i + mention.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(mention));
        let whole = text
            .get(i + mention.len()..)
            .and_then(|after| after.chars().next())
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        here && whole
    })
}

impl TelegramChannel {
    /// Markers for the message's photo or document, after saving them. A file
    /// Telegram will not hand out (too big, gone) becomes a note instead; a
    /// network failure is an error, so the update is fetched again later.
    pub(super) async fn receive_media(&self, message: &Message) -> Result<String, ChannelError> {
        let chat = message.chat.id.0;
        let id = message.id.0;
        let (file_id, name, marker) = if let Some(sizes) = message.photo() {
            let Some(largest) = sizes
                .iter()
                .max_by_key(|p| u64::from(p.width) * u64::from(p.height))
            else {
                return Ok(String::new());
            };
            (
                largest.file.id.clone(),
                format!("{chat}_{id}_photo"),
                "IMAGE",
            )
        } else if let Some(doc) = message.document() {
            let original = doc.file_name.as_deref().unwrap_or("document");
            (
                doc.file.id.clone(),
                format!("{chat}_{id}_{}", safe_file_name(original)),
                "DOCUMENT",
            )
        } else {
            return Ok(String::new());
        };
        match self.download(&chat.to_string(), &file_id, &name).await {
            Ok(path) => Ok(format!("[{marker}:{}]", path.display())),
            Err(ChannelError::Rejected(why)) => {
                tracing::warn!("telegram: could not fetch a received file: {why}");
                Ok(format!(
                    "(a file was attached but could not be fetched: {why})"
                ))
            }
            Err(e) => Err(e),
        }
    }

    async fn download(
        &self,
        chat: &str,
        file_id: &FileId,
        name: &str,
    ) -> Result<PathBuf, ChannelError> {
        let file = self
            .bot
            .get_file(file_id.clone())
            .into_future()
            .await
            .map_err(channel_error)?;
        // Photos have no name of their own: keep Telegram's extension.
        let mut name = name.to_string();
        if !name.contains('.')
            && let Some(ext) = file.path.rsplit('.').next().filter(|e| *e != file.path)
        {
            name = format!("{name}.{}", safe_file_name(ext));
        }
        let workspaces = self.settings.workspaces.clone();
        let chat = chat.to_string();
        let (path, out) = tokio::task::spawn_blocking(move || {
            let folder = workspaces
                .prepare(super::NAME, &chat)
                .map_err(|e| e.to_string())?;
            open_inbox_file(&folder, &name)
        })
        .await
        .map_err(|e| ChannelError::Other(e.to_string()))?
        .map_err(ChannelError::Other)?;
        let mut out = tokio::fs::File::from_std(out);
        if let Err(e) = self.bot.download_file(&file.path, &mut out).await {
            drop(out);
            let _ = tokio::fs::remove_file(&path).await;
            return Err(download_error(e));
        }
        // tokio writes on a blocking thread: without a flush the last bytes
        // may not be in the file yet when the model is told to read it.
        if let Err(e) = tokio::io::AsyncWriteExt::flush(&mut out).await {
            drop(out);
            let _ = tokio::fs::remove_file(&path).await;
            return Err(ChannelError::Other(format!(
                "cannot write {}: {e}",
                path.display()
            )));
        }
        Ok(path)
    }
}

/// A new private file `<folder>/received/<name>` (`folder`: the chat's
/// workspace folder), opened beneath the folder: a `received` symlink a
/// sandboxed command left cannot send the download (or a chmod) elsewhere.
fn open_inbox_file(workspace: &Path, name: &str) -> Result<(PathBuf, std::fs::File), String> {
    let workspace = workspace
        .canonicalize()
        .map_err(|e| format!("workspace {}: {e}", workspace.display()))?;
    let dir = workspace.join(INBOX);
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(format!(
                "{} is not a folder (a link?); refused",
                dir.display()
            ));
        }
        Err(_) => crate::file_modes::make_private_dir(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?,
    }
    let path = dir.join(name);
    let file = crate::tools::confined::open(
        &workspace,
        &path,
        crate::tools::confined::Access::Write { append: false },
    )
    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok((path, file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downloads_never_follow_a_link_out_of_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        let (path, _) = open_inbox_file(&ws, "a.pdf").unwrap();
        assert!(path.ends_with("received/a.pdf") && path.is_file());
        std::fs::remove_dir_all(ws.join(INBOX)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, ws.join(INBOX)).unwrap();
        let e = open_inbox_file(&ws, "authorized_keys").unwrap_err();
        assert!(e.contains("refused"), "{e}");
        assert!(!elsewhere.join("authorized_keys").exists());
    }

    #[test]
    fn commands_addressed_to_this_bot_lose_the_suffix() {
        let a = Addressing {
            bot_id: UserId(1),
            username: Some("hearth_bot".into()),
        };
        assert_eq!(a.strip_command_suffix("/new@Hearth_Bot now"), "/new now");
        assert_eq!(a.strip_command_suffix("/new@other_bot"), "/new@other_bot");
        assert_eq!(
            a.strip_command_suffix("mail me@hearth_bot"),
            "mail me@hearth_bot"
        );
    }
}
