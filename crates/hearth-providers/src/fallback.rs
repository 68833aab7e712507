//! A chain of providers: the first one that answers serves the reply.
//!
//! A provider that fails before it streamed anything (cannot load, cannot
//! be reached, refuses the request) hands the request to the next. Once a
//! reply has started streaming it is that provider's to finish: a second
//! provider would repeat what the user already saw. When every provider
//! fails, the first one's error is returned, so a context overflow of the
//! primary still leads to compaction.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Provider;
use crate::chat::{ChatRequest, ChatStream, FinishReason, ProviderError, StreamEvent, Usage};

pub struct Fallback {
    chain: Vec<Arc<dyn Provider>>,
}

impl Fallback {
    /// `primary` first, then `fallbacks` in order.
    pub fn new(primary: Arc<dyn Provider>, fallbacks: Vec<Arc<dyn Provider>>) -> Self {
        let mut chain = vec![primary];
        chain.extend(fallbacks);
        Self { chain }
    }

    fn primary(&self) -> &Arc<dyn Provider> {
        &self.chain[0]
    }
}

impl Provider for Fallback {
    fn name(&self) -> &str {
        self.primary().name()
    }

    fn chat(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return self.primary().chat(request, cancel);
        };
        let chain = self.chain.clone();
        let (tx, rx) = mpsc::channel(64);
        runtime.spawn(async move {
            let mut first_error: Option<ProviderError> = None;
            for (i, provider) in chain.iter().enumerate() {
                let mut stream = provider.chat(request.clone(), cancel.clone());
                let mut started = false;
                let error = loop {
                    let event = match stream.next().await {
                        Some(StreamEvent::Error(e)) if !started => break e,
                        Some(event) => event,
                        None if !started => {
                            break ProviderError::Failed(format!(
                                "{} stopped without answering",
                                provider.name()
                            ));
                        }
                        None => return,
                    };
                    started = true;
                    let last = matches!(event, StreamEvent::Done { .. } | StreamEvent::Error(_));
                    if tx.send(event).await.is_err() || last {
                        return;
                    }
                };
                if cancel.is_cancelled() {
                    let _ = tx
                        .send(StreamEvent::Done {
                            usage: Usage::default(),
                            finish: FinishReason::Cancelled,
                        })
                        .await;
                    return;
                }
                if let Some(next) = chain.get(i + 1) {
                    tracing::warn!(
                        provider = provider.name(),
                        next = next.name(),
                        error = %error,
                        "provider failed; trying the next one"
                    );
                }
                first_error.get_or_insert(error);
            }
            if let Some(error) = first_error {
                let _ = tx.send(StreamEvent::Error(error)).await;
            }
        });
        ChatStream::new(rx)
    }

    fn supports_native_tools(&self) -> bool {
        // Calls travel structured only when every provider of the chain
        // takes them so; otherwise in the text, which all of them read.
        self.chain.iter().all(|p| p.supports_native_tools())
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.primary().count_tokens(text)
    }

    fn context_window(&self) -> Option<u32> {
        self.primary().context_window()
    }

    fn sees_images(&self) -> bool {
        self.primary().sees_images()
    }

    fn exclusive(
        &self,
        work: crate::Work,
    ) -> futures::future::BoxFuture<'static, Result<(), crate::chat::ProviderError>> {
        self.primary().exclusive(work)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ScriptedProvider;
    use crate::chat::{ChatMessage, SamplingParams};

    fn request() -> ChatRequest {
        ChatRequest::new(
            "c",
            vec![ChatMessage::user("hi")],
            SamplingParams::greedy(8),
        )
    }

    #[tokio::test]
    async fn the_next_provider_answers_when_the_first_fails() {
        let local = Arc::new(
            ScriptedProvider::new(Vec::<String>::new())
                .then_fail(ProviderError::Failed("GPU gone".into())),
        );
        let cloud = Arc::new(ScriptedProvider::new(["from the cloud"]));
        let chain = Fallback::new(local.clone(), vec![cloud.clone()]);
        let reply = chain
            .chat(request(), CancellationToken::new())
            .collect_with(|_| {})
            .await
            .unwrap();
        assert_eq!(reply.text, "from the cloud");
        assert_eq!(local.requests().len(), 1);
        assert_eq!(cloud.requests()[0].messages, request().messages);
    }

    #[tokio::test]
    async fn the_first_error_is_kept_when_every_provider_fails() {
        let local = Arc::new(ScriptedProvider::new(Vec::<String>::new()).then_fail(
            ProviderError::ContextOverflow {
                needed: 900,
                limit: 512,
            },
        ));
        let cloud = Arc::new(
            ScriptedProvider::new(Vec::<String>::new())
                .then_fail(ProviderError::Failed("HTTP 503".into())),
        );
        let chain = Fallback::new(local, vec![cloud.clone()]);
        let error = chain
            .chat(request(), CancellationToken::new())
            .collect_with(|_| {})
            .await
            .unwrap_err();
        assert!(matches!(error, ProviderError::ContextOverflow { .. }));
        assert_eq!(cloud.requests().len(), 1, "the fallback was tried");
    }

    #[tokio::test]
    async fn a_working_primary_is_the_only_one_asked() {
        let local = Arc::new(ScriptedProvider::new(["local answer"]));
        let cloud = Arc::new(ScriptedProvider::new(["cloud answer"]));
        let chain = Fallback::new(local, vec![cloud.clone()]);
        let reply = chain
            .chat(request(), CancellationToken::new())
            .collect_with(|_| {})
            .await
            .unwrap();
        assert_eq!(reply.text, "local answer");
        assert!(cloud.requests().is_empty());
    }
}
