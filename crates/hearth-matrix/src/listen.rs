//! Receiving: sync with the homeserver, hand each new message of an allowed
//! person to the inbox, and only then keep the sync token.
//!
//! The first run is quiet: what the rooms already hold is old, and only
//! the token is kept. After that, each sync's timeline events are read in
//! order ([`super::inbound`]); a message from someone not in
//! `allowed_users` is ignored (logged once per person and run), an invite
//! is taken only from an allowed person, and what came before the bot's
//! own join in a room it just joined is history, not a question. An event
//! the bot cannot decrypt yet (its keys still on their way) holds the token
//! back for a few syncs; if the keys never come, the sender is told.

use std::collections::HashSet;
use std::time::Duration;

use matrix_sdk::Client;
use matrix_sdk::config::SyncSettings;
use matrix_sdk::deserialized_responses::TimelineEvent;
use matrix_sdk::ruma::api::client::filter::{FilterDefinition, RoomEventFilter};
use matrix_sdk::ruma::api::client::receipt::create_receipt::v3::ReceiptType;
use matrix_sdk::ruma::api::client::sync::sync_events::v3::Filter;
use matrix_sdk::ruma::events::receipt::ReceiptThread;
use matrix_sdk::ruma::events::room::message::RoomMessageEventContent;
use matrix_sdk::ruma::events::{AnySyncStateEvent, AnySyncTimelineEvent};
use matrix_sdk::ruma::{OwnedRoomId, OwnedUserId, UInt};
use matrix_sdk::sync::SyncResponse;

use hearth_channel::{Accepted, Intake};

use super::inbound::{self, Read};
use super::{MatrixChannel, MatrixError};

/// Events of one room one sync hands over at most; more is said in the log.
const TIMELINE_LIMIT: u32 = 100;

/// Syncs an undecryptable message from an allowed person may hold the
/// token back, waiting for its keys.
const KEY_WAITS: u32 = 5;

impl MatrixChannel {
    pub(super) async fn listen_once(&self, intake: &Intake) -> Result<(), MatrixError> {
        let client = self.client().await?;
        let url = self.settings.homeserver.clone();
        let me = client.user_id().map(ToOwned::to_owned);
        let mut token = self.state.sync_token();
        let mut key_waits = 0;
        let mut strangers: HashSet<OwnedUserId> = HashSet::new();
        loop {
            let mut settings = SyncSettings::new().filter(filter());
            settings = match &token {
                Some(t) => settings
                    .token(t.clone())
                    .timeout(self.settings.sync_timeout),
                None => settings.token(matrix_sdk::config::SyncToken::NoToken),
            };
            let response = tokio::select! {
                r = client.sync_once(settings) => r.map_err(|e| MatrixError::from_sdk(&url, e))?,
                () = intake.closed() => return Ok(()),
            };
            if !self
                .healthy
                .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                if !self.signed.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    self.sign_own_device(&client).await;
                }
                tracing::info!("matrix: listening as {} on {url}", self.settings.user);
            }
            self.take_invites(&client, &response).await;
            if token.is_none() {
                let old: usize = response
                    .rooms
                    .joined
                    .values()
                    .map(|r| r.timeline.events.len())
                    .sum();
                tracing::info!(
                    "matrix: first sync: {old} events already in the bot's rooms are old and are not answered"
                );
            } else {
                let held = self
                    .take_messages(
                        &client,
                        me.as_deref(),
                        &response,
                        intake,
                        &mut strangers,
                        key_waits < KEY_WAITS,
                    )
                    .await?;
                if held {
                    key_waits += 1;
                    tracing::info!(
                        "matrix: a message cannot be decrypted yet; waiting for its keys ({key_waits} of {KEY_WAITS})"
                    );
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    continue;
                }
            }
            key_waits = 0;
            self.state.save_sync_token(&response.next_batch)?;
            self.state.tighten();
            token = Some(response.next_batch);
            if intake.is_closed() {
                return Ok(());
            }
        }
    }

    /// Joins the rooms an allowed person invited the bot to; others' stay
    /// unanswered.
    async fn take_invites(&self, client: &Client, response: &SyncResponse) {
        for room_id in response.rooms.invited.keys() {
            let Some(room) = client.get_room(room_id) else {
                continue;
            };
            let inviter = match room.invite_details().await {
                Ok(invite) => invite.inviter_id,
                Err(e) => {
                    tracing::warn!("matrix: cannot read the invite to {room_id}: {e}");
                    continue;
                }
            };
            if !self.settings.allows(inviter.as_str()) {
                tracing::info!(
                    "matrix: ignored an invite to {room_id} from {inviter} (not in allowed_users)"
                );
                continue;
            }
            match room.join().await {
                Ok(()) => tracing::info!("matrix: joined {room_id}, invited by {inviter}"),
                Err(e) => tracing::warn!("matrix: cannot join {room_id}: {e}"),
            }
        }
    }

    /// Hands each new message of an allowed person to the inbox and each
    /// reaction to the questions. True when an undecryptable message of an
    /// allowed person holds the sync back (only while `may_wait`).
    async fn take_messages(
        &self,
        client: &Client,
        me: Option<&matrix_sdk::ruma::UserId>,
        response: &SyncResponse,
        intake: &Intake,
        strangers: &mut HashSet<OwnedUserId>,
        may_wait: bool,
    ) -> Result<bool, MatrixError> {
        if may_wait {
            let waiting = response.rooms.joined.values().any(|update| {
                new_events(&update.timeline.events, me).iter().any(|e| {
                    undecryptable_from(e).is_some_and(|s| self.settings.allows(s.as_str()))
                })
            });
            if waiting {
                return Ok(true);
            }
        }
        for (room_id, update) in &response.rooms.joined {
            if update.timeline.limited {
                tracing::warn!(
                    "matrix: {room_id} had more new events than one sync holds ({TIMELINE_LIMIT}); older ones were not read"
                );
            }
            for event in new_events(&update.timeline.events, me) {
                match inbound::read(client, room_id, event).await {
                    Read::Message { sender, message } => {
                        if Some(sender.as_ref()) == me {
                            continue;
                        }
                        if !self.settings.allows(sender.as_str()) {
                            if strangers.insert(sender.clone()) {
                                tracing::info!(
                                    "matrix: ignored a message from {sender} in {room_id} (not in allowed_users)"
                                );
                            }
                            continue;
                        }
                        let id = message.id.clone();
                        match intake.accept(*message).await {
                            Ok(Accepted::Queued) => self.mark_read(client, room_id, &id).await,
                            Ok(Accepted::Known { .. }) => {
                                tracing::debug!("matrix: {id} is already in the inbox")
                            }
                            // Stopping: the token stays where it was.
                            Err(_) => {
                                return Err(MatrixError::Server("the daemon is stopping".into()));
                            }
                        }
                    }
                    Read::Reaction { sender, to, key } => {
                        self.reacted(client, room_id, &sender, &to, &key).await
                    }
                    Read::Undecryptable => {
                        if let Some(sender) = undecryptable_from(event)
                            && self.settings.allows(sender.as_str())
                        {
                            self.cannot_read(client, room_id).await;
                        }
                    }
                    Read::Other => {}
                }
            }
        }
        Ok(false)
    }

    /// Marks `event` read: the person sees their message arrived.
    async fn mark_read(&self, client: &Client, room: &OwnedRoomId, event: &str) {
        let (Some(room), Ok(id)) = (client.get_room(room), event.try_into()) else {
            return;
        };
        if let Err(e) = room
            .send_single_receipt(ReceiptType::Read, ReceiptThread::Unthreaded, id)
            .await
        {
            tracing::debug!("matrix: cannot mark {event} read: {e}");
        }
    }

    /// A message whose keys never came: its sender is told.
    async fn cannot_read(&self, client: &Client, room: &OwnedRoomId) {
        tracing::warn!(
            "matrix: a message in {room} could not be decrypted: its keys never reached this device"
        );
        if let Some(room) = client.get_room(room) {
            let text = "I could not decrypt your last message: its keys did not reach my device. Please send it again.";
            if let Err(e) = room.send(RoomMessageEventContent::notice_plain(text)).await {
                tracing::warn!("matrix: cannot say so: {e}");
            }
        }
    }
}

/// What the sync asks for: members loaded lazily, and up to
/// [`TIMELINE_LIMIT`] events of each room.
fn filter() -> Filter {
    let mut timeline = RoomEventFilter::default();
    timeline.limit = Some(UInt::from(TIMELINE_LIMIT));
    let mut definition = FilterDefinition::with_lazy_loading();
    definition.room.timeline = timeline;
    Filter::FilterDefinition(definition)
}

/// The events of a room's timeline that are new to the bot: in a room it
/// has just joined, those after its own join (what came before is history
/// it was not asked).
fn new_events<'a>(
    events: &'a [TimelineEvent],
    me: Option<&matrix_sdk::ruma::UserId>,
) -> &'a [TimelineEvent] {
    let joined_at = events.iter().rposition(|e| {
        matches!(
            e.raw().deserialize(),
            Ok(AnySyncTimelineEvent::State(AnySyncStateEvent::RoomMember(m)))
                if Some(m.state_key().as_ref()) == me
                    && m.membership() == &matrix_sdk::ruma::events::room::member::MembershipState::Join
        )
    });
    match joined_at {
        Some(i) => &events[i + 1..],
        None => events,
    }
}

/// The sender of an event the bot could not decrypt.
fn undecryptable_from(event: &TimelineEvent) -> Option<OwnedUserId> {
    match &event.kind {
        matrix_sdk::deserialized_responses::TimelineEventKind::UnableToDecrypt {
            event, ..
        } => event.get_field::<OwnedUserId>("sender").ok().flatten(),
        _ => None,
    }
}
