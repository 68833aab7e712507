//! The markup that opens a tool call in hearth's text protocol, in one
//! place: the parser (`agent::call_format::xml`) starts reading a call
//! only where [`opens_call`] says one opens, and the fence
//! ([`super::fence::defuse`]) breaks every place where it does. So
//! whatever can be parsed as a call is defused in untrusted text by
//! construction, spellings the parser tolerates (`<invokeX`, `<invoke_`,
//! `<INVOKE2`) included.

/// `<tool_call>` and its spellings: a JSON call up to the closing tag.
pub const TAGGED: [&str; 3] = ["<tool_call>", "<toolcall>", "<tool-call>"];
/// `<invoke name="…"><parameter …>`: read from this prefix on, whatever
/// follows it.
pub const INVOKE: &str = "<invoke";
/// `<function=name>{…}</function>`.
pub const FUNCTION: &str = "<function=";

/// Every opener, each matched case-insensitively at the start of a text.
pub fn openers() -> impl Iterator<Item = &'static str> {
    TAGGED.into_iter().chain([INVOKE, FUNCTION])
}

/// Whether a call opens at the start of `at`.
pub fn opens_call(at: &str) -> bool {
    openers().any(|o| starts_with_ci(at, o))
}

/// `prefix` at the start of `hay`, ASCII case aside.
pub fn starts_with_ci(hay: &str, prefix: &str) -> bool {
    hay.len() >= prefix.len()
        && hay.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}
