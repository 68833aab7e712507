//! Helpers shared by the integration tests: the real binary in an isolated
//! environment, and the paths of the test models that `make test` fetches.
#![allow(dead_code)]

pub mod documents;
pub mod pictures;
pub mod speech;

use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub const SMOLLM2: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
pub const GEMMA3: &str = "gemma-3-270m-q4_k_m.gguf";
/// The sentence-embedding test model (`make test-embedding`).
pub const MINILM: &str = "all-MiniLM-L6-v2.F16.gguf";

/// The embedding test model, loaded on its own thread.
pub fn embedding_model() -> std::sync::Arc<hearth::engine::EmbeddingModel> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models")
        .join(MINILM);
    assert!(
        path.is_file(),
        "{} is missing: run `make test-embedding` (make test does)",
        path.display()
    );
    let model = hearth::engine::EmbeddingModel::start(hearth::engine::EmbeddingSettings {
        path,
        threads: engine_threads(),
        backends_dir: None,
        rpc_servers: Vec::new(),
    })
    .expect("the embedding test model loads");
    std::sync::Arc::new(model)
}

/// The path of a test model; fails the test with the fix when it is absent.
pub fn model(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models")
        .join(name);
    assert!(
        path.is_file(),
        "{} is missing: run `make test-models` (make test does)",
        path.display()
    );
    path
}

/// Engine settings for a test model on the CPU: one conversation slot,
/// 1,024 tokens, the prompt cache on, nothing kept on disk, no drafts
/// (tests/speculative.rs drafts; replies compared token for token across
/// batch shapes stay comparable). Tests override
/// what they exercise with `..engine_settings(…)`.
pub fn engine_settings(name: &str) -> hearth::engine::EngineSettings {
    hearth::engine::EngineSettings {
        model_path: model(name),
        chat_template: None,
        tool_format: None,
        context_size: 1024,
        threads: engine_threads(),
        batch_size: 512,
        flash_attention: Some(false),
        gpu_layers: hearth::config::GpuLayers::Auto,
        slots: 1,
        ram_cache_bytes: 1 << 28,
        disk_cache_bytes: 0,
        kv_dir: None,
        prompt_cache: true,
        reuse_min_chunk: 16,
        share_prompts: true,
        backends_dir: None,
        rpc_servers: Vec::new(),
        gpu_memory_mb: None,
        swa_full: true,
        swa_checkpoints: 8,
        speculation: hearth::engine::Speculation::Off,
        draft_tokens: 8,
        mmproj: None,
        image_limits: Default::default(),
    }
}

/// A sandbox: its own home, data dir and config file.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes a config file into the sandbox and returns its path.
    pub fn config(&self, text: &str) -> PathBuf {
        let path = self.path("config.toml");
        std::fs::write(&path, text).expect("write config");
        path
    }

    /// `hearth` with HOME and the data dir inside the sandbox and no
    /// inherited hearth variables, as a plain process (for pipes and signals).
    pub fn hearth_process(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hearth"));
        for (key, _) in std::env::vars() {
            if key.starts_with("HEARTH_")
                || key.starts_with("XDG_")
                || key == "RUST_LOG"
                || key == "OPENAI_API_KEY"
                || key == "ANTHROPIC_API_KEY"
            {
                cmd.env_remove(key);
            }
        }
        cmd.env("HOME", self.dir.path())
            .env("HEARTH_DATA_DIR", self.path("data"));
        if let Ok(threads) = std::env::var("HEARTH_THREADS") {
            cmd.env("HEARTH_THREADS", threads);
        }
        cmd
    }

    /// [`Self::hearth_process`] for assertions, with a 300 s limit.
    pub fn hearth(&self) -> Command {
        let mut cmd = Command::from_std(self.hearth_process());
        cmd.timeout(std::time::Duration::from_secs(300));
        cmd
    }
}

/// Output that shows no Rust panic or backtrace.
/// The number hearth logged as `name=N` (the first one) in `stderr`.
pub fn logged(stderr: &str, name: &str) -> u32 {
    let key = format!("{name}=");
    let at = stderr
        .find(&key)
        .unwrap_or_else(|| panic!("no {key} in: {stderr}"));
    stderr[at + key.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("{key} is no number in: {stderr}"))
}

pub fn assert_no_panic(stderr: &str) {
    assert!(
        !stderr.contains("panicked"),
        "panic shown to the user: {stderr}"
    );
    assert!(
        !stderr.contains("RUST_BACKTRACE"),
        "backtrace hint shown: {stderr}"
    );
    assert!(
        !stderr.contains("stack backtrace"),
        "backtrace shown: {stderr}"
    );
}

/// The threads each test engine runs llama.cpp on: `HEARTH_THREADS`, which
/// `make test` sets to 1 (and the `hearth` processes the tests start read
/// too), else 0 (one per physical core).
pub fn engine_threads() -> u32 {
    std::env::var("HEARTH_THREADS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// How many engines may run at once: with one thread each, one per core
/// and one more (a test's engine often waits on its test); otherwise one.
/// Engines of several threads spinning on the same cores slow each other
/// tenfold (a 23 s test took 269 s beside the real-model tests); engines of
/// one thread do not spin.
fn engines_at_once() -> usize {
    match engine_threads() {
        1 => std::thread::available_parallelism().map_or(1, |n| n.get()) + 1,
        _ => 1,
    }
}

/// Held by a test while an engine of its own, or a `hearth` process it
/// started that loads a model, runs: [`engines_at_once`] at a time.
pub struct EngineTurn(());

impl Drop for EngineTurn {
    fn drop(&mut self) {
        let (running, changed) = &ENGINES;
        *running.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        changed.notify_one();
    }
}

static ENGINES: (std::sync::Mutex<usize>, std::sync::Condvar) =
    (std::sync::Mutex::new(0), std::sync::Condvar::new());

/// Waits for an engine's turn (llama.cpp's backend is one per process,
/// and the integration tests are one process).
pub fn engine_lock() -> EngineTurn {
    let most = engines_at_once();
    let (running, changed) = &ENGINES;
    let mut now = running.lock().unwrap_or_else(|e| e.into_inner());
    while *now >= most {
        now = changed.wait(now).unwrap_or_else(|e| e.into_inner());
    }
    *now += 1;
    EngineTurn(())
}

/// Copies the folder `from` into `to`, as it is now.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            // A file may vanish between the listing and the copy (a -shm or
            // a temporary file): as a crash would leave it, it is not there.
            let _ = std::fs::copy(entry.path(), &target);
        }
    }
}

/// "N of M layers on the GPU" from `hearth doctor`'s load line.
pub fn offloaded(doctor: &str) -> (u32, u32) {
    let line = doctor
        .lines()
        .find(|l| l.contains("layers on the GPU"))
        .unwrap_or_else(|| panic!("no load line: {doctor}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "layers").unwrap();
    (
        words[at - 3].parse().unwrap(),
        words[at - 1].parse().unwrap(),
    )
}

/// How many characters `a` and `b` share from the start.
pub fn shared(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

/// `hearth ask`'s log `err` (at info) shows a resumed conversation: its
/// cache came back and only the new turn was read.
pub fn assert_resumed(err: &str) {
    let prompt = logged(err, "prompt_tokens");
    let cached = logged(err, "cached_tokens");
    assert!(
        cached > 0 && prompt - cached < 40,
        "only the new turn is read: {cached} of {prompt} cached\n{err}"
    );
}
