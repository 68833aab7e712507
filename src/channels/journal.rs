//! The record a reply is sent against, so that a restart resumes a send
//! instead of repeating it.
//!
//! A reply goes out as numbered parts (a long text split, then files). For
//! each part the channel asks [`SendJournal::delivered`]; a part already
//! delivered is skipped. Otherwise it records the intent
//! ([`SendJournal::sending`]) before the platform call and the platform's
//! message id after it ([`SendJournal::sent`]). A part whose intent was
//! recorded but not its id may have arrived (the process died between the
//! call and the record): it is sent again, so the one duplicate this can
//! cause is confined to that part and to that moment.

use super::ChannelError;
use crate::tools::BoxFuture;

pub trait SendJournal: Send + Sync {
    /// The platform id of part `index`, if it was delivered.
    fn delivered(&self, index: usize) -> Option<String>;

    /// Records that part `index` is about to be sent; `Ok` once recorded.
    fn sending(&self, index: usize) -> BoxFuture<'_, Result<(), ChannelError>>;

    /// Records that part `index` arrived as the platform's message `id`.
    fn sent(&self, index: usize, id: &str);
}

/// No record: every part is sent (replies of channels that keep none).
pub struct Unrecorded;

impl SendJournal for Unrecorded {
    fn delivered(&self, _index: usize) -> Option<String> {
        None
    }

    fn sending(&self, _index: usize) -> BoxFuture<'_, Result<(), ChannelError>> {
        Box::pin(async { Ok(()) })
    }

    fn sent(&self, _index: usize, _id: &str) {}
}
