//! A provider that waits out "busy": when a cloud API is overloaded or rate
//! limiting ([`ProviderError::Busy`]: Anthropic's 529 and 429, OpenAI's
//! 429), the same request is sent again after the pause the API asked for
//! (`retry-after`), else after one that doubles from two seconds, for as
//! long as the pauses fit a budget; only then does the error reach the
//! user. As in the fallback chain, only a request that has not begun its
//! reply is sent again: nothing the user saw is repeated. The daemon puts
//! it around the last cloud provider of a route, so a chain still moves on
//! to its next provider at once.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Provider;
use crate::chat::{ChatRequest, ChatStream, FinishReason, ProviderError, StreamEvent, Usage};
use crate::retry::RetryPolicy;

/// The pauses when the API names none: 2 s, doubling (the budget ends it).
const PAUSES: RetryPolicy = RetryPolicy::new(Duration::from_secs(2), Duration::MAX);
/// The most a request waits in all before "busy" is the answer.
const DEFAULT_BUDGET: Duration = Duration::from_secs(60);

pub struct RetryWhenBusy {
    inner: Arc<dyn Provider>,
    budget: Duration,
}

impl RetryWhenBusy {
    /// Waits up to a minute in all.
    pub fn new(inner: Arc<dyn Provider>) -> Self {
        Self::with_budget(inner, DEFAULT_BUDGET)
    }

    pub fn with_budget(inner: Arc<dyn Provider>, budget: Duration) -> Self {
        Self { inner, budget }
    }
}

impl Provider for RetryWhenBusy {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn chat(&self, request: ChatRequest, cancel: CancellationToken) -> ChatStream {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return self.inner.chat(request, cancel);
        };
        let (inner, budget) = (self.inner.clone(), self.budget);
        let (tx, rx) = mpsc::channel(64);
        runtime.spawn(async move {
            let mut waited = Duration::ZERO;
            let mut pauses = PAUSES.backoff();
            let mut stream = loop {
                let mut stream = inner.chat(request.clone(), cancel.clone());
                let (message, asked) = match stream.next().await {
                    Some(StreamEvent::Error(ProviderError::Busy {
                        message,
                        retry_after_secs,
                    })) => (message, retry_after_secs),
                    Some(first) => {
                        if tx.send(first).await.is_err() {
                            return;
                        }
                        break stream;
                    }
                    None => return,
                };
                let wait = match asked {
                    Some(secs) => Duration::from_secs(secs),
                    None => pauses.failed(),
                };
                if waited + wait > budget {
                    let error = ProviderError::Busy {
                        message: format!("{message} (still busy after {} s)", waited.as_secs()),
                        retry_after_secs: asked,
                    };
                    let _ = tx.send(StreamEvent::Error(error)).await;
                    return;
                }
                tracing::info!(
                    provider = inner.name(),
                    wait_secs = wait.as_secs_f32(),
                    "{message}; asking again"
                );
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = cancel.cancelled() => {
                        let _ = tx
                            .send(StreamEvent::Done {
                                usage: Usage::default(),
                                finish: FinishReason::Cancelled,
                            })
                            .await;
                        return;
                    }
                }
                waited += wait;
            };
            while let Some(event) = stream.next().await {
                if tx.send(event).await.is_err() {
                    return;
                }
            }
        });
        ChatStream::new(rx)
    }

    fn supports_native_tools(&self) -> bool {
        self.inner.supports_native_tools()
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.inner.count_tokens(text)
    }

    fn context_window(&self) -> Option<u32> {
        self.inner.context_window()
    }

    fn sees_images(&self) -> bool {
        self.inner.sees_images()
    }

    fn exclusive(
        &self,
        work: crate::Work,
    ) -> futures::future::BoxFuture<'static, Result<(), crate::chat::ProviderError>> {
        self.inner.exclusive(work)
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

    fn busy(retry_after_secs: Option<u64>) -> ProviderError {
        ProviderError::Busy {
            message: "Overloaded".into(),
            retry_after_secs,
        }
    }

    async fn ask(p: &RetryWhenBusy, cancel: CancellationToken) -> Result<String, ProviderError> {
        p.chat(request(), cancel)
            .collect_with(|_| {})
            .await
            .map(|r| r.text)
    }

    #[tokio::test(start_paused = true)]
    async fn a_busy_api_is_asked_again_after_the_pause_it_names() {
        let api = Arc::new(
            ScriptedProvider::new(Vec::<String>::new())
                .then_fail(busy(Some(5)))
                .then_fail(busy(None))
                .then_reply("Paris"),
        );
        let p = RetryWhenBusy::new(api.clone());
        let started = tokio::time::Instant::now();
        assert_eq!(ask(&p, CancellationToken::new()).await.unwrap(), "Paris");
        // 5 s as asked, then the first pause of its own.
        assert_eq!(started.elapsed(), Duration::from_secs(5) + PAUSES.first);
        assert_eq!(api.requests().len(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_budget_busy_is_the_answer_and_other_errors_at_once() {
        let always = ScriptedProvider::new(Vec::<String>::new());
        let always = (0..10).fold(always, |p, _| p.then_fail(busy(None)));
        let api = Arc::new(always);
        let p = RetryWhenBusy::with_budget(api.clone(), Duration::from_secs(10));
        let started = tokio::time::Instant::now();
        let error = ask(&p, CancellationToken::new()).await.unwrap_err();
        assert!(matches!(error, ProviderError::Busy { .. }), "{error}");
        assert!(
            error.to_string().contains("still busy after 6 s"),
            "{error}"
        );
        // 2 + 4 waited; 8 more would pass 10.
        assert_eq!(started.elapsed(), Duration::from_secs(6));
        assert_eq!(api.requests().len(), 3);
        // A pause longer than the budget is not waited for at all.
        let far = Arc::new(ScriptedProvider::new(Vec::<String>::new()).then_fail(busy(Some(3600))));
        let p = RetryWhenBusy::new(far.clone());
        let started = tokio::time::Instant::now();
        assert!(ask(&p, CancellationToken::new()).await.is_err());
        assert_eq!(started.elapsed(), Duration::ZERO);
        // Not busy: no second request.
        let broken = Arc::new(
            ScriptedProvider::new(Vec::<String>::new())
                .then_fail(ProviderError::Failed("bad key".into())),
        );
        let p = RetryWhenBusy::new(broken.clone());
        assert!(ask(&p, CancellationToken::new()).await.is_err());
        assert_eq!(broken.requests().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn stop_ends_the_wait() {
        let api = Arc::new(
            ScriptedProvider::new(Vec::<String>::new())
                .then_fail(busy(Some(30)))
                .then_reply("late"),
        );
        let p = RetryWhenBusy::new(api.clone());
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            stop.cancel();
        });
        let started = tokio::time::Instant::now();
        let reply = p
            .chat(request(), cancel)
            .collect_with(|_| {})
            .await
            .unwrap();
        assert_eq!(reply.finish, FinishReason::Cancelled);
        assert_eq!(started.elapsed(), Duration::from_secs(1));
        assert_eq!(api.requests().len(), 1);
    }
}
