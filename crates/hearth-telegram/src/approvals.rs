//! Approval questions in Telegram: a message with inline buttons "Allow
//! once / Always for this chat / Deny", answered by a callback query.
//!
//! Only the person whose message started the turn can answer; anyone else
//! pressing a button (in a group) is told so and the question stays open.
//! However the question ends (an answer here or on the web page, the
//! timeout, the turn stopped), the message is edited to say what was
//! decided and loses its buttons. A button of a question that is no longer
//! open (after a restart) says so and is removed.

use std::future::IntoFuture;

use teloxide::payloads::{AnswerCallbackQuerySetters, SendMessageSetters};
use teloxide::prelude::{Bot, Requester};
use teloxide::types::{
    CallbackQuery, ChatId, InlineKeyboardButton, InlineKeyboardMarkup, MessageId,
};

use super::TelegramChannel;
use super::error::channel_error;
use super::outbound::Target;
use hearth_channel::ChannelError;
use hearth_channel::approval::{Answer, ApprovalRequest, Delivered};

/// How a button's data begins: `ap:<question id>:<answer>`.
const PREFIX: &str = "ap:";

fn button(label: &str, request: &ApprovalRequest, answer: Answer) -> InlineKeyboardButton {
    InlineKeyboardButton::callback(label, format!("{PREFIX}{}:{}", request.id, answer.as_str()))
}

/// The question id and answer a button's data holds.
fn parse(data: &str) -> Option<(&str, Answer)> {
    let (id, answer) = data.strip_prefix(PREFIX)?.split_once(':')?;
    Some((id, Answer::parse(answer)?))
}

/// Edits a question to its outcome, removing the buttons, when dropped:
/// so a stopped turn leaves no live buttons behind.
struct Close {
    bot: Bot,
    chat: ChatId,
    id: MessageId,
    question: String,
    outcome: String,
}

impl Drop for Close {
    fn drop(&mut self) {
        let (bot, chat, id) = (self.bot.clone(), self.chat, self.id);
        let text = format!("{}\n→ {}", self.question, self.outcome);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            // Without `reply_markup` the edit removes the buttons.
            if let Err(e) = bot.edit_message_text(chat, id, text).into_future().await {
                tracing::warn!("telegram: cannot close an approval question: {e}");
            }
        });
    }
}

impl TelegramChannel {
    pub(super) async fn ask(
        &self,
        request: &ApprovalRequest,
    ) -> Result<Option<Answer>, ChannelError> {
        let to = Target::parse(&request.recipient, request.thread_ts.as_deref())?;
        let ticket = self.questions.ask(request);
        let question = format!("🔐 Allow `{}`?\n{}", request.tool, request.arguments);
        let text = format!(
            "{question}\n(No answer within {} s counts as Deny.)",
            request.timeout.as_secs()
        );
        let keyboard = InlineKeyboardMarkup::new([
            vec![
                button("Allow once", request, Answer::Once),
                button("Always for this chat", request, Answer::Always),
            ],
            vec![button("Deny", request, Answer::Deny)],
        ]);
        let sent = self
            .retrying("sendMessage", || {
                let mut req = self
                    .bot
                    .send_message(to.chat, text.clone())
                    .reply_markup(keyboard.clone());
                if let Some(thread) = to.thread {
                    req = req.message_thread_id(thread);
                }
                req.into_future()
            })
            .await
            .map_err(channel_error)?;
        let mut close = Close {
            bot: self.bot.clone(),
            chat: to.chat,
            id: sent.id,
            question,
            outcome: "stopped: not run".to_string(),
        };
        let given = ticket.wait_given().await;
        close.outcome = match given {
            Some(g) if g.elsewhere => format!("{} on the web page", g.answer.verdict()),
            Some(g) => g.answer.verdict().to_string(),
            None => format!("no answer within {} s: not run", request.timeout.as_secs()),
        };
        Ok(given.map(|g| g.answer))
    }

    /// A button was pressed.
    pub(super) async fn on_button(&self, query: CallbackQuery) {
        let pressed = query.data.as_deref().and_then(parse);
        let who = query.from.id.0.to_string();
        let delivered = match pressed {
            None => Delivered::Expired,
            Some((id, answer)) => self.questions.answer(id, &who, answer),
        };
        let reply = match (delivered, pressed) {
            (Delivered::Taken, Some((_, answer))) => answer.verdict(),
            (Delivered::NotYours, _) => "Only the person who asked can answer this.",
            _ => "This question is closed.",
        };
        let answered = self
            .bot
            .answer_callback_query(query.id.clone())
            .text(reply)
            .show_alert(delivered == Delivered::NotYours);
        if let Err(e) = answered.into_future().await {
            tracing::warn!("telegram: cannot answer a button press: {e}");
        }
        if let (Delivered::Expired, Some(message)) = (delivered, &query.message) {
            let removed = self
                .bot
                .edit_message_reply_markup(message.chat().id, message.id())
                .into_future()
                .await;
            if let Err(e) = removed {
                tracing::warn!("telegram: cannot remove the buttons of a closed question: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn button_data_fits_telegram_and_reads_back() {
        let message = hearth_channel::ChannelMessage {
            id: "1:2".into(),
            sender: "1".into(),
            reply_target: "1".into(),
            content: String::new(),
            channel: "telegram".into(),
            timestamp: 0,
            thread_ts: None,
            interruption_scope_id: None,
            initiator: Default::default(),
            asked: None,
            images: Vec::new(),
            audio: None,
            documents: Vec::new(),
        };
        let request = ApprovalRequest::new(
            "shell",
            &serde_json::json!({}),
            &message,
            std::time::Duration::from_secs(1),
        );
        for answer in [Answer::Once, Answer::Always, Answer::Deny] {
            let data = format!("{PREFIX}{}:{}", request.id, answer.as_str());
            assert!(data.len() <= 64, "callback_data is 1-64 bytes: {data}");
            assert_eq!(parse(&data), Some((request.id.as_str(), answer)));
        }
        assert_eq!(parse("ap:x:maybe"), None);
        assert_eq!(parse("other"), None);
    }
}
