//! One model file on its way down: the part file that holds what has
//! arrived (hashed as it grows), one try at the rest of it, and the check
//! that makes it the model.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use futures::StreamExt;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_RANGE, RANGE};
use sha2::{Digest, Sha256};

use super::hub::{Check, PullError, git_blob_hasher, hex, reason, status_error};

/// The part file being written, and what it holds.
pub(super) struct Part {
    pub path: PathBuf,
    file: std::fs::File,
    hasher: Sha256,
    /// Git's object id of the same bytes, for a file kept in Git.
    blob: sha1::Sha1,
    /// Bytes in the part file.
    pub done: u64,
    /// Bytes the whole file has.
    pub size: u64,
}

/// How one try ended.
pub(super) enum Tried {
    /// The transfer stopped, with why where it stopped short (empty when
    /// the file is whole).
    Stopped(String),
    /// The hub could not be reached.
    Unreachable(reqwest::Error),
    /// What no other try would change: the hub's refusal, a disk error.
    Fatal(PullError),
}

impl Part {
    /// Opens the part file for a file of `size` bytes, reading and hashing
    /// what it holds already (nothing, if it holds more than the file has).
    pub fn open(path: PathBuf, size: u64) -> Result<Self, PullError> {
        let io = |source| PullError::Io {
            path: path.clone(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(io)?;
        let mut done = file.metadata().map_err(io)?.len();
        if done > size {
            file.set_len(0).map_err(io)?;
            done = 0;
        }
        let mut hasher = Sha256::new();
        let mut blob = git_blob_hasher(size);
        let mut buf = vec![0; 1 << 20];
        let mut reader = std::io::BufReader::new(&mut file);
        loop {
            let n = reader.read(&mut buf).map_err(io)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            blob.update(&buf[..n]);
        }
        Ok(Self {
            path,
            file,
            hasher,
            blob,
            done,
            size,
        })
    }

    fn io(&self) -> impl Fn(std::io::Error) -> PullError + use<> {
        let path = self.path.clone();
        move |source| PullError::Io {
            path: path.clone(),
            source,
        }
    }

    /// Empties the part file: what it held does not fit the remote file.
    fn restart(&mut self) -> Result<(), PullError> {
        self.file.set_len(0).map_err(self.io())?;
        self.hasher = Sha256::new();
        self.blob = git_blob_hasher(self.size);
        self.done = 0;
        Ok(())
    }

    /// One try at the rest of the file from `url`, resuming where the part
    /// file stands; `progress` hears the bytes as they arrive. A status
    /// the hub means (not found, refused) is an error.
    pub async fn resume(
        &mut self,
        client: &reqwest::Client,
        url: &str,
        progress: &mut impl FnMut(u64, u64),
    ) -> Result<Tried, PullError> {
        let mut request = client.get(url);
        if self.done > 0 {
            request = request.header(RANGE, format!("bytes={}-", self.done));
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return Ok(Tried::Unreachable(e)),
        };
        match response.status() {
            StatusCode::PARTIAL_CONTENT if range_start(&response) == Some(self.done) => {}
            // The server sends the whole file: start over.
            StatusCode::OK => self.restart()?,
            StatusCode::RANGE_NOT_SATISFIABLE | StatusCode::PARTIAL_CONTENT => {
                // The part file is longer than the file, or the range came
                // back from elsewhere: discard it.
                self.restart()?;
                return Ok(Tried::Stopped(
                    "the part file did not fit the remote file".to_string(),
                ));
            }
            status => return Err(status_error(url, status)),
        }
        let mut why = String::new();
        let mut body = response.bytes_stream();
        while let Some(chunk) = body.next().await {
            match chunk {
                Ok(bytes) => {
                    if self.done + bytes.len() as u64 > self.size {
                        why = "more bytes than the file has".to_string();
                        break;
                    }
                    self.file.write_all(&bytes).map_err(self.io())?;
                    self.hasher.update(&bytes);
                    self.blob.update(&bytes);
                    self.done += bytes.len() as u64;
                    progress(self.done, self.size);
                }
                Err(e) => {
                    why = reason(&e);
                    break;
                }
            }
        }
        self.file.sync_all().map_err(self.io())?;
        if self.done < self.size && why.is_empty() {
            why = "the connection closed early".to_string();
        }
        Ok(Tried::Stopped(why))
    }

    /// Makes the whole part file the file at `target` if it passes
    /// `check`; removes it if not.
    pub fn finish(self, target: &Path, check: &Check, name: &str) -> Result<(), PullError> {
        let io = self.io();
        let Self {
            path,
            file,
            hasher,
            blob,
            ..
        } = self;
        drop(file);
        let got = match check {
            Check::Sha256(_) => hex(&hasher.finalize()),
            Check::GitBlob(_) => hex(&blob.finalize()),
        };
        if got != check.hex() {
            std::fs::remove_file(&path).map_err(io)?;
            return Err(PullError::Corrupt {
                file: name.to_string(),
                what: check.what(),
                got,
                expected: check.hex().to_string(),
            });
        }
        std::fs::rename(&path, target).map_err(|source| PullError::Io {
            path: target.to_path_buf(),
            source,
        })
    }
}

fn range_start(response: &reqwest::Response) -> Option<u64> {
    let value = response.headers().get(CONTENT_RANGE)?.to_str().ok()?;
    let range = value.strip_prefix("bytes ")?;
    range.split('-').next()?.trim().parse().ok()
}
