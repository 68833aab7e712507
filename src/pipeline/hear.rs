//! Phase 2½ of a message that brought sound: the voice note or audio file
//! is transcribed on the box and its words become the message's text (the
//! person is shown what was heard, when `[voice] show_transcript`), or the
//! person is told plainly why it could not be heard.

use std::sync::Arc;

use super::send::Reply;
use super::{Outcome, Runtime, outcome, routing};
use crate::channels::{Channel, ChannelMessage, SendMessage};
use crate::inbox::Inbound;

impl Runtime {
    /// `inbound` with its sound turned into words; the outcome instead,
    /// already told, when it cannot be heard.
    pub(super) async fn hear(
        &self,
        channel: &Arc<dyn Channel>,
        inbound: Inbound,
    ) -> Result<Inbound, Outcome> {
        let Some(audio) = inbound.message.audio.clone() else {
            return Ok(inbound);
        };
        let config = self.config();
        // The model that answers by default: speech never runs during one
        // of its decode steps.
        let route = routing::route(&config, "", None, false);
        let beside = self.providers.provider(&route).await.ok();
        let heard = self.speech.transcribe(&audio, beside.as_deref()).await;
        let words = match heard {
            Ok(t) if !t.text.trim().is_empty() => {
                tracing::info!(
                    seconds = t.audio_seconds,
                    took_ms = t.elapsed.as_millis() as u64,
                    language = t.language,
                    "transcribed a recording"
                );
                t.text.trim().to_string()
            }
            Ok(_) => {
                return Err(self
                    .unheard(channel, &inbound, "I heard no words in that recording")
                    .await);
            }
            Err(e) => {
                tracing::warn!(error = %e, "a recording could not be transcribed");
                return Err(self.unheard(channel, &inbound, &e.to_string()).await);
            }
        };
        let message = &inbound.message;
        if config.voice.show_transcript {
            let shown = SendMessage::reply_to(message, format!("🎤 “{words}”"));
            if let Err(e) = channel.send(&shown).await {
                tracing::warn!(error = %e, "could not show the transcript");
            }
        }
        let content = match message.content.trim() {
            "" => words,
            caption => format!("{caption}\n\n{words}"),
        };
        Ok(Inbound {
            message: ChannelMessage {
                content,
                audio: None,
                ..message.clone()
            },
            ..inbound
        })
    }

    /// Tells the person why their recording was not heard; nothing is
    /// added to the conversation.
    async fn unheard(&self, channel: &Arc<dyn Channel>, inbound: &Inbound, why: &str) -> Outcome {
        let detail = super::sanitize::error(why, &self.tool_context.scrubber);
        let reply = Reply {
            draft: None,
            text: outcome::failed_notice(&detail),
            success: Outcome::Failed,
            turn: None,
        };
        self.reply(channel, inbound, reply).await
    }
}
