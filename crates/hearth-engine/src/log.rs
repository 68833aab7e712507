//! llama.cpp's own log lines, routed into `tracing` at debug level.
//!
//! llama.cpp prints loader and context details to stderr by default, which
//! would land on the chat screen. hearth installs a callback that forwards
//! every line to `tracing::debug!` under the target `llama.cpp`, so they are
//! visible with `--verbose` or `RUST_LOG=llama.cpp=debug` and silent otherwise.

use std::ffi::{CStr, c_char, c_void};

/// Installs the callback for llama.cpp, ggml and mtmd (images). Idempotent.
pub fn route_to_tracing() {
    // SAFETY: the callback is a plain function that only reads the C string it
    // is handed during the call; no user data pointer is used.
    unsafe {
        llama_cpp_sys_2::llama_log_set(Some(forward), std::ptr::null_mut());
        llama_cpp_sys_2::ggml_log_set(Some(forward), std::ptr::null_mut());
        llama_cpp_sys_2::mtmd_log_set(Some(forward), std::ptr::null_mut());
        llama_cpp_sys_2::mtmd_helper_log_set(Some(forward), std::ptr::null_mut());
    }
}

unsafe extern "C" fn forward(
    _level: llama_cpp_sys_2::ggml_log_level,
    text: *const c_char,
    _data: *mut c_void,
) {
    if text.is_null() {
        return;
    }
    // SAFETY: llama.cpp passes a valid NUL-terminated string for the call.
    let text = unsafe { CStr::from_ptr(text) }.to_string_lossy();
    let line = text.trim_end();
    if !line.is_empty() {
        tracing::debug!(target: "llama.cpp", "{line}");
    }
}
