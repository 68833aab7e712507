//! Why a GPU backend module that is there gives no device: it did not load
//! (a library it needs is missing), or it loaded and found no GPU (no
//! driver). One line each, for the log and `hearth doctor`; hearth then
//! runs on the CPU.

use std::ffi::{CStr, CString};
use std::path::Path;

/// The NVIDIA driver's library, which the CUDA runtime opens at run time.
const CUDA_DRIVER: &str = "libcuda.so.1";
/// Vulkan's loader, which finds the drivers (ICDs).
const VULKAN_LOADER: &str = "libvulkan.so.1";

/// What a module in a backends folder came to.
pub(crate) enum Module<'a> {
    /// ggml did not register it.
    NotLoaded { file: &'a Path },
    /// Registered as `backend`, with `devices` devices.
    Loaded { backend: &'a str, devices: usize },
}

/// The line for a module that gives no device; `None` when it gives one.
pub(crate) fn explain(module: Module<'_>) -> Option<String> {
    match module {
        Module::NotLoaded { file } => Some(format!(
            "{} did not load ({}); hearth runs on the CPU. Fix: install what it names (for CUDA, the runtime libraries of the toolkit it was built with: libcudart, libcublas), or remove the module",
            file.display(),
            open_error(file).unwrap_or_else(|| "it registered no backend".into())
        )),
        Module::Loaded { devices, .. } if devices > 0 => None,
        Module::Loaded { backend, .. } => Some(no_device(backend, can_open)),
    }
}

/// A loaded backend with no device: for CUDA and Vulkan, whether the driver
/// is missing or present without a GPU.
fn no_device(backend: &str, can_open: impl Fn(&str) -> bool) -> String {
    let driver = match backend.to_ascii_lowercase().as_str() {
        "cuda" => Some(("NVIDIA driver", CUDA_DRIVER)),
        "vulkan" => Some(("Vulkan loader", VULKAN_LOADER)),
        _ => None,
    };
    match driver {
        Some((what, lib)) if !can_open(lib) => format!(
            "the {backend} backend is installed but this machine has no {what} ({lib} not found); hearth runs on the CPU"
        ),
        Some((what, _)) => format!(
            "the {backend} backend is installed and the {what} is there, but it found no GPU; hearth runs on the CPU"
        ),
        None => format!(
            "the {backend} backend is installed but found no device; hearth runs on the CPU"
        ),
    }
}

/// Whether the dynamic loader finds and opens `lib`.
fn can_open(lib: &str) -> bool {
    let Ok(name) = CString::new(lib) else {
        return false;
    };
    // SAFETY: a valid C string; the handle is closed at once.
    unsafe {
        let handle = libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
        if handle.is_null() {
            return false;
        }
        libc::dlclose(handle);
    }
    true
}

/// The loader's reason a module does not open; `None` when it opens.
fn open_error(file: &Path) -> Option<String> {
    let name = CString::new(file.to_str()?).ok()?;
    // SAFETY: a valid C string; dlerror's text is copied before the next
    // dl call; the handle, if any, is closed at once.
    unsafe {
        let handle = libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if !handle.is_null() {
            libc::dlclose(handle);
            return None;
        }
        let error = libc::dlerror();
        (!error.is_null()).then(|| CStr::from_ptr(error).to_string_lossy().into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_driver_is_named_and_a_present_one_without_a_gpu_too() {
        let without = no_device("CUDA", |_| false);
        assert!(
            without.contains("no NVIDIA driver (libcuda.so.1 not found)"),
            "{without}"
        );
        assert!(without.contains("runs on the CPU"));
        let with = no_device("CUDA", |lib| lib == CUDA_DRIVER);
        assert!(with.contains("found no GPU"), "{with}");
        let vulkan = no_device("Vulkan", |_| false);
        assert!(
            vulkan.contains("no Vulkan loader (libvulkan.so.1"),
            "{vulkan}"
        );
        assert!(no_device("SYCL", |_| true).contains("found no device"));
    }

    #[test]
    fn a_module_that_does_not_open_is_named_with_the_loaders_reason() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("libggml-cuda.so");
        std::fs::write(&file, b"not an ELF file").unwrap();
        let line = explain(Module::NotLoaded { file: &file }).unwrap();
        assert!(line.contains("libggml-cuda.so did not load ("), "{line}");
        assert!(
            line.contains("runs on the CPU") && line.contains("Fix:"),
            "{line}"
        );
        // Positive control: a module with a device says nothing.
        assert!(
            explain(Module::Loaded {
                backend: "CUDA",
                devices: 1
            })
            .is_none()
        );
        assert!(
            explain(Module::Loaded {
                backend: "CUDA",
                devices: 0
            })
            .is_some()
        );
    }
}
