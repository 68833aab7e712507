//! `hearth memory list|search|forget`: what hearth remembers, by hand.

use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;

use crate::config::Config;
use crate::memory::{Category, MemoryStore};

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// List memories, newest first.
    List {
        /// Only this scope (`local`, `telegram:<user id>`, `telegram:chat:<chat id>`).
        #[arg(long)]
        scope: Option<String>,
        /// Only this category: core, daily, conversation, custom.
        #[arg(long)]
        category: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Search memories by keywords, with relevance scores.
    Search {
        query: String,
        /// Only this scope (default: every scope).
        #[arg(long)]
        scope: Option<String>,
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Forget one memory.
    Forget {
        key: String,
        /// The scope it is in (as `list` shows it).
        #[arg(long)]
        scope: String,
    },
}

pub fn run(config: &Config, command: MemoryCommand) -> anyhow::Result<ExitCode> {
    let store = MemoryStore::open(&MemoryStore::path_in(&config.data_dir))?;
    match command {
        MemoryCommand::List {
            scope,
            category,
            limit,
        } => {
            let category: Option<Category> = category
                .map(|c| c.parse().map_err(anyhow::Error::msg))
                .transpose()
                .context("--category")?;
            let entries = store.list(scope.as_deref(), category, limit)?;
            if entries.is_empty() {
                println!("no memories");
            }
            for e in entries {
                println!(
                    "{} [{}] {} — {}",
                    e.scope,
                    e.category,
                    e.key,
                    one_line(&e.content)
                );
            }
        }
        MemoryCommand::Search {
            query,
            scope,
            limit,
        } => {
            let store = match crate::memory::meaning::start(config)? {
                Some(model) => store.with_meaning(model),
                None => store,
            };
            let found = match scope {
                Some(s) => store.recall(&query, limit, &s)?,
                None => store.search_everywhere(&query, limit)?,
            };
            if found.is_empty() {
                println!("nothing matches");
            }
            for r in found {
                let e = r.entry;
                println!(
                    "{:.2} {} [{}] {} — {}",
                    r.score,
                    e.scope,
                    e.category,
                    e.key,
                    one_line(&e.content)
                );
            }
        }
        MemoryCommand::Forget { key, scope } => {
            if !store.forget(&scope, &key)? {
                eprintln!("no memory `{key}` in scope `{scope}`");
                return Ok(ExitCode::FAILURE);
            }
            println!("forgot `{key}`");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 160 {
        format!("{}…", flat.chars().take(159).collect::<String>())
    } else {
        flat
    }
}
