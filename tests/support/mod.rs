//! Fakes of the services hearth talks to, shared by the integration tests
//! (`mod support;` in a test file). Each speaks the real protocol on 127.0.0.1.
#![allow(dead_code)]

pub mod telegram_fake;
