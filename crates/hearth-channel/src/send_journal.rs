//! The record a reply is sent against, so that a restart resumes a send
//! instead of repeating it.
//!
//! A reply goes out as numbered parts (a long text split, then files), one
//! after another. For each part the channel asks
//! [`SendJournal::delivered`]; a part already delivered is skipped.
//! Otherwise it sends the part and records the platform's message id
//! ([`SendJournal::sent`]). The intent comes first: the reply itself is
//! recorded before its first part is sent, and the record of part k is the
//! intent of part k+1. So after a crash the record says which one part at
//! most was on its way; that part may have arrived (the process died
//! between the platform's answer and the record) and is sent again: the
//! one duplicate a crash can cause, confined to that part and that moment.

pub trait SendJournal: Send + Sync {
    /// The platform id of part `index`, if it was delivered.
    fn delivered(&self, index: usize) -> Option<String>;

    /// Records that part `index` arrived as the platform's message `id`.
    fn sent(&self, index: usize, id: &str);
}

/// No record: every part is sent (replies of channels that keep none).
pub struct Unrecorded;

impl SendJournal for Unrecorded {
    fn delivered(&self, _index: usize) -> Option<String> {
        None
    }

    fn sent(&self, _index: usize, _id: &str) {}
}
