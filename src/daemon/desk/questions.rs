//! The approval questions on the page: the gateway's own, and those asked
//! elsewhere of a person `[channels.gateway] owner` names.

use crate::channels::Answer;
use crate::channels::asked::Asked;
use crate::channels::gateway::{self, Question};
use crate::config::Config;
use crate::pipeline::Runtime;

/// Whether the page's owner may see and answer `asked`.
fn answerable(config: &Config, asked: &Asked) -> bool {
    let who = format!("{}:{}", asked.channel, asked.request.sender);
    asked.channel == gateway::NAME || config.gateway.owner.contains(&who)
}

pub fn open(runtime: &Runtime) -> Vec<Question> {
    let config = runtime.config();
    runtime
        .questions()
        .open()
        .into_iter()
        .filter(|a| answerable(&config, a))
        .map(|a| Question {
            expires_at: a.at + a.request.timeout.as_secs() as i64,
            asked_at: a.at,
            id: a.request.id,
            channel: a.channel,
            chat: a.request.recipient,
            sender: a.request.sender,
            tool: a.request.tool,
            arguments: a.request.arguments,
        })
        .collect()
}

pub fn answer(runtime: &Runtime, id: &str, answer: Answer) -> bool {
    let board = runtime.questions();
    let Some(asked) = board.get(id) else {
        return false;
    };
    if !answerable(&runtime.config(), &asked) {
        tracing::warn!(
            channel = asked.channel,
            "the web page tried to answer a question that is not its owner's"
        );
        return false;
    }
    let taken = board.answer(id, answer);
    tracing::info!(
        channel = asked.channel,
        tool = asked.request.tool,
        ?answer,
        taken,
        "a question was answered on the web page"
    );
    taken
}
