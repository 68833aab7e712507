//! A KV-cache sequence per conversation, with RAM and disk behind it.
//!
//! The context has `slots` sequences. A request names its conversation; if
//! the conversation holds a slot, its cached tokens are reused. Otherwise it
//! takes a free slot or the least recently used one, whose occupant moves to
//! host RAM. Past the RAM budget the oldest RAM entries move to disk under
//! the data dir, and on shutdown everything is written there, so a
//! conversation resumes with a cache hit even after a restart. A saved state
//! that does not match the running model and context, or fails its
//! checksum, is discarded with a log line and never handed to llama.cpp.

mod arrange;
mod board;
mod checkpoint;
pub mod reuse;
mod saved;
mod share;
mod slots;
pub mod v_layout;

use std::collections::VecDeque;
use std::path::PathBuf;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::session::LlamaStateSeqFlags;
use llama_cpp_2::token::LlamaToken;

pub use arrange::arrange;
pub use board::{CacheBoard, Cached, Tier};
pub use checkpoint::EVERY as CHECKPOINT_EVERY;
pub use hearth_core::chat::CacheOrigin as Origin;
pub use saved::Fingerprint;
use saved::{LoadError, SavedSeq};
use slots::Slots;

#[derive(Debug, Clone)]
pub struct CacheSettings {
    pub slots: usize,
    /// Bytes of sequence state kept in RAM before spilling to disk.
    pub ram_budget: usize,
    /// Bytes of state files kept on disk; the oldest go first.
    pub disk_budget: u64,
    /// Where state files live; `None` keeps nothing on disk.
    pub disk_dir: Option<PathBuf>,
    /// Window checkpoints kept per sequence (see [`checkpoint`]); 0: none.
    pub checkpoints: usize,
    /// The context keeps V transposed (flash attention off): saved states
    /// in the other layout are turned on loading ([`v_layout`]).
    pub v_transposed: bool,
}

pub struct SeqCache {
    slots: Slots,
    /// Evicted sequences, oldest first.
    ram: VecDeque<(String, SavedSeq)>,
    ram_bytes: usize,
    settings: CacheSettings,
    fingerprint: Fingerprint,
    /// Where what it holds is posted for readers.
    board: std::sync::Arc<CacheBoard>,
}

impl SeqCache {
    pub fn new(settings: CacheSettings, fingerprint: Fingerprint) -> Self {
        Self {
            slots: Slots::new(settings.slots),
            ram: VecDeque::new(),
            ram_bytes: 0,
            settings,
            fingerprint,
            board: std::sync::Arc::default(),
        }
    }

    /// Posts what it holds on `board` from now on.
    pub fn with_board(mut self, board: std::sync::Arc<CacheBoard>) -> Self {
        self.board = board;
        self.post();
        self
    }

    /// Posts the sequences and the RAM states as they are now.
    pub fn post(&self) {
        let slots = self.slots.occupied().filter_map(|i| {
            let slot = self.slots.get(i);
            Some(Cached {
                conversation: slot.conversation.clone()?,
                tier: Tier::Slot,
                tokens: slot.tokens.len(),
                bytes: None,
            })
        });
        let ram = self.ram.iter().rev().map(|(conversation, seq)| Cached {
            conversation: conversation.clone(),
            tier: Tier::Ram,
            tokens: seq.tokens.len(),
            bytes: Some(seq.bytes() as u64),
        });
        self.board
            .post(slots.chain(ram).collect(), self.settings.disk_dir.clone());
    }

    /// Gives `conversation` a sequence, restoring its saved state if any;
    /// the sequences in `busy` (replies in flight) are never evicted, so
    /// the caller leaves at least one sequence out of it. Returns the
    /// sequence id and where its tokens came from.
    pub fn acquire(
        &mut self,
        ctx: &mut LlamaContext<'_>,
        conversation: &str,
        busy: &[usize],
    ) -> (usize, Origin) {
        if let Some(i) = self.slots.find(conversation) {
            self.slots.touch(i);
            self.post();
            return (i, Origin::Resident);
        }
        // Take the conversation's own saved state first, so making room
        // for it never pushes it to disk.
        let (saved, origin) = match self.ram.iter().position(|(c, _)| c == conversation) {
            Some(pos) => {
                let (_, seq) = self.ram.remove(pos).expect("position is in range");
                self.ram_bytes -= seq.bytes();
                (Some(seq), Origin::Ram)
            }
            None => (self.load_from_disk(conversation), Origin::Disk),
        };
        let i = self.slots.victim(busy);
        self.evict(ctx, i);
        self.slots.get_mut(i).conversation = Some(conversation.to_string());
        self.slots.touch(i);
        let acquired = match saved {
            Some(seq) if self.restore(ctx, i, &seq) => {
                tracing::debug!(
                    conversation,
                    ?origin,
                    tokens = seq.tokens.len(),
                    "KV state restored"
                );
                self.slots.get_mut(i).tokens = seq.tokens;
                (i, origin)
            }
            _ => (i, Origin::Fresh),
        };
        self.post();
        acquired
    }

    /// Whether `conversation` has anything cached: a sequence, a state in
    /// RAM or a state file.
    pub fn knows(&self, conversation: &str) -> bool {
        self.slots.find(conversation).is_some()
            || self.ram.iter().any(|(c, _)| c == conversation)
            || self
                .settings
                .disk_dir
                .as_ref()
                .is_some_and(|dir| saved::path_for(dir, conversation).exists())
    }

    /// The tokens held by sequence `seq`.
    pub fn tokens_mut(&mut self, seq: usize) -> &mut Vec<LlamaToken> {
        &mut self.slots.get_mut(seq).tokens
    }

    /// Empties sequence `seq` (after a failed decode left it unknown).
    pub fn forget(&mut self, ctx: &mut LlamaContext<'_>, seq: usize) {
        // Removing a whole sequence always succeeds.
        let _ = ctx.clear_kv_cache_seq(Some(seq as u32), None, None);
        let slot = self.slots.get_mut(seq);
        slot.tokens.clear();
        slot.checkpoints.clear();
        self.post();
    }

    pub fn n_slots(&self) -> usize {
        self.slots.len()
    }

    /// Writes every cached conversation to disk (on shutdown).
    pub fn persist_all(&mut self, ctx: &mut LlamaContext<'_>) {
        if self.settings.disk_dir.is_none() {
            return;
        }
        let occupied: Vec<usize> = self.slots.occupied().collect();
        for i in occupied {
            let slot = self.slots.get(i);
            let Some(conversation) = slot.conversation.clone() else {
                continue;
            };
            if slot.tokens.is_empty() {
                continue;
            }
            if let Some(state) = read_state(ctx, i) {
                let seq = SavedSeq {
                    tokens: slot.tokens.clone(),
                    state,
                };
                self.save_to_disk(&conversation, &seq);
            }
        }
        while let Some((conversation, seq)) = self.ram.pop_front() {
            self.save_to_disk(&conversation, &seq);
        }
        self.ram_bytes = 0;
        self.post();
    }

    /// Moves the occupant of slot `i` to RAM (and RAM's oldest to disk).
    fn evict(&mut self, ctx: &mut LlamaContext<'_>, i: usize) {
        let slot = self.slots.get_mut(i);
        let conversation = slot.conversation.take();
        let tokens = std::mem::take(&mut slot.tokens);
        slot.checkpoints.clear();
        if let Some(conversation) = conversation.filter(|_| !tokens.is_empty())
            && let Some(state) = read_state(ctx, i)
        {
            let seq = SavedSeq { tokens, state };
            self.ram_bytes += seq.bytes();
            tracing::debug!(conversation, bytes = seq.bytes(), "KV state moved to RAM");
            self.ram.push_back((conversation, seq));
        }
        // Removing a whole sequence always succeeds.
        let _ = ctx.clear_kv_cache_seq(Some(i as u32), None, None);
        while self.ram_bytes > self.settings.ram_budget {
            let Some((conversation, seq)) = self.ram.pop_front() else {
                break;
            };
            self.ram_bytes -= seq.bytes();
            self.save_to_disk(&conversation, &seq);
        }
    }

    fn restore(&self, ctx: &mut LlamaContext<'_>, i: usize, seq: &SavedSeq) -> bool {
        // SAFETY: the bytes were produced by `read_state` on a context with
        // the same fingerprint (RAM entries are from this very context; disk
        // entries passed the fingerprint and checksum checks in `saved`).
        let ok = unsafe {
            ctx.state_seq_set_data_ext(&seq.state, i as i32, LlamaStateSeqFlags::empty())
        };
        if !ok {
            tracing::warn!(
                seq = i,
                "llama.cpp refused a saved KV state; starting the conversation cold"
            );
            let _ = ctx.clear_kv_cache_seq(Some(i as u32), None, None);
        }
        ok
    }

    fn load_from_disk(&self, conversation: &str) -> Option<SavedSeq> {
        let dir = self.settings.disk_dir.as_ref()?;
        let path = saved::path_for(dir, conversation);
        let result = saved::load(&path, conversation, &self.fingerprint);
        match result {
            Ok(mut seq) => {
                // The state moves into the context; the file would go stale.
                let _ = std::fs::remove_file(&path);
                match v_layout::relayout(&seq.state, self.settings.v_transposed) {
                    v_layout::Relaid::Turned(state) => {
                        tracing::info!(
                            conversation,
                            "turned a saved KV state's V cache to this context's layout (flash attention differs)"
                        );
                        seq.state = state;
                    }
                    v_layout::Relaid::Already => {}
                    v_layout::Relaid::Unreadable => {
                        tracing::debug!(
                            conversation,
                            "a saved KV state's V layout is not one hearth reads"
                        );
                    }
                }
                Some(seq)
            }
            Err(LoadError::Missing) => None,
            Err(e @ LoadError::Mismatch(_)) => {
                // The model or context size changed since: expected, not a fault.
                tracing::info!(
                    conversation,
                    "rebuilding the conversation's KV state: it was {e}"
                );
                let _ = std::fs::remove_file(&path);
                None
            }
            Err(e) => {
                tracing::warn!(conversation, path = %path.display(), "discarding saved KV state: {e}");
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    fn save_to_disk(&self, conversation: &str, seq: &SavedSeq) {
        let Some(dir) = &self.settings.disk_dir else {
            return;
        };
        let path = saved::path_for(dir, conversation);
        match saved::save(&path, conversation, &self.fingerprint, seq) {
            Ok(()) => tracing::debug!(conversation, bytes = seq.bytes(), "KV state saved to disk"),
            Err(e) => {
                tracing::warn!(conversation, path = %path.display(), "cannot save KV state: {e}")
            }
        }
        prune(dir, self.settings.disk_budget);
    }
}

/// The serialised state of sequence `seq`.
fn read_state(ctx: &LlamaContext<'_>, seq: usize) -> Option<Vec<u8>> {
    let flags = LlamaStateSeqFlags::empty();
    let size = ctx.state_seq_get_size_ext(seq as i32, flags);
    let mut buf = vec![0u8; size];
    // SAFETY: `buf` has exactly the size llama.cpp reported for this sequence.
    let written = unsafe { ctx.state_seq_get_data_ext(buf.as_mut_ptr(), seq as i32, flags) };
    (written == size).then_some(buf)
}

/// A `.kv.tmp` older than this is left from a save that never finished
/// (a crash): deleted. A younger one may be another process's save.
const STALE_SAVE: std::time::Duration = std::time::Duration::from_secs(3_600);

/// Deletes the oldest state files until the folder fits `budget` bytes,
/// and saves a crash left half-written.
fn prune(dir: &std::path::Path, budget: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Some((modified, len)) = entry
            .metadata()
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())))
        else {
            continue;
        };
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".kv.tmp") {
            if modified.elapsed().is_ok_and(|age| age > STALE_SAVE) {
                tracing::info!(path = %path.display(), "deleting a KV save a crash left unfinished");
                let _ = std::fs::remove_file(&path);
            }
        } else if name.ends_with(".kv") {
            files.push((modified, len, path));
        }
    }
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    files.sort();
    for (_, len, path) in files {
        if total <= budget {
            break;
        }
        tracing::info!(path = %path.display(), "KV disk budget reached; deleting the oldest saved state");
        let _ = std::fs::remove_file(&path);
        total -= len;
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    fn file(dir: &std::path::Path, name: &str, bytes: usize, age_secs: u64) {
        let path = dir.join(name);
        std::fs::write(&path, vec![0u8; bytes]).unwrap();
        let when = SystemTime::now() - Duration::from_secs(age_secs);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }

    fn names(dir: &std::path::Path) -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    }

    #[test]
    fn the_disk_tier_keeps_the_newest_within_its_budget() {
        let dir = tempfile::tempdir().unwrap();
        for (i, age) in [500, 400, 300, 200, 100].iter().enumerate() {
            file(dir.path(), &format!("c{i}.kv"), 1_000, *age);
        }
        file(dir.path(), "old.kv.tmp", 5_000, 7_200);
        file(dir.path(), "young.kv.tmp", 5_000, 10);
        file(dir.path(), "notes.txt", 9_000, 9_000);
        // Positive control: within the budget, every cache stays.
        super::prune(dir.path(), 5_000);
        assert!(names(dir.path()).contains(&"c0.kv".to_string()));
        assert!(
            !names(dir.path()).contains(&"old.kv.tmp".to_string()),
            "a crash's half save goes"
        );
        super::prune(dir.path(), 2_500);
        assert_eq!(
            names(dir.path()),
            ["c3.kv", "c4.kv", "notes.txt", "young.kv.tmp"],
            "the oldest go first; a save under way and other files stay"
        );
    }
}
