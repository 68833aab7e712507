//! `hearth daemon`: the parts from `hearth-app` ([`Daemon`], the services,
//! the providers) and what only this floor may know, the channel crates:
//! the channels the config turns on ([`build_channels`]), and the narrow
//! capabilities the gateway is handed: the web page's desk
//! ([`DaemonDesk`], over the runtime), the local model served as itself
//! ([`ServedLocal`], over the engine) and the calendar feed
//! ([`DeadlineFeed`], over the LMS store and the jobs).

mod calendar;
mod desk;
pub mod served;
mod served_tools;
mod wiring;

pub use calendar::DeadlineFeed;
pub use desk::{DaemonDesk, Parts as DeskParts};
pub use hearth_app::daemon::*;
pub use served::ServedLocal;
pub use wiring::{
    BuildError, Built, LoopbackChannel, build_channels, email_settings, gateway_settings,
    matrix_settings, telegram_settings,
};
