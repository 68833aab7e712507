//! `hearth docs add|list|search|forget`: the documents hearth keeps, by
//! hand; and `hearth extract-document`, the reader the cage starts.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;

use crate::config::Config;
use crate::documents::{
    Cage, CageLimits, DocumentStore, DocumentsSearch, Kind, Library, TurnLimits,
};
use crate::embed::Embed;
use crate::sandbox::Sandbox;
use crate::tools::ToolRegistry;

#[derive(Debug, Subcommand)]
pub enum DocsCommand {
    /// Read a document (PDF, DOCX, HTML, Markdown, text) and keep it.
    Add {
        file: PathBuf,
        /// Whose it is (default: `local`, the command line's own).
        #[arg(long, default_value = "local")]
        scope: String,
    },
    /// List the documents kept, newest first.
    List {
        /// Only this scope (`local`, `telegram:<user id>`, `telegram:chat:<chat id>`).
        #[arg(long)]
        scope: Option<String>,
    },
    /// The pieces of documents that match a question's words, with their pages.
    Search {
        query: String,
        /// Only this scope (default: every scope).
        #[arg(long)]
        scope: Option<String>,
        #[arg(long, default_value_t = 5)]
        limit: usize,
    },
    /// Forget one document (its id, as `list` shows it).
    Forget {
        id: i64,
        /// The scope it is in (as `list` shows it).
        #[arg(long)]
        scope: String,
    },
}

/// The documents of this config's data dir, read with the `hearth` binary
/// that runs now, found by their words.
pub fn library(config: &Config) -> anyhow::Result<Arc<Library>> {
    library_with(config, None)
}

/// [`library`], found by meaning too with `meaning`'s vectors.
pub fn library_with(
    config: &Config,
    meaning: Option<Arc<dyn Embed>>,
) -> anyhow::Result<Arc<Library>> {
    let helper = std::env::current_exe().map_err(|e| {
        anyhow::anyhow!("cannot find the hearth binary to read documents with: {e}")
    })?;
    let mut store = DocumentStore::open(&DocumentStore::path_in(&config.data_dir))?;
    if let Some(model) = meaning {
        store = store.with_meaning(model);
    }
    Ok(Arc::new(Library {
        store: Arc::new(store),
        cage: Cage::new(work_dir(config), helper, CageLimits::default()),
        limits: TurnLimits::default(),
    }))
}

/// `tools` with `documents_search` over `library`'s store.
pub fn with_search(mut tools: ToolRegistry, library: &Library) -> ToolRegistry {
    tools.register(Box::new(DocumentsSearch(library.store.clone())));
    tools
}

fn work_dir(config: &Config) -> PathBuf {
    config.data_dir.join("documents-work")
}

pub async fn run(config: &Config, command: DocsCommand) -> anyhow::Result<ExitCode> {
    // A search goes by meaning where the embedding model is (as the
    // daemon's would); the rest needs no model.
    let meaning = match &command {
        DocsCommand::Search { .. } => {
            crate::memory::meaning::start(config)?.map(|m| -> Arc<dyn Embed> { m })
        }
        _ => None,
    };
    let library = library_with(config, meaning)?;
    let store = &library.store;
    match command {
        DocsCommand::Add { file, scope } => {
            let sandbox = sandbox(config)?;
            let now = chrono::Utc::now().timestamp();
            let shown = file.display();
            let (id, new, read) = library
                .add_file(&sandbox, &file, &scope, now)
                .await
                .map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
            let cut = if read.cut {
                " (only its first part: it is over hearth's limits)"
            } else {
                ""
            };
            let again = if new { "" } else { ", already kept" };
            println!(
                "{id}: {shown}, a {} of {}{cut}{again}",
                read.kind.name(),
                pages(read.pages.len())
            );
        }
        DocsCommand::List { scope } => {
            let scopes = scopes(store, scope)?;
            let listed = store.list(&scopes.iter().map(String::as_str).collect::<Vec<_>>())?;
            if listed.is_empty() {
                println!("no documents");
            }
            for d in listed {
                let cut = if d.cut { ", cut" } else { "" };
                let pages = pages(d.pages);
                println!("{} {} {} ({}, {pages}{cut})", d.id, d.scope, d.name, d.kind);
            }
        }
        DocsCommand::Search {
            query,
            scope,
            limit,
        } => {
            let scopes = scopes(store, scope)?;
            let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
            let found = store.search(&scopes, &query, None, limit)?;
            if found.is_empty() {
                println!("nothing matches");
            }
            for f in found {
                let shown = one_line(excerpt(&f.text, &query));
                println!("{}, page {}: {shown}", f.name, f.page);
            }
        }
        DocsCommand::Forget { id, scope } => {
            if !store.forget(&[scope.as_str()], id)? {
                eprintln!("no document {id} in scope `{scope}`");
                return Ok(ExitCode::FAILURE);
            }
            println!("forgot document {id}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The document context of a command-line question about `files` (read
/// and kept in the `local` scope), or `None` without files.
pub async fn turn_with(
    config: &Config,
    files: &[PathBuf],
    question: &str,
) -> anyhow::Result<Option<String>> {
    if files.is_empty() {
        return Ok(None);
    }
    let library = library(config)?;
    let now = chrono::Utc::now().timestamp();
    Ok(library
        .for_files(&sandbox(config)?, files, LOCAL, question, now)
        .await?)
}

/// The command line's own scope.
const LOCAL: &str = crate::tools::scope::LOCAL_SCOPE;

/// The sandbox documents are read in from the command line.
fn sandbox(config: &Config) -> anyhow::Result<Sandbox> {
    let work = work_dir(config);
    crate::file_modes::make_private_dir(&work)?;
    let a = &config.agent;
    Ok(Sandbox::resolve(
        a.sandbox,
        &work,
        false,
        a.sandbox_limits(),
    ))
}

/// `hearth doctor`'s line: what reads documents here, or what is missing.
pub fn doctor_line(contained: bool) -> (bool, String) {
    if !contained {
        return (
            false,
            "not read: they are parsed only in the sandbox, and none runs here (the sandbox line says how to fix it)".to_string(),
        );
    }
    let pdftotext = [
        "/usr/bin/pdftotext",
        "/usr/local/bin/pdftotext",
        "/bin/pdftotext",
    ]
    .iter()
    .any(|p| Path::new(p).is_file());
    if pdftotext {
        (
            true,
            "PDF (poppler's pdftotext), DOCX, HTML, Markdown and text, each read in the sandbox"
                .to_string(),
        )
    } else {
        (
            false,
            "DOCX, HTML, Markdown and text are read; PDFs are not: poppler's pdftotext is missing (apt-get install poppler-utils)".to_string(),
        )
    }
}

/// `scope`, or every scope that has documents.
fn scopes(store: &DocumentStore, scope: Option<String>) -> anyhow::Result<Vec<String>> {
    Ok(match scope {
        Some(s) => vec![s],
        None => store.scopes()?,
    })
}

/// `text` from a little before the first of `query`'s words it holds.
fn excerpt<'a>(text: &'a str, query: &str) -> &'a str {
    let lower = text.to_lowercase();
    let first = crate::documents::store::words(query)
        .iter()
        .filter_map(|w| lower.find(w.as_str()))
        .min();
    let Some(at) = first else {
        return text;
    };
    // Lower-casing can move byte offsets: back to a boundary of `text`.
    let at = (0..=at.min(text.len()))
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    let start = text[..at]
        .char_indices()
        .rev()
        .nth(40)
        .map_or(0, |(i, _)| i);
    &text[start..]
}

fn pages(n: usize) -> String {
    if n == 1 {
        "1 page".to_string()
    } else {
        format!("{n} pages")
    }
}

fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 200 {
        format!("{}…", flat.chars().take(199).collect::<String>())
    } else {
        flat
    }
}

/// `hearth extract-document KIND FILE MAX_CHARS`: run by the cage only.
/// Writes the text, pages separated by form feeds, to stdout.
pub fn extract(kind: &str, file: &Path, max_chars: usize) -> ExitCode {
    let fail = |why: &str| {
        eprintln!("{why}");
        ExitCode::from(2)
    };
    let Some(kind) = Kind::from_arg(kind) else {
        return fail("unknown kind (pdf, docx, html, text)");
    };
    let mut bytes = Vec::new();
    let opened = std::fs::File::open(file).and_then(|f| f.take(64 << 20).read_to_end(&mut bytes));
    if let Err(e) = opened {
        return fail(&format!("cannot read the file: {e}"));
    }
    match crate::documents::inside::read(kind, &bytes, max_chars) {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                // Past the output cap the cage closes the pipe: it has enough.
                Err(_) => ExitCode::SUCCESS,
            }
        }
        Err(e) => fail(&e.to_string()),
    }
}
