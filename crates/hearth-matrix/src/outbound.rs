//! Sending: a reply in its room (and thread), as one transaction the
//! homeserver takes once however often a restart sends it again.

use matrix_sdk::ruma::events::relation::Thread;
use matrix_sdk::ruma::events::room::message::{Relation, RoomMessageEventContent};
use matrix_sdk::ruma::{OwnedEventId, OwnedTransactionId};

use hearth_channel::SendMessage;

/// `content` in thread `root`, when there is one.
pub fn in_thread(
    mut content: RoomMessageEventContent,
    root: Option<&str>,
) -> RoomMessageEventContent {
    if let Some(root) = root.and_then(|r| OwnedEventId::try_from(r).ok()) {
        content.relates_to = Some(Relation::Thread(Thread::plain(root.clone(), root)));
    }
    content
}

/// The transaction id of `message`. A reply to a message is the same
/// transaction every time it is sent (the homeserver keeps one event per
/// transaction, so a send repeated after a crash shows once); a message
/// that answers nothing (a reminder) is new each time.
pub fn transaction(message: &SendMessage) -> OwnedTransactionId {
    match &message.in_reply_to {
        Some(id) => format!(
            "hearth-{:016x}",
            fnv1a(&[id.as_bytes(), message.content.as_bytes()])
        )
        .into(),
        None => matrix_sdk::ruma::TransactionId::new(),
    }
}

/// FNV-1a over `parts`: stable across builds and runs, unlike std's hasher.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.iter().chain(&[0xff]) {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_one_transaction_and_a_reminder_is_new_each_time() {
        let mut reply = SendMessage::new("!room:home", "Rome.");
        reply.in_reply_to = Some("$event".into());
        assert_eq!(transaction(&reply), transaction(&reply));
        let mut other = reply.clone();
        other.content = "Paris.".into();
        assert_ne!(transaction(&reply), transaction(&other));
        let reminder = SendMessage::new("!room:home", "Take the bins out.");
        assert_ne!(transaction(&reminder), transaction(&reminder));
    }
}
