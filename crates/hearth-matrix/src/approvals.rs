//! Approvals by reaction: the question is a message in the room, and the
//! person who started the turn answers with 👍 (once), ✅ (always in this
//! room) or 👎 (deny). A reaction by anyone else leaves the question open
//! and is said in the room.

use std::collections::HashMap;
use std::sync::Mutex;

use matrix_sdk::Client;
use matrix_sdk::ruma::events::room::message::RoomMessageEventContent;
use matrix_sdk::ruma::{OwnedEventId, OwnedRoomId, OwnedUserId};

use hearth_channel::approval::Delivered;
use hearth_channel::{Answer, ApprovalRequest, ChannelError};

use super::MatrixChannel;

/// Open questions by the event id of the message that asks them.
#[derive(Default)]
pub struct Asked(Mutex<HashMap<OwnedEventId, String>>);

impl Asked {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<OwnedEventId, String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The answer a reaction gives; `None` for any other emoji.
pub fn answer_of(key: &str) -> Option<Answer> {
    // Skin tones and the emoji presentation selector say the same thing.
    let key: String = key
        .chars()
        .filter(|c| !matches!(*c, '\u{FE0F}' | '\u{1F3FB}'..='\u{1F3FF}'))
        .collect();
    match key.as_str() {
        "👍" => Some(Answer::Once),
        "✅" => Some(Answer::Always),
        "👎" | "❌" => Some(Answer::Deny),
        _ => None,
    }
}

impl MatrixChannel {
    pub(super) async fn ask(
        &self,
        request: &ApprovalRequest,
    ) -> Result<Option<Answer>, ChannelError> {
        let client = self
            .logged_in()
            .await
            .ok_or_else(|| ChannelError::Network("not logged in to the homeserver yet".into()))?;
        let room = client
            .get_room(
                <&matrix_sdk::ruma::RoomId>::try_from(request.recipient.as_str()).map_err(
                    |_| ChannelError::Rejected(format!("`{}` is not a room", request.recipient)),
                )?,
            )
            .ok_or_else(|| ChannelError::Rejected(format!("not in room {}", request.recipient)))?;
        let ticket = self.questions.ask(request);
        let text = format!(
            "🔐 Allow `{}`?\n{}\nReact 👍 to allow once, ✅ to always allow in this room, 👎 to deny. (No answer within {} s counts as Deny.)",
            request.tool,
            request.arguments,
            request.timeout.as_secs()
        );
        let sent = room
            .send(super::outbound::in_thread(
                RoomMessageEventContent::text_plain(text),
                request.thread_ts.as_deref(),
            ))
            .await
            .map_err(|e| ChannelError::Network(e.to_string()))?;
        self.asked
            .map()
            .insert(sent.response.event_id.clone(), request.id.clone());
        let given = ticket.wait_given().await;
        self.asked.map().remove(&sent.response.event_id);
        let outcome = match given {
            Some(g) if g.elsewhere => format!("{} on the web page", g.answer.verdict()),
            Some(g) => g.answer.verdict().to_string(),
            None => format!("no answer within {} s: not run", request.timeout.as_secs()),
        };
        let said = format!("`{}`: {outcome}", request.tool);
        if let Err(e) = room
            .send(super::outbound::in_thread(
                RoomMessageEventContent::notice_plain(said),
                request.thread_ts.as_deref(),
            ))
            .await
        {
            tracing::warn!("matrix: cannot say how a question ended: {e}");
        }
        Ok(given.map(|g| g.answer))
    }

    /// `sender` reacted with `key` to event `to` in `room`.
    pub(super) async fn reacted(
        &self,
        client: &Client,
        room: &OwnedRoomId,
        sender: &OwnedUserId,
        to: &OwnedEventId,
        key: &str,
    ) {
        let Some(id) = self.asked.map().get(to).cloned() else {
            return;
        };
        let Some(answer) = answer_of(key) else {
            return;
        };
        match self.questions.answer(&id, sender.as_str(), answer) {
            Delivered::Taken => {
                tracing::info!("matrix: {sender} answered a question: {}", answer.as_str())
            }
            Delivered::Expired => {}
            Delivered::NotYours => {
                tracing::warn!(
                    "matrix: {sender} answered a question that is not theirs; it stays open"
                );
                if let Some(room) = client.get_room(room) {
                    let text = format!("{sender}: only the person who asked can answer this.");
                    let _ = room.send(RoomMessageEventContent::notice_plain(text)).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_answers_and_their_variants() {
        assert_eq!(answer_of("👍"), Some(Answer::Once));
        assert_eq!(
            answer_of("👍️"),
            Some(Answer::Once),
            "with the presentation selector"
        );
        assert_eq!(answer_of("👍🏽"), Some(Answer::Once), "with a skin tone");
        assert_eq!(answer_of("✅"), Some(Answer::Always));
        assert_eq!(answer_of("👎"), Some(Answer::Deny));
        assert_eq!(answer_of("😂"), None);
        assert_eq!(answer_of("yes"), None);
    }
}
