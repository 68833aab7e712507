//! `hearth daemon`: the parts from `hearth-app` ([`Daemon`], the services,
//! the providers, the web page's desk) and the channels the config turns on,
//! built here, where the channel crates are known ([`build_channels`]).

mod wiring;

pub use hearth_app::daemon::*;
pub use wiring::{BuildError, Built, LoopbackChannel, build_channels, telegram_settings};
