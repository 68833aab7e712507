//! Accepting connections without letting slow clients take them all.
//!
//! Each connection carries one request (no keep-alive), or becomes one
//! WebSocket, which keeps its slot while open. Its headers must
//! arrive within the request timeout (hyper's header timer) and its body
//! within the same time again (the handler's). At most `max` connections
//! are open: when one more arrives, the oldest connection whose request is
//! still being sent is closed to make room, so a flood of half-sent
//! requests cannot shut out a client that sends a whole one. Only when
//! every connection is waiting for a reply is a new one turned away (503).

use super::brake::Peer;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// The open connections.
struct Slots {
    max: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next: u64,
    /// Connections still sending their request, oldest first.
    reading: BTreeMap<u64, CancellationToken>,
    /// Connections whose request is in, waiting for or sending the reply.
    answering: usize,
}

impl Slots {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for a new connection, closing the oldest reading one when
    /// all are taken; `None` when every connection is answering.
    fn admit(self: &Arc<Self>) -> Option<Arc<Connection>> {
        let mut state = self.lock();
        if state.reading.len() + state.answering >= self.max {
            let (_, oldest) = state.reading.pop_first()?;
            oldest.cancel();
        }
        let id = state.next;
        state.next += 1;
        let closed = CancellationToken::new();
        state.reading.insert(id, closed.clone());
        Some(Arc::new(Connection {
            slots: Arc::clone(self),
            id,
            closed,
            answering: AtomicBool::new(false),
        }))
    }
}

/// One open connection's slot, freed when dropped. Handlers find it in the
/// request's extensions.
pub struct Connection {
    slots: Arc<Slots>,
    id: u64,
    closed: CancellationToken,
    answering: AtomicBool,
}

impl Connection {
    /// The whole request is in: the connection can no longer be closed to
    /// make room.
    pub fn request_read(&self) {
        let mut state = self.slots.lock();
        if state.reading.remove(&self.id).is_some() {
            state.answering += 1;
            self.answering.store(true, Ordering::SeqCst);
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let mut state = self.slots.lock();
        if self.answering.load(Ordering::SeqCst) {
            state.answering -= 1;
        } else {
            state.reading.remove(&self.id);
        }
    }
}

/// A request extension: the connection it came on.
#[derive(Clone)]
pub struct ConnectionHandle(pub Arc<Connection>);

/// Serves `app` on `listener` until `shutdown` is cancelled.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    max: usize,
    header_timeout: Duration,
    shutdown: CancellationToken,
) {
    let slots = Arc::new(Slots {
        max,
        state: Mutex::default(),
    });
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, most likely: let some close.
                    tracing::warn!(error = %e, "the gateway cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => return,
        };
        let Some(connection) = slots.admit() else {
            tokio::spawn(busy(stream));
            continue;
        };
        let app = app.clone();
        tokio::spawn(async move {
            let closed = connection.closed.clone();
            let handle = ConnectionHandle(Arc::clone(&connection));
            let service = tower::ServiceExt::map_request(
                app,
                move |mut request: hyper::Request<hyper::body::Incoming>| {
                    request.extensions_mut().insert(handle.clone());
                    request.extensions_mut().insert(Peer(peer.ip()));
                    request
                },
            );
            // One request per connection: every answer but an upgrade says
            // `Connection: close` (hyper's own keep-alive switch would put
            // it on the upgrade too, which then fails).
            let service = tower::ServiceExt::map_response(
                service,
                |mut response: axum::response::Response| {
                    if response.status() != hyper::StatusCode::SWITCHING_PROTOCOLS {
                        response.headers_mut().insert(
                            hyper::header::CONNECTION,
                            hyper::header::HeaderValue::from_static("close"),
                        );
                    }
                    response
                },
            );
            let http = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service))
                // `/ws/chat` turns its connection into a WebSocket.
                .with_upgrades();
            tokio::select! {
                _ = http => {}
                _ = closed.cancelled() => {}
            }
            drop(connection);
        });
    }
}

/// Turns a connection away when every slot is answering a request.
async fn busy(mut stream: TcpStream) {
    let body =
        r#"{"error":"the gateway is answering as many requests as it may; try again shortly"}"#;
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(
        Duration::from_secs(1),
        stream.write_all(response.as_bytes()),
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_reading_connection_makes_room() {
        let slots = Arc::new(Slots {
            max: 2,
            state: Mutex::default(),
        });
        let a = slots.admit().unwrap();
        let b = slots.admit().unwrap();
        b.request_read();
        let c = slots.admit().expect("a is closed to make room");
        assert!(a.closed.is_cancelled());
        assert!(!b.closed.is_cancelled());
        drop(a);
        c.request_read();
        assert!(slots.admit().is_none(), "both answer: nobody is closed");
        drop(b);
        assert!(slots.admit().is_some());
    }
}
