//! The message bus: one bounded queue from every listener to the
//! dispatcher. When it is full, listeners wait (backpressure), so no
//! message is dropped.

use tokio::sync::mpsc;

use crate::channels::ChannelMessage;

/// Messages waiting for the dispatcher, at most.
pub const BUS_CAPACITY: usize = 100;

pub fn bus() -> (mpsc::Sender<ChannelMessage>, mpsc::Receiver<ChannelMessage>) {
    mpsc::channel(BUS_CAPACITY)
}
