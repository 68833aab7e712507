//! Voice in a turn. Before it (phase 2½), a message that brought sound has
//! its voice note or audio file transcribed on the box, and the words
//! become its text (shown back when `[voice] show_transcript`), or the
//! person is told plainly why it could not be heard. After it, the reply to
//! a voice note is also spoken (`[voice] reply_with_voice`).

use std::sync::Arc;

use super::send::Reply;
use super::{Outcome, Runtime, outcome, routing};
use crate::channels::{Channel, ChannelMessage, SendMessage};
use crate::config::VoiceReplies;
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
            spoken: audio.voice_note,
            ..inbound
        })
    }

    /// Sends `text` as a voice note too, when `[voice] reply_with_voice`
    /// asks for it here; a voice that cannot be had is logged, never shown
    /// instead of the reply (the text went already).
    pub(super) async fn speak(
        &self,
        channel: &Arc<dyn Channel>,
        inbound: &Inbound,
        beside: &dyn crate::providers::Provider,
        text: &str,
    ) {
        let wanted = match self.config().voice.reply_with_voice {
            VoiceReplies::Never => false,
            VoiceReplies::WhenSpoken => inbound.spoken,
            VoiceReplies::Always => true,
        };
        if !wanted || text.trim().is_empty() {
            return;
        }
        let spoken = match self.speech.say(text, Some(beside)).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "the reply could not be spoken");
                return;
            }
        };
        tracing::info!(
            seconds = spoken.seconds,
            took_ms = spoken.elapsed.as_millis() as u64,
            "spoke a reply"
        );
        let to = SendMessage::reply_to(&inbound.message, "");
        match channel.send_voice(&to, spoken.ogg).await {
            Ok(()) | Err(crate::channels::ChannelError::Unsupported(_)) => {}
            Err(e) => tracing::warn!(error = %e, "the spoken reply was not delivered"),
        }
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
