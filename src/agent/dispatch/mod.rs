//! Tool dispatch: how tool calls travel in a model's replies.

pub mod xml;
