//! A fake Hugging Face hub (axum on 127.0.0.1:0) for `hearth models pull`.
//!
//! It answers as huggingface.co does for a file kept in Git LFS:
//! `HEAD`/`GET /{owner}/{repo}/resolve/{revision}/{file}` gives `302 Found`
//! with `Location` on its storage host (here `/cdn/…` on the same server),
//! the file's sha256 as `X-Linked-Etag` (quoted), its size as
//! `X-Linked-Size`, and `X-Repo-Commit`; a small file kept in Git itself
//! is answered at once (`200`) with its Git blob hash as its `ETag`; an
//! unknown file gives `404` with `X-Error-Code: EntryNotFound`. The storage honours `Range: bytes=N-` with
//! `206 Partial Content` and `Content-Range`. On demand it breaks the
//! connection after some bytes, serves altered bytes under the right
//! checksum, or advertises another checksum.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use sha2::{Digest, Sha256};

/// A file the hub holds.
struct Stored {
    bytes: Arc<Vec<u8>>,
    sha256: String,
    /// For a file kept in Git (not LFS): its Git blob hash.
    git_blob: Option<String>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One request the hub answered.
#[derive(Debug, Clone)]
pub struct HubRequest {
    pub method: String,
    pub path: String,
    pub range: Option<String>,
    pub status: u16,
    /// Body bytes sent (before any break).
    pub sent: u64,
}

#[derive(Default)]
pub struct Behaviour {
    /// Break the next storage transfers after this many bytes, once each.
    pub cut_after: Vec<u64>,
    /// Serve the file with one byte changed (the checksum stays the real one).
    pub corrupt: bool,
    /// The same, for the files kept in Git only.
    pub corrupt_in_git: bool,
    /// Advertise this sha256 instead of the file's.
    pub advertise_sha256: Option<String>,
    /// Advertise this size instead of the file's.
    pub advertise_size: Option<u64>,
}

struct Hub {
    repo: String,
    files: Mutex<BTreeMap<String, Arc<Stored>>>,
    behaviour: Mutex<Behaviour>,
    log: Mutex<Vec<HubRequest>>,
}

pub struct FakeHub {
    pub url: String,
    hub: Arc<Hub>,
    first: String,
}

impl FakeHub {
    /// Serves `bytes` as `{repo}/resolve/main/{file}`, kept in Git LFS.
    pub async fn start(repo: &str, file: &str, bytes: Vec<u8>) -> Self {
        let hub = Arc::new(Hub {
            repo: repo.to_string(),
            files: Mutex::new(BTreeMap::new()),
            behaviour: Mutex::new(Behaviour::default()),
            log: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/cdn/{commit}/{*file}", any(storage))
            .route("/{owner}/{repo}/resolve/{revision}/{*file}", any(resolve))
            .with_state(hub.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let hub = Self {
            url,
            hub,
            first: file.to_string(),
        };
        hub.add_lfs(file, bytes);
        hub
    }

    /// Serves another file of the repository, kept in Git LFS.
    pub fn add_lfs(&self, file: &str, bytes: Vec<u8>) {
        self.add(file, bytes, false);
    }

    /// Serves another file of the repository, kept in Git itself.
    pub fn add_git(&self, file: &str, bytes: Vec<u8>) {
        self.add(file, bytes, true);
    }

    fn add(&self, file: &str, bytes: Vec<u8>, in_git: bool) {
        let sha256 = hex(&Sha256::digest(&bytes));
        let git_blob = in_git.then(|| {
            use sha1::Digest as _;
            let mut h = sha1::Sha1::new();
            h.update(format!("blob {}\0", bytes.len()).as_bytes());
            h.update(&bytes);
            hex(&h.finalize())
        });
        let stored = Stored {
            bytes: Arc::new(bytes),
            sha256,
            git_blob,
        };
        self.hub
            .files
            .lock()
            .unwrap()
            .insert(file.to_string(), Arc::new(stored));
    }

    pub fn behave(&self, f: impl FnOnce(&mut Behaviour)) {
        f(&mut self.hub.behaviour.lock().unwrap());
    }

    pub fn requests(&self) -> Vec<HubRequest> {
        self.hub.log.lock().unwrap().clone()
    }

    /// The first file's sha256.
    pub fn sha256(&self) -> String {
        self.hub.files.lock().unwrap()[&self.first].sha256.clone()
    }
}

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

fn record(hub: &Hub, method: &Method, path: String, headers: &HeaderMap, status: u16, sent: u64) {
    hub.log.lock().unwrap().push(HubRequest {
        method: method.to_string(),
        path,
        range: headers
            .get(header::RANGE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        status,
        sent,
    });
}

async fn resolve(
    State(hub): State<Arc<Hub>>,
    method: Method,
    headers: HeaderMap,
    Path((owner, repo, revision, file)): Path<(String, String, String, String)>,
) -> Response {
    let path = format!("/{owner}/{repo}/resolve/{revision}/{file}");
    let stored = hub.files.lock().unwrap().get(&file).cloned();
    let stored = match stored {
        Some(s) if format!("{owner}/{repo}") == hub.repo && revision == "main" => s,
        _ => {
            record(&hub, &method, path, &headers, 404, 0);
            return (
                StatusCode::NOT_FOUND,
                [("x-error-code", "EntryNotFound")],
                "Entry not found",
            )
                .into_response();
        }
    };
    if let Some(blob) = &stored.git_blob {
        return in_git(&hub, &stored, blob, &method, path, &headers);
    }
    record(&hub, &method, path, &headers, 302, 0);
    let sha = hub
        .behaviour
        .lock()
        .unwrap()
        .advertise_sha256
        .clone()
        .unwrap_or_else(|| stored.sha256.clone());
    let size = hub
        .behaviour
        .lock()
        .unwrap()
        .advertise_size
        .unwrap_or(stored.bytes.len() as u64);
    Response::builder()
        .status(StatusCode::FOUND)
        .header(header::LOCATION, format!("/cdn/{COMMIT}/{file}"))
        .header("x-linked-etag", format!("\"{sha}\""))
        .header("x-linked-size", size.to_string())
        .header(header::ETAG, format!("\"{sha}\""))
        .header("x-repo-commit", COMMIT)
        .header(header::CONTENT_LENGTH, "0")
        .body(Body::empty())
        .unwrap()
}

/// A file kept in Git: the hub answers with it at once, its Git blob hash
/// as the ETag.
fn in_git(
    hub: &Hub,
    stored: &Stored,
    blob: &str,
    method: &Method,
    path: String,
    headers: &HeaderMap,
) -> Response {
    let mut body = stored.bytes.to_vec();
    let corrupt = {
        let b = hub.behaviour.lock().unwrap();
        b.corrupt || b.corrupt_in_git
    };
    if corrupt && !body.is_empty() {
        let mid = body.len() / 2;
        body[mid] ^= 0xff;
    }
    let sent = if *method == Method::HEAD {
        0
    } else {
        body.len() as u64
    };
    record(hub, method, path, headers, 200, sent);
    let response = Response::builder()
        .status(StatusCode::OK)
        .header(header::ETAG, format!("\"{blob}\""))
        .header("x-repo-commit", COMMIT)
        .header(header::CONTENT_LENGTH, body.len().to_string())
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8");
    if *method == Method::HEAD {
        return response.body(Body::empty()).unwrap();
    }
    response.body(Body::from(body)).unwrap()
}

async fn storage(
    State(hub): State<Arc<Hub>>,
    method: Method,
    headers: HeaderMap,
    Path((_commit, file)): Path<(String, String)>,
) -> Response {
    let path = format!("/cdn/{file}");
    let Some(stored) = hub.files.lock().unwrap().get(&file).cloned() else {
        record(&hub, &method, path, &headers, 404, 0);
        return StatusCode::NOT_FOUND.into_response();
    };
    let len = stored.bytes.len() as u64;
    let start = match headers.get(header::RANGE).and_then(|v| v.to_str().ok()) {
        None => None,
        Some(r) => match r
            .strip_prefix("bytes=")
            .and_then(|r| r.strip_suffix('-'))
            .and_then(|s| s.parse::<u64>().ok())
        {
            Some(s) if s < len => Some(s),
            _ => {
                record(&hub, &method, path, &headers, 416, 0);
                return Response::builder()
                    .status(StatusCode::RANGE_NOT_SATISFIABLE)
                    .header(header::CONTENT_RANGE, format!("bytes */{len}"))
                    .body(Body::empty())
                    .unwrap();
            }
        },
    };
    let from = start.unwrap_or(0);
    let (cut, corrupt) = {
        let mut b = hub.behaviour.lock().unwrap();
        let cut = if method == Method::GET && !b.cut_after.is_empty() {
            Some(b.cut_after.remove(0))
        } else {
            None
        };
        (cut, b.corrupt)
    };
    let mut body = stored.bytes[from as usize..].to_vec();
    if corrupt && !body.is_empty() {
        let mid = body.len() / 2;
        body[mid] ^= 0xff;
    }
    let status = if start.is_some() {
        StatusCode::PARTIAL_CONTENT
    } else {
        StatusCode::OK
    };
    let mut response = Response::builder()
        .status(status)
        .header(header::ACCEPT_RANGES, "bytes")
        .header(header::CONTENT_LENGTH, body.len().to_string())
        .header(header::CONTENT_TYPE, "application/octet-stream");
    if start.is_some() {
        response = response.header(
            header::CONTENT_RANGE,
            format!("bytes {from}-{}/{len}", len - 1),
        );
    }
    let sent = match cut {
        Some(n) if method == Method::GET => n.min(body.len() as u64),
        _ if method == Method::HEAD => 0,
        _ => body.len() as u64,
    };
    record(&hub, &method, path, &headers, status.as_u16(), sent);
    if method == Method::HEAD {
        return response.body(Body::empty()).unwrap();
    }
    match cut {
        // The declared length is never reached: the connection breaks.
        Some(n) => {
            let head = body[..n.min(body.len() as u64) as usize].to_vec();
            let stream = futures::stream::iter(vec![
                Ok::<_, std::io::Error>(head),
                Err(std::io::Error::other("connection cut by the fake hub")),
            ]);
            response.body(Body::from_stream(stream)).unwrap()
        }
        None => response.body(Body::from(body)).unwrap(),
    }
}
