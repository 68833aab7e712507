//! The commands a person can type in any channel (`/new`, `/model NAME`,
//! `/models`, `/stop`, `/status`, `/approvals reset`, `/help`): their
//! syntax and the help text. Channels recognise them (the CLI warns about
//! unknown ones); the pipeline answers them.

pub const HELP: &str = "Commands:\n/new — start a new conversation\n/model NAME — answer with another model (/model default to go back)\n/models — list the models\n/stop — stop the reply being written\n/status — channels, load and the model in use\n/approvals reset — ask again before tools you allowed always in this chat\n/help — this list";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    New,
    Model(String),
    Models,
    Stop,
    Status,
    /// Forget the chat's "always" answers.
    ResetApprovals,
    Help,
}

/// The command in `content`, if it is one. `/cmd@botname` counts (group
/// chats address bots that way); unknown `/words` are ordinary messages.
pub fn parse(content: &str) -> Option<Command> {
    let text = content.trim();
    let rest = text.strip_prefix('/')?;
    let (word, argument) = match rest.split_once(char::is_whitespace) {
        Some((w, a)) => (w, a.trim()),
        None => (rest, ""),
    };
    let word = word.split('@').next().unwrap_or(word).to_ascii_lowercase();
    match word.as_str() {
        "new" | "reset" => Some(Command::New),
        "model" if argument.is_empty() => Some(Command::Models),
        "model" => Some(Command::Model(argument.to_string())),
        "models" => Some(Command::Models),
        "stop" => Some(Command::Stop),
        "status" => Some(Command::Status),
        "approvals" if argument.eq_ignore_ascii_case("reset") => Some(Command::ResetApprovals),
        "help" | "start" => Some(Command::Help),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_and_leaves_the_rest() {
        assert_eq!(parse(" /new "), Some(Command::New));
        assert_eq!(
            parse("/model@hearth_bot coder"),
            Some(Command::Model("coder".into()))
        );
        assert_eq!(parse("/models"), Some(Command::Models));
        assert_eq!(parse("/approvals reset"), Some(Command::ResetApprovals));
        assert_eq!(parse("/approvals"), None);
        assert_eq!(parse("/STOP"), Some(Command::Stop));
        assert_eq!(parse("/etc/hosts is a file"), None);
        assert_eq!(parse("hello /new"), None);
    }
}
