//! Reading a document in a contained process, never in hearth's own.
//!
//! The file is copied into a folder of its own under the data dir, and the
//! reader runs there under hearth's OS sandbox ([`hearth_sandbox`]): no
//! network, that folder and the system's programs only, and the limits of
//! [`CageLimits`] (CPU seconds, address space, held memory, processes,
//! output, and a wall-clock time past which the process group is killed).
//! The folder goes when the reader ends. PDF is read by poppler's
//! `pdftotext`; DOCX, HTML and text by hearth's own [`crate::inside`]
//! reader (`hearth extract-document`), started the same way.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hearth_sandbox::{Limits, Sandbox, SandboxError};

use super::Kind;

/// What one document may cost to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CageLimits {
    /// The largest file read at all.
    pub file_bytes: u64,
    /// The most pages of a PDF read.
    pub pages: u32,
    /// The most characters of text kept.
    pub chars: usize,
    /// Wall-clock time before the reader is killed.
    pub wall: Duration,
    /// CPU seconds.
    pub cpu_secs: u64,
    /// Address space and held memory of the reader.
    pub memory_bytes: u64,
}

impl Default for CageLimits {
    fn default() -> Self {
        Self {
            file_bytes: 32 << 20,
            pages: 2_000,
            chars: 4_000_000,
            wall: Duration::from_secs(60),
            cpu_secs: 30,
            memory_bytes: 1 << 30,
        }
    }
}

/// A document's text, page by page (a page's index + 1 is its number).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    pub kind: Kind,
    pub pages: Vec<String>,
    /// The text was longer than [`CageLimits::chars`] or the PDF had more
    /// than [`CageLimits::pages`] pages: only the first part was read.
    pub cut: bool,
}

/// Why a document was not read, said to whoever sent it.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("it is {size} MB, over the {max} MB hearth reads", size = .bytes >> 20, max = .max >> 20)]
    TooBig { bytes: u64, max: u64 },
    #[error("it is not a document hearth reads: it looks like {0}")]
    NotADocument(String),
    #[error("{0}")]
    Unreadable(String),
    #[error("reading it was stopped: {0}")]
    Stopped(String),
    #[error("there is no text in it (a scanned PDF has only pictures of pages)")]
    NoText,
    #[error("documents are read in a sandbox, and none can run here: {0}")]
    Sandbox(#[from] SandboxError),
    #[error("cannot prepare the file for reading in {}: {source}; fix: check that the data dir is writable (`[data] dir`)", .path.display())]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where and how documents are read; each reading is contained by the
/// sandbox it is handed (hearth's, as `[agent] sandbox` resolved it).
#[derive(Debug, Clone)]
pub struct Cage {
    /// Each reading gets a fresh folder in here.
    work: PathBuf,
    /// The `hearth` binary, which has the `extract-document` command.
    helper: PathBuf,
    pub limits: CageLimits,
}

impl Cage {
    pub fn new(work: PathBuf, helper: PathBuf, limits: CageLimits) -> Self {
        Self {
            work,
            helper,
            limits,
        }
    }

    /// Reads the file at `path` (its name is only for messages).
    pub async fn read_file(
        &self,
        sandbox: &Sandbox,
        path: &Path,
    ) -> Result<Extracted, ExtractError> {
        let unreadable = |e: std::io::Error| ExtractError::Unreadable(e.to_string());
        let size = std::fs::metadata(path).map_err(unreadable)?.len();
        self.check_size(size)?;
        let bytes = std::fs::read(path).map_err(unreadable)?;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        self.read(sandbox, &bytes, name).await
    }

    /// Reads `bytes`, a file called `name`.
    pub async fn read(
        &self,
        sandbox: &Sandbox,
        bytes: &[u8],
        name: &str,
    ) -> Result<Extracted, ExtractError> {
        self.check_size(bytes.len() as u64)?;
        let kind = Kind::sniff(bytes, name).map_err(ExtractError::NotADocument)?;
        let folder = self.work.join(uuid::Uuid::new_v4().to_string());
        // People's files, for a moment: private to hearth's user.
        let prepared = hearth_core::file_modes::make_private_dir(&self.work)
            .and_then(|()| std::fs::create_dir(&folder))
            .and_then(|()| std::fs::write(folder.join(INPUT), bytes));
        if let Err(source) = prepared {
            let _ = std::fs::remove_dir_all(&folder);
            return Err(ExtractError::Folder {
                path: folder,
                source,
            });
        }
        let result = self.run(sandbox, kind, &folder).await;
        let _ = std::fs::remove_dir_all(&folder);
        result
    }

    fn check_size(&self, bytes: u64) -> Result<(), ExtractError> {
        if bytes > self.limits.file_bytes {
            return Err(ExtractError::TooBig {
                bytes,
                max: self.limits.file_bytes,
            });
        }
        Ok(())
    }

    async fn run(
        &self,
        sandbox: &Sandbox,
        kind: Kind,
        folder: &Path,
    ) -> Result<Extracted, ExtractError> {
        let limits = Limits {
            cpu_secs: self.limits.cpu_secs,
            memory_bytes: self.limits.memory_bytes,
            file_bytes: 16 << 20,
            processes: 16,
            resident_bytes: Some(self.limits.memory_bytes),
        };
        let (command, reads) = match kind {
            Kind::Pdf => (
                format!(
                    "exec pdftotext -enc UTF-8 -eol unix -l {} {INPUT} -",
                    self.limits.pages
                ),
                Vec::new(),
            ),
            _ => (
                format!(
                    "exec {} extract-document {} {INPUT} {}",
                    quoted(&self.helper),
                    kind.arg(),
                    self.limits.chars
                ),
                // The binary and the libraries beside it.
                self.helper
                    .parent()
                    .map(Path::to_path_buf)
                    .into_iter()
                    .collect(),
            ),
        };
        let sandbox = sandbox.for_server(folder, false, reads, limits);
        let finished =
            tokio::time::timeout(self.limits.wall, sandbox.run(&command, self.limits.chars))
                .await
                .map_err(|_| {
                    ExtractError::Stopped(format!(
                        "it took longer than {} s",
                        self.limits.wall.as_secs()
                    ))
                })??;
        if !finished.status.success() && !finished.cut {
            return Err(failure(kind, &finished));
        }
        let text = String::from_utf8_lossy(&finished.stdout);
        // The sandbox stops a reader at about four bytes a character; the
        // cap itself is in characters.
        let over = text.chars().nth(self.limits.chars).is_some();
        let text: String = text.chars().take(self.limits.chars).collect();
        let mut pages: Vec<String> = text.split('\u{c}').map(str::to_string).collect();
        // `pdftotext` ends every page with a form feed.
        if pages.len() > 1 && pages.last().is_some_and(|p| p.trim().is_empty()) {
            pages.pop();
        }
        if pages.iter().all(|p| p.trim().is_empty()) {
            return Err(ExtractError::NoText);
        }
        let cut = finished.cut
            || over
            || (kind == Kind::Pdf && pages.len() >= self.limits.pages as usize);
        Ok(Extracted { kind, pages, cut })
    }
}

/// The file's name in its folder: fixed, so no name reaches a command line.
const INPUT: &str = "document";

/// Why the reader ended without text, in words.
fn failure(kind: Kind, finished: &hearth_sandbox::Finished) -> ExtractError {
    let signal = finished.status.signal();
    if let Some(signal) = signal {
        let why = match signal {
            s if s == SIGXCPU => "it used up its CPU time".to_string(),
            9 => "it went over its memory or time limit".to_string(),
            other => format!("the reader crashed (signal {other})"),
        };
        return ExtractError::Stopped(why);
    }
    if kind == Kind::Pdf && finished.status.code() == Some(127) {
        return ExtractError::Unreadable(
            "PDFs are read with poppler's pdftotext, which is not installed here (apt-get install poppler-utils)"
                .to_string(),
        );
    }
    let said = String::from_utf8_lossy(&finished.stderr);
    // The last thing it said is what stopped it (a traceback's error,
    // poppler's last complaint).
    let said = said
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("");
    let said: String = said.chars().take(200).collect();
    if kind == Kind::Pdf && said.contains("Incorrect password") {
        return ExtractError::Unreadable(
            "the PDF is locked with a password; send a copy without one".to_string(),
        );
    }
    match (kind, said.is_empty()) {
        (Kind::Pdf, true) => ExtractError::Unreadable("the PDF is damaged".to_string()),
        (_, true) => ExtractError::Unreadable(format!("the {} is damaged", kind.name())),
        (_, false) => ExtractError::Unreadable(hearth_core::fence::defuse(&said)),
    }
}

const SIGXCPU: i32 = 24;

/// `path` in single quotes for `sh -c`.
fn quoted(path: &Path) -> String {
    format!("'{}'", path.to_string_lossy().replace('\'', r"'\''"))
}
