//! What the cloud providers share about HTTP: the task that streams a
//! reply, sending with cancellation, reading server-sent events, explaining
//! a failed request, and reading an error body without reading a hostile
//! one whole.

use std::future::Future;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::chat::{ChatStream, FinishReason, ProviderError, StreamEvent, Usage};
use eventsource_stream::{EventStreamError, Eventsource};

/// The most of an error body kept to explain a failure.
const ERROR_BODY_CAP: usize = 16 * 1024;

/// An error and its causes on one line.
pub fn plain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

pub async fn capped_body(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() >= ERROR_BODY_CAP {
            body.truncate(ERROR_BODY_CAP);
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// An HTTP client for a cloud API: 10 s to connect, `timeout_secs` for a
/// whole reply.
pub fn client(timeout_secs: u64) -> Result<reqwest::Client, ProviderError> {
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .timeout(std::time::Duration::from_secs(timeout_secs))
        .build()
        .map_err(|e| ProviderError::Failed(format!("cannot set up HTTP: {e}")))
}

/// Runs `work` on the current tokio runtime, streaming its events back;
/// an error it returns is the stream's last event.
pub fn spawn<F, Fut>(provider: &str, work: F) -> ChatStream
where
    F: FnOnce(mpsc::Sender<StreamEvent>) -> Fut,
    Fut: Future<Output = Result<(), ProviderError>> + Send + 'static,
{
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return ChatStream::failed(ProviderError::Failed(format!(
            "the {provider} provider needs a tokio runtime"
        )));
    };
    let (tx, rx) = mpsc::channel(64);
    let work = work(tx.clone());
    runtime.spawn(async move {
        if let Err(e) = work.await {
            let _ = tx.send(StreamEvent::Error(e)).await;
        }
    });
    ChatStream::new(rx)
}

/// Sends `call`; `None` when `cancel` came first.
pub async fn send(
    call: reqwest::RequestBuilder,
    cancel: &CancellationToken,
    provider: &str,
    base_url: &str,
) -> Result<Option<reqwest::Response>, ProviderError> {
    tokio::select! {
        r = call.send() => r.map(Some).map_err(|e| ProviderError::Failed(format!(
            "cannot reach {provider} at {base_url}: {}", plain(&e)
        ))),
        _ = cancel.cancelled() => Ok(None),
    }
}

/// What reads one provider's streamed events.
pub trait EventReader {
    /// The events one `data` payload makes.
    fn read(&mut self, data: &str) -> Result<Vec<StreamEvent>, ProviderError>;
    /// Whether the provider said the reply is over.
    fn ended(&self) -> bool;
    /// The usage so far.
    fn usage(&self) -> Usage;
}

/// How [`pump`] ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Pumped {
    /// The body ended (the reader says whether the reply did).
    Finished,
    /// Cancelled (the caller was told) or the caller is gone.
    Stopped,
}

/// Reads `response`'s server-sent events into `reader` and forwards what
/// it makes of them, until the reply or the body ends.
pub async fn pump(
    response: reqwest::Response,
    reader: &mut impl EventReader,
    cancel: &CancellationToken,
    tx: &mpsc::Sender<StreamEvent>,
    provider: &str,
) -> Result<Pumped, ProviderError> {
    pump_bytes(response.bytes_stream(), reader, cancel, tx, provider).await
}

/// [`pump`] over the body's bytes, however they are split.
async fn pump_bytes(
    bytes: impl futures::Stream<Item = Result<bytes::Bytes, reqwest::Error>> + Unpin,
    reader: &mut impl EventReader,
    cancel: &CancellationToken,
    tx: &mpsc::Sender<StreamEvent>,
    provider: &str,
) -> Result<Pumped, ProviderError> {
    // A body that ends without the blank line after its last event still
    // delivers that event (the spec would drop it; some servers end so).
    let end = futures::stream::iter([Ok(bytes::Bytes::from_static(b"\n\n"))]);
    let mut events = bytes.chain(end).eventsource();
    while !reader.ended() {
        let next = tokio::select! {
            next = events.next() => next,
            _ = cancel.cancelled() => {
                let _ = tx.send(cancelled(reader.usage())).await;
                return Ok(Pumped::Stopped);
            }
        };
        let data = match next {
            Some(Ok(event)) => event.data,
            Some(Err(EventStreamError::Transport(e))) => {
                return Err(ProviderError::Failed(format!(
                    "{provider} broke off the reply: {}",
                    plain(&e)
                )));
            }
            Some(Err(e)) => {
                return Err(ProviderError::Failed(format!(
                    "{provider} sent a stream that is not server-sent events: {e}"
                )));
            }
            None => break,
        };
        for event in reader.read(&data)? {
            if tx.send(event).await.is_err() {
                return Ok(Pumped::Stopped);
            }
        }
    }
    Ok(Pumped::Finished)
}

/// The end of a cancelled reply.
pub fn cancelled(usage: Usage) -> StreamEvent {
    StreamEvent::Done {
        usage,
        finish: FinishReason::Cancelled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeps every `data` payload; the reply ends at `[DONE]`.
    #[derive(Default)]
    struct Payloads(Vec<String>);

    impl EventReader for Payloads {
        fn read(&mut self, data: &str) -> Result<Vec<StreamEvent>, ProviderError> {
            self.0.push(data.to_string());
            Ok(Vec::new())
        }
        fn ended(&self) -> bool {
            self.0.last().is_some_and(|d| d == "[DONE]")
        }
        fn usage(&self) -> Usage {
            Usage::default()
        }
    }

    async fn payloads(chunks: Vec<&'static [u8]>) -> (Vec<String>, Result<Pumped, ProviderError>) {
        let stream = futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, reqwest::Error>(bytes::Bytes::from_static(c))),
        );
        let (tx, _rx) = mpsc::channel(8);
        let mut reader = Payloads::default();
        let pumped = pump_bytes(stream, &mut reader, &CancellationToken::new(), &tx, "api").await;
        (reader.0, pumped)
    }

    #[tokio::test]
    async fn events_survive_any_split_of_the_bytes() {
        let stream: &'static [u8] = ": keep-alive\r\n\r\ndata: {\"a\":\"é\"}\r\n\r\nevent: x\ndata: one\ndata: two\n\ndata: [DONE]\n\n".as_bytes();
        for split in 0..stream.len() {
            let (got, pumped) = payloads(vec![&stream[..split], &stream[split..]]).await;
            assert!(matches!(pumped, Ok(Pumped::Finished)), "split at {split}");
            assert_eq!(
                got,
                ["{\"a\":\"é\"}", "one\ntwo", "[DONE]"],
                "split at {split}"
            );
        }
    }

    #[tokio::test]
    async fn a_last_event_without_its_blank_line_is_kept() {
        let (got, _) = payloads(vec![b"data: {\"x\":1}"]).await;
        assert_eq!(got, ["{\"x\":1}"]);
    }

    #[tokio::test]
    async fn a_body_that_is_not_text_is_refused_with_a_reason() {
        // A positive control first: the same event in UTF-8 is read.
        let (got, _) = payloads(vec![b"data: ok\n\n"]).await;
        assert_eq!(got, ["ok"]);
        let (got, pumped) = payloads(vec![b"data: \xff\xfe\n\n"]).await;
        assert!(got.is_empty(), "{got:?}");
        let Err(ProviderError::Failed(why)) = pumped else {
            panic!("refused: {pumped:?}");
        };
        assert!(why.contains("api"), "{why}");
    }
}
