//! Downloads a catalogue model from a Hugging Face hub (or a mirror).
//!
//! The hub answers `HEAD {hub}/{repo}/resolve/{revision}/{file}` with a
//! redirect to its storage and, for files kept in Git LFS (every GGUF), the
//! file's sha256 as `X-Linked-Etag` and its size as `X-Linked-Size`. The
//! download goes to `FILE.part` beside the target, with `Range` requests to
//! resume a transfer that broke off (in this run, up to [`ATTEMPTS`] times,
//! or in a later one), and becomes the model only once its size and sha256
//! match: the catalogue's where it records them, else the hub's. A file that
//! does not match is deleted, never used.

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{CONTENT_LENGTH, ETAG};
use sha2::{Digest, Sha256};

use super::catalogue::{Model, Piece};
use super::expect::expected;
use super::transfer::{Part, Tried};
use hearth_core::retry::RetryPolicy;

/// Transfers tried in one run before giving up (the part file is kept).
pub const ATTEMPTS: u32 = 5;
/// The pause before each resumed attempt: 1 s, doubling up to 8 s.
const RESUMES: RetryPolicy = RetryPolicy::new(Duration::from_secs(1), Duration::from_secs(8));

#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error(
        "{model} has no Hugging Face source in the catalogue; fix: fetch it with `models/fetch {model}`"
    )]
    NoHubSource { model: String },
    #[error(
        "cannot reach {url}: {reason}; fix: check the network connection, set [models] hub_url to a reachable mirror, or put {file} into {dir} by hand"
    )]
    Offline {
        url: String,
        reason: String,
        file: String,
        dir: PathBuf,
    },
    #[error("{url} answered {status}{hint}")]
    Status {
        url: String,
        status: StatusCode,
        hint: &'static str,
    },
    #[error(
        "the hub names no sha256 for {file} (no X-Linked-Etag) and the catalogue records none, so the download could not be checked; nothing was downloaded"
    )]
    NoChecksum { file: String },
    #[error(
        "the hub's {file} is not the catalogue's: {what} {hub} there, {catalogue} in the catalogue; nothing was downloaded"
    )]
    HubDiffers {
        file: String,
        what: &'static str,
        hub: String,
        catalogue: String,
    },
    #[error(
        "{file} arrived corrupt: {what} is {got}, expected {expected}; the download was deleted. Run `hearth models pull` again; if it repeats, the hub or a proxy alters the file"
    )]
    Corrupt {
        file: String,
        what: &'static str,
        got: String,
        expected: String,
    },
    #[error(
        "the transfer of {file} broke off {attempts} times (last at {done} of {total} bytes: {reason}); what arrived is kept in {part}: run the same command again to resume"
    )]
    Interrupted {
        file: String,
        attempts: u32,
        done: u64,
        total: u64,
        reason: String,
        part: PathBuf,
    },
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "another `hearth models pull` is downloading {file} into {}; wait for it, or stop it and run this again",
        .dir.display()
    )]
    Busy { file: String, dir: PathBuf },
    #[error(transparent)]
    Room(#[from] super::expect::RoomError),
}

/// What the hub says of a file before it is downloaded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Remote {
    /// A file in Git LFS: its sha256.
    pub sha256: Option<String>,
    /// A file kept in Git itself: its Git blob hash (sha1).
    pub git_blob: Option<String>,
    pub size: Option<u64>,
}

/// What a downloaded file is checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    Sha256(String),
    /// Git's object id: sha1 of `blob {size}\0` and the bytes.
    GitBlob(String),
}

impl Check {
    pub(super) fn hex(&self) -> &str {
        match self {
            Check::Sha256(h) | Check::GitBlob(h) => h,
        }
    }

    pub(super) fn what(&self) -> &'static str {
        match self {
            Check::Sha256(_) => "its sha256",
            Check::GitBlob(_) => "its Git blob hash",
        }
    }
}

/// A finished pull.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The main file (or a speech model's folder).
    pub path: PathBuf,
    /// Every file's bytes together.
    pub bytes: u64,
    /// Bytes that were already there (part files, or whole files).
    pub reused: u64,
    pub already_present: bool,
    pub files: usize,
}

/// One file of the model, asked of the hub and ready to fetch.
struct Planned {
    piece: Piece,
    url: String,
    check: Check,
    size: u64,
}

/// Downloads `model` (each of its files) into `dir` from the hub at
/// `hub_url`. `progress` is told the total once known and the bytes done
/// as they arrive. Every file is asked of the hub before any is fetched,
/// so a missing one or a wrong checksum leaves nothing behind.
pub async fn pull(
    hub_url: &str,
    model: &Model,
    dir: &Path,
    mut progress: impl FnMut(u64, u64),
) -> Result<Pulled, PullError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PullError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut plan = Vec::new();
    for piece in model.pieces() {
        let url = source_url(hub_url, model, &piece)?;
        let remote = head(&url).await.map_err(|e| match e {
            HeadError::Net(e) => PullError::Offline {
                url: url.clone(),
                reason: reason(&e),
                file: piece.local.clone(),
                dir: dir.to_path_buf(),
            },
            HeadError::Status(status) => status_error(&url, status),
        })?;
        let (check, size) = expected(model, &piece, &remote)?;
        plan.push(Planned {
            piece,
            url,
            check,
            size,
        });
    }
    let total: u64 = plan.iter().map(|p| p.size).sum();
    let (mut done, mut reused, mut present) = (0, 0, true);
    for planned in &plan {
        let offset = done;
        let (here, was_there) = pull_file(planned, dir, |d, _| progress(offset + d, total)).await?;
        done += planned.size;
        reused += here;
        present &= was_there;
    }
    progress(total, total);
    let path = dir.join(model.config_name());
    Ok(Pulled {
        path,
        bytes: total,
        reused,
        already_present: present,
        files: plan.len(),
    })
}

/// Fetches one file, resuming its part file; says how many of its bytes
/// were there already and whether the whole file was.
async fn pull_file(
    planned: &Planned,
    dir: &Path,
    mut progress: impl FnMut(u64, u64),
) -> Result<(u64, bool), PullError> {
    let Planned {
        piece,
        url,
        check,
        size,
    } = planned;
    let size = *size;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PullError::Io { path, source }
    };
    let target = dir.join(&piece.local);
    let folder = target.parent().unwrap_or(dir).to_path_buf();
    std::fs::create_dir_all(&folder).map_err(io(&folder))?;
    let part = dir.join(format!("{}.part", piece.local));
    // One pull of a file at a time: two would write one part file.
    let _lock = lock(dir, &piece.local)?;

    if let Ok(meta) = std::fs::metadata(&target)
        && meta.len() == size
        && digest_of(&target, check).map_err(io(&target))? == check.hex()
    {
        progress(size, size);
        return Ok((size, true));
    }

    let offline = |e: reqwest::Error| PullError::Offline {
        url: url.clone(),
        reason: reason(&e),
        file: piece.local.clone(),
        dir: dir.to_path_buf(),
    };
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(15))
        .read_timeout(Duration::from_secs(60))
        .build()
        .map_err(offline)?;
    // The part file and its hash are read once; a broken transfer goes on
    // from where they stand.
    let mut part = Part::open(part, size)?;
    super::expect::room_for(dir, size - part.done)?;
    let reused = part.done;
    download(&mut part, &client, url, &mut progress)
        .await
        .map_err(|tried| match tried {
            Tried::Unreachable(e) => offline(e),
            Tried::Fatal(e) => e,
            Tried::Stopped(reason) => PullError::Interrupted {
                file: piece.local.clone(),
                attempts: ATTEMPTS,
                done: part.done,
                total: size,
                reason,
                part: part.path.clone(),
            },
        })?;
    part.finish(&target, check, &piece.local)?;
    if let Ok(d) = std::fs::File::open(&folder) {
        let _ = d.sync_all();
    }
    Ok((reused, false))
}

/// Where `piece` of `model` is on the hub at `hub_url`.
fn source_url(hub_url: &str, model: &Model, piece: &Piece) -> Result<String, PullError> {
    let hub = model
        .entry
        .hub
        .as_ref()
        .ok_or_else(|| PullError::NoHubSource {
            model: model.name.clone(),
        })?;
    Ok(format!(
        "{}/{}/resolve/{}/{}",
        hub_url.trim_end_matches('/'),
        hub.repo,
        hub.revision,
        piece.remote
    ))
}

/// Fetches the rest of `part` from `url`, trying again after a pause that
/// grows, up to [`ATTEMPTS`] tries. Fails with how the last try ended:
/// the hub unreachable at the very first, or why the transfer stopped.
async fn download(
    part: &mut Part,
    client: &reqwest::Client,
    url: &str,
    progress: &mut impl FnMut(u64, u64),
) -> Result<(), Tried> {
    let size = part.size;
    let mut last_reason = String::new();
    let mut attempt = 0;
    loop {
        progress(part.done, size);
        if part.done == size {
            return Ok(());
        }
        if attempt == ATTEMPTS {
            return Err(Tried::Stopped(last_reason));
        }
        if attempt > 0 {
            tokio::time::sleep(RESUMES.after(attempt)).await;
        }
        attempt += 1;
        last_reason = match part.resume(client, url, progress).await {
            Ok(Tried::Stopped(why)) => why,
            Ok(Tried::Unreachable(e)) if part.done == 0 && attempt == 1 => {
                return Err(Tried::Unreachable(e));
            }
            Ok(Tried::Unreachable(e)) => reason(&e),
            Ok(Tried::Fatal(fatal)) | Err(fatal) => return Err(Tried::Fatal(fatal)),
        };
    }
}

/// Holds the pull of `file` in `dir` until dropped; another pull of it
/// meanwhile is refused.
fn lock(dir: &Path, file: &str) -> Result<std::fs::File, PullError> {
    let lock_path = dir.join(format!("{file}.lock"));
    let lock = std::fs::File::create(&lock_path).map_err(|source| PullError::Io {
        path: lock_path.clone(),
        source,
    })?;
    match lock.try_lock() {
        Ok(()) => Ok(lock),
        Err(std::fs::TryLockError::WouldBlock) => Err(PullError::Busy {
            file: file.to_string(),
            dir: dir.to_path_buf(),
        }),
        Err(std::fs::TryLockError::Error(source)) => Err(PullError::Io {
            path: lock_path,
            source,
        }),
    }
}

enum HeadError {
    Net(reqwest::Error),
    Status(StatusCode),
}

/// Asks the hub for the file's checksum and size without following its
/// redirect: the LFS headers are on the hub's own answer.
async fn head(url: &str) -> Result<Remote, HeadError> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(15))
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(HeadError::Net)?;
    let response = client.head(url).send().await.map_err(HeadError::Net)?;
    let status = response.status();
    if !(status.is_success() || status.is_redirection()) {
        return Err(HeadError::Status(status));
    }
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                v.trim()
                    .trim_start_matches("W/")
                    .trim_matches('"')
                    .to_string()
            })
    };
    // A file in Git LFS has its sha256 as its (linked) ETag; a file kept
    // in Git itself has its Git blob hash.
    let etag = header("x-linked-etag")
        .or_else(|| header(ETAG.as_str()))
        .filter(|e| e.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(|e| e.to_ascii_lowercase());
    let sha256 = etag.clone().filter(|e| e.len() == 64);
    let git_blob = etag.filter(|e| e.len() == 40);
    let size = header("x-linked-size")
        .or_else(|| {
            status
                .is_success()
                .then(|| header(CONTENT_LENGTH.as_str()))
                .flatten()
        })
        .and_then(|s| s.parse().ok());
    Ok(Remote {
        sha256,
        git_blob,
        size,
    })
}

pub(super) fn status_error(url: &str, status: StatusCode) -> PullError {
    let hint = match status {
        StatusCode::NOT_FOUND => {
            ": the hub has no such file (a renamed repository?); fix: pick another model from `hearth models list`"
        }
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            ": the repository is gated or private; fix: accept its licence on the hub, or download it by hand"
        }
        StatusCode::TOO_MANY_REQUESTS => ": rate limited; fix: wait a few minutes and run it again",
        _ => "",
    };
    PullError::Status {
        url: url.to_string(),
        status,
        hint,
    }
}

/// The file's digest of the kind `check` asks for.
fn digest_of(path: &Path, check: &Check) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    match check {
        Check::Sha256(_) => {
            let mut hasher = Sha256::new();
            std::io::copy(&mut file, &mut hasher)?;
            Ok(hex(&hasher.finalize()))
        }
        Check::GitBlob(_) => {
            let mut hasher = git_blob_hasher(file.metadata()?.len());
            std::io::copy(&mut file, &mut hasher)?;
            Ok(hex(&hasher.finalize()))
        }
    }
}

/// A sha1 that has taken Git's object header for `size` bytes.
pub(super) fn git_blob_hasher(size: u64) -> sha1::Sha1 {
    let mut hasher = sha1::Sha1::new();
    hasher.update(format!("blob {size}\0").as_bytes());
    hasher
}

pub(super) use hearth_core::hex::hex;

/// An error's message with its causes, e.g. `error sending request: connection refused`.
pub(super) fn reason(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
