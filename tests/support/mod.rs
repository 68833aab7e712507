//! Shared by the integration tests (`mod support;` in a test file): fakes of
//! the services hearth talks to, each speaking the real protocol on
//! 127.0.0.1, and helpers that build a runtime for the pipeline tests.
#![allow(dead_code)]

pub mod hub_fake;
pub mod parrot;
pub mod pipeline;
pub mod slow_model;
pub mod telegram_bot;
pub mod telegram_fake;

#[allow(unused_imports)]
pub use parrot::*;
#[allow(unused_imports)]
pub use pipeline::*;
