//! The dispatcher: every channel's messages through one bounded bus into a
//! loop that runs them concurrently, within limits.
//!
//! - [`bus`]: the bounded queue (100) between listeners and the loop,
//!   behind the durable inbox's record;
//! - [`recovery`]: what a start takes up from the inbox, and the loop that
//!   sends failed replies again;
//! - [`supervisor`]: keeps each listener running, with backoff, and records
//!   its health for `/status` ([`crate::pipeline::health`]);
//! - [`tracker`]: the running message of each sender and scope, for
//!   interruption and `/stop`;
//! - [`dispatcher`]: the loop itself, the in-flight limit and graceful
//!   shutdown;
//! - [`delivery`]: how background jobs reach a chat.

pub mod bus;
pub mod delivery;
pub mod dispatcher;
pub mod recovery;
pub mod supervisor;
pub mod tracker;

pub use bus::{BUS_CAPACITY, InboxSink, bus};
pub use delivery::{Delivery, DeliveryError, PromptJob};
pub use dispatcher::{Dispatcher, Report, in_flight_limit};
pub use supervisor::supervise;
