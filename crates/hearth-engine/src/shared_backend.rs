//! llama.cpp's backend, one per process: the chat engine and the memory's
//! embedding model each hold it while they run, so either can start first
//! and both can run at once. llama.cpp keeps the backend in process-wide
//! state (and `llama-cpp-2` refuses a second `init`), so the handle is
//! shared through a weak reference: the last holder to stop frees it.

use std::sync::{Arc, Mutex, Weak};

use llama_cpp_2::llama_backend::LlamaBackend;

use super::EngineError;

/// The process's backend, while anything holds it.
static SHARED: Mutex<Weak<LlamaBackend>> = Mutex::new(Weak::new());

/// The backend the running engine or embedding model holds, or a new one.
pub(crate) fn backend() -> Result<Arc<LlamaBackend>, EngineError> {
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(backend) = shared.upgrade() {
        return Ok(backend);
    }
    let backend = Arc::new(LlamaBackend::init().map_err(|e| EngineError::Backend(e.to_string()))?);
    *shared = Arc::downgrade(&backend);
    Ok(backend)
}
