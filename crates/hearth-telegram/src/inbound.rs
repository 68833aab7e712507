//! What arrives besides plain text: mentions in groups; photos and picture
//! documents, held in memory for the model's eyes; other documents, saved
//! into the workspace and handed on as markers.

use std::future::IntoFuture;
use std::path::{Path, PathBuf};

use teloxide::net::Download;
use teloxide::prelude::Requester;
use teloxide::types::{FileId, Message, UserId};

use super::TelegramChannel;
use super::error::{channel_error, download_error};
use super::media::safe_file_name;
use hearth_channel::ChannelError;
use hearth_core::chat::{Audio, Image};

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

/// The largest picture, recording or document taken from Telegram (the Bot
/// API hands out files up to 20 MB); `[model] image_max_mb`, `[voice]` and
/// the document reader's own caps apply after.
pub const MAX_PICTURE_BYTES: usize = 20 << 20;

/// What a message carried besides its text.
#[derive(Debug, Default)]
pub(super) struct Attached {
    /// A document's workspace marker, or a note on a file that could not be had.
    pub note: String,
    /// Its photo, or a document that is a picture: for the model's eyes.
    pub images: Vec<Image>,
    /// Its voice note, audio, or a document that is sound: to transcribe.
    pub audio: Option<Audio>,
}

impl TelegramChannel {
    /// The message's photo (or picture document) as a picture, or its other
    /// document saved into the workspace as a marker. A file Telegram will
    /// not hand out (too big, gone) becomes a note instead; a network
    /// failure is an error, so the update is fetched again later.
    pub(super) async fn receive_media(&self, message: &Message) -> Result<Attached, ChannelError> {
        let chat = message.chat.id.0;
        let id = message.id.0;
        let picture = if let Some(sizes) = message.photo() {
            sizes
                .iter()
                .max_by_key(|p| u64::from(p.width) * u64::from(p.height))
                .map(|p| p.file.id.clone())
        } else {
            message
                .document()
                .filter(|d| d.mime_type.as_ref().is_some_and(|m| m.type_() == "image"))
                .map(|d| d.file.id.clone())
        };
        let sound = if let Some(voice) = message.voice() {
            Some((voice.file.id.clone(), Some(voice.duration.seconds()), true))
        } else if let Some(audio) = message.audio() {
            Some((audio.file.id.clone(), Some(audio.duration.seconds()), false))
        } else {
            message
                .document()
                .filter(|d| d.mime_type.as_ref().is_some_and(|m| m.type_() == "audio"))
                .map(|d| (d.file.id.clone(), None, false))
        };
        if let Some((file_id, seconds, voice_note)) = sound {
            return match self.fetch_bytes(&file_id, "sound").await {
                Ok(bytes) => Ok(Attached {
                    audio: Some(Audio {
                        bytes: bytes.into(),
                        declared_seconds: seconds,
                        voice_note,
                    }),
                    ..Attached::default()
                }),
                Err(ChannelError::Rejected(why)) => {
                    self.cannot_take(message, "that recording", &why).await;
                    Ok(Attached::default())
                }
                Err(e) => Err(e),
            };
        }
        if let Some(file_id) = picture {
            return match self.fetch_bytes(&file_id, "picture").await {
                Ok(bytes) => Ok(Attached {
                    images: vec![Image::new(bytes)],
                    ..Attached::default()
                }),
                Err(ChannelError::Rejected(why)) => {
                    self.cannot_take(message, "that picture", &why).await;
                    Ok(Attached::default())
                }
                Err(e) => Err(e),
            };
        }
        let Some(doc) = message.document() else {
            return Ok(Attached::default());
        };
        let original = doc.file_name.as_deref().unwrap_or("document");
        let name = format!("{chat}_{id}_{}", safe_file_name(original));
        let note = match self.download(&chat.to_string(), &doc.file.id, &name).await {
            Ok(path) => format!("[DOCUMENT:{}]", path.display()),
            Err(ChannelError::Rejected(why)) => {
                self.cannot_take(message, "that file", &why).await;
                return Ok(Attached::default());
            }
            Err(e) => return Err(e),
        };
        Ok(Attached {
            note,
            ..Attached::default()
        })
    }

    /// Says at once, as hearth itself, that a file could not be had: a
    /// model cannot see or hear what never reached it. A caption still
    /// goes on to the model.
    async fn cannot_take(&self, message: &Message, what: &str, why: &str) {
        tracing::warn!("telegram: could not fetch {what}: {why}");
        let to = super::outbound::Target {
            chat: message.chat.id,
            thread: message.thread_id,
        };
        let notice = format!("I could not take {what}: {why}.");
        if let Err(e) = self.post(to, &notice, None).await {
            tracing::warn!("telegram: could not say so: {e}");
        }
    }

    /// A picture's or recording's bytes, held in memory only (never
    /// written to the workspace); one over [`MAX_PICTURE_BYTES`] is refused.
    async fn fetch_bytes(&self, file_id: &FileId, what: &str) -> Result<Vec<u8>, ChannelError> {
        let file = self
            .bot
            .get_file(file_id.clone())
            .into_future()
            .await
            .map_err(channel_error)?;
        let too_big = || {
            ChannelError::Rejected(format!(
                "the {what} is larger than the {} MB Telegram hands a bot; send it smaller",
                MAX_PICTURE_BYTES >> 20
            ))
        };
        if file.size as usize > MAX_PICTURE_BYTES {
            return Err(too_big());
        }
        let mut sink = Capped::default();
        self.bot
            .download_file(&file.path, &mut sink)
            .await
            .map_err(download_error)?;
        if sink.over {
            return Err(too_big());
        }
        Ok(sink.bytes)
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
        // A bot is handed files up to 20 MB; a larger one (a server that
        // says otherwise) is not written to the disk.
        if file.size as usize > MAX_PICTURE_BYTES {
            return Err(ChannelError::Rejected(format!(
                "the file is larger than the {} MB Telegram hands a bot; send it smaller",
                MAX_PICTURE_BYTES >> 20
            )));
        }
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
        Err(_) => hearth_core::file_modes::make_private_dir(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?,
    }
    let path = dir.join(name);
    let file = hearth_core::confined::open(
        &workspace,
        &path,
        hearth_core::confined::Access::Write { append: false },
    )
    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok((path, file))
}

/// Collects a download up to [`MAX_PICTURE_BYTES`]; past that it notes
/// the overflow and drops the rest (a server that lied about the size).
#[derive(Default)]
struct Capped {
    bytes: Vec<u8>,
    over: bool,
}

impl tokio::io::AsyncWrite for Capped {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self.bytes.len() + buf.len() > MAX_PICTURE_BYTES {
            self.over = true;
        } else {
            self.bytes.extend_from_slice(buf);
        }
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
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
