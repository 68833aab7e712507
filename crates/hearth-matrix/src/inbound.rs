//! One room event read as a message: its words, its pictures, voice and
//! files (fetched and, in an encrypted room, decrypted by the SDK), its
//! thread; or a reaction, which may answer an approval question.

use matrix_sdk::Client;
use matrix_sdk::deserialized_responses::TimelineEvent;
use matrix_sdk::media::{MediaFormat, MediaRequestParameters};
use matrix_sdk::ruma::events::relation::Replacement;
use matrix_sdk::ruma::events::room::MediaSource;
use matrix_sdk::ruma::events::room::message::{MessageType, Relation, RoomMessageEventContent};
use matrix_sdk::ruma::events::{
    AnySyncMessageLikeEvent, AnySyncTimelineEvent, SyncMessageLikeEvent,
};
use matrix_sdk::ruma::{OwnedEventId, OwnedUserId, RoomId};

use hearth_channel::ChannelMessage;
use hearth_core::chat::{Attachment, Audio, Image};

/// The largest file taken from a message; the document and picture paths
/// have their own, smaller limits.
const LARGEST_FILE: u64 = 50 * 1024 * 1024;

/// What one timeline event is to the channel.
pub enum Read {
    /// A message: who, and what.
    Message {
        sender: OwnedUserId,
        message: Box<ChannelMessage>,
    },
    /// A reaction `key` by `sender` to `to`.
    Reaction {
        sender: OwnedUserId,
        to: OwnedEventId,
        key: String,
    },
    /// An event the bot could not decrypt (the keys may come later).
    Undecryptable,
    /// Anything else: state, edits, notices (other bots), redactions.
    Other,
}

/// Reads `event` of room `room`.
pub async fn read(client: &Client, room: &RoomId, event: &TimelineEvent) -> Read {
    if matches!(
        event.kind,
        matrix_sdk::deserialized_responses::TimelineEventKind::UnableToDecrypt { .. }
    ) {
        return Read::Undecryptable;
    }
    let Ok(any) = event.raw().deserialize() else {
        return Read::Other;
    };
    let AnySyncTimelineEvent::MessageLike(like) = any else {
        return Read::Other;
    };
    match like {
        AnySyncMessageLikeEvent::Reaction(SyncMessageLikeEvent::Original(r)) => Read::Reaction {
            sender: r.sender,
            to: r.content.relates_to.event_id,
            key: r.content.relates_to.key,
        },
        AnySyncMessageLikeEvent::RoomMessage(SyncMessageLikeEvent::Original(m)) => {
            let Some(message) = message(client, room, &m.event_id, &m.content).await else {
                return Read::Other;
            };
            let mut message = message;
            message.sender = m.sender.to_string();
            message.timestamp = u64::from(m.origin_server_ts.as_secs());
            Read::Message {
                sender: m.sender,
                message: Box::new(message),
            }
        }
        _ => Read::Other,
    }
}

/// The message `content` makes; `None` for what is not answered (an edit,
/// a notice, a location).
async fn message(
    client: &Client,
    room: &RoomId,
    id: &OwnedEventId,
    content: &RoomMessageEventContent,
) -> Option<ChannelMessage> {
    let thread = match &content.relates_to {
        // An edit changes words already answered: not a new question.
        Some(Relation::Replacement(Replacement { .. })) => return None,
        Some(Relation::Thread(t)) => Some(t.event_id.to_string()),
        _ => None,
    };
    let mut message = ChannelMessage::now(super::NAME, id.to_string(), "", room.as_str(), "");
    message.interruption_scope_id = Some(match &thread {
        Some(t) => format!("{room}:{t}"),
        None => room.to_string(),
    });
    message.thread_ts = thread;
    match &content.msgtype {
        MessageType::Text(t) => message.content = t.body.clone(),
        MessageType::Emote(t) => message.content = format!("* {}", t.body),
        MessageType::Image(i) => {
            message.content = caption(&i.body, i.filename.as_deref());
            match fetch(client, &i.source, i.info.as_ref().and_then(|i| i.size)).await {
                Ok(bytes) => message.images.push(Image::new(bytes)),
                Err(why) => missing(&mut message, "picture", &why),
            }
        }
        MessageType::Audio(a) => {
            message.content = caption(&a.body, a.filename.as_deref());
            let seconds = a
                .info
                .as_ref()
                .and_then(|i| i.duration)
                .map(|d| d.as_secs().min(u64::from(u32::MAX)) as u32);
            match fetch(client, &a.source, a.info.as_ref().and_then(|i| i.size)).await {
                Ok(bytes) => message.audio = Some(Audio::voice_note(bytes, seconds)),
                Err(why) => missing(&mut message, "voice message", &why),
            }
        }
        MessageType::File(f) => {
            message.content = caption(&f.body, f.filename.as_deref());
            let name = f.filename.as_deref().unwrap_or(&f.body);
            match fetch(client, &f.source, f.info.as_ref().and_then(|i| i.size)).await {
                Ok(bytes) => message.documents.push(Attachment::new(name, bytes)),
                Err(why) => missing(&mut message, "file", &why),
            }
        }
        // Notices are what bots send: never answered, or two bots would
        // answer each other forever.
        _ => return None,
    }
    Some(message)
}

/// A media message's words: its body when a filename is given beside it
/// (Matrix's caption), else nothing (the body is then only the file's name).
fn caption(body: &str, filename: Option<&str>) -> String {
    match filename {
        Some(name) if name != body => body.to_string(),
        _ => String::new(),
    }
}

/// A file the message carried that could not be taken: the message is
/// still answered, and says so, rather than lost.
fn missing(message: &mut ChannelMessage, what: &str, why: &str) {
    tracing::warn!("matrix: a {what} in {} not taken: {why}", message.id);
    let note = format!("[a {what} was sent that hearth could not take: {why}]");
    message.content = if message.content.is_empty() {
        note
    } else {
        format!("{}\n{note}", message.content)
    };
}

/// The file behind `source`, decrypted; why not when it is too large or
/// cannot be fetched.
async fn fetch(
    client: &Client,
    source: &MediaSource,
    size: Option<matrix_sdk::ruma::UInt>,
) -> Result<Vec<u8>, String> {
    let too_large = || format!("larger than {} MB", LARGEST_FILE / (1024 * 1024));
    if size.is_some_and(|s| u64::from(s) > LARGEST_FILE) {
        return Err(too_large());
    }
    let request = MediaRequestParameters {
        source: source.clone(),
        format: MediaFormat::File,
    };
    match client.media().get_media_content(&request, false).await {
        Ok(bytes) if bytes.len() as u64 <= LARGEST_FILE => Ok(bytes),
        Ok(_) => Err(too_large()),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caption_is_the_body_only_beside_a_filename() {
        assert_eq!(caption("notes.pdf", None), "");
        assert_eq!(caption("notes.pdf", Some("notes.pdf")), "");
        assert_eq!(caption("read this", Some("notes.pdf")), "read this");
    }
}
