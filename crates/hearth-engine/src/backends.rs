//! The llama.cpp backends this process computes with, and their devices.
//!
//! A default build links llama.cpp's backends at run time (`GGML_BACKEND_DL`):
//! one CPU module per instruction-set level (`libggml-cpu-haswell.so`, …) and,
//! where `make gpu` put one, a GPU module (`libggml-cuda.so`). They are loaded
//! from one folder: the executable's own when it holds the CPU modules (a
//! release folder copied to another machine), else the folder the build left
//! them in. ggml scores the CPU modules and loads the best one this CPU runs.
//! A configured `[engine] backends_dir` adds GPU modules from elsewhere. The
//! current directory is never searched: a library dropped where hearth was
//! started must not run inside the daemon.
//!
//! `[engine] rpc_servers` then adds the devices of other machines (rpc.rs).
//!
//! ggml keeps its backend registry per process, so loading happens once per
//! process; later calls return what the first one loaded.

#[cfg(feature = "dynamic-backends")]
use std::ffi::CString;
use std::ffi::{CStr, c_char, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use llama_cpp_sys_2 as sys;

/// A device a backend offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub name: String,
    pub description: String,
    pub kind: DeviceKind,
    pub free_bytes: u64,
    pub total_bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    Cpu,
    Gpu,
    IntegratedGpu,
    Accelerator,
    Other,
}

/// A registered backend and the library it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    /// ggml's name: `CPU`, `CUDA`, `Vulkan`, …
    pub name: String,
    /// The module file; `None` when linked into the binary.
    pub file: Option<PathBuf>,
    /// What the backend reports of itself (`AVX2`, `CUDA_ARCHS`, …), as
    /// `NAME` or `NAME=value`.
    pub features: Vec<String>,
    /// How many devices it offers.
    pub devices: usize,
}

/// What [`load`] found.
#[derive(Debug, Clone)]
pub struct Backends {
    /// The folder the modules were loaded from; `None` for a static build.
    pub folder: Option<PathBuf>,
    pub backends: Vec<Backend>,
    pub devices: Vec<Device>,
    /// The configured RPC servers and whether their devices joined.
    pub rpc: Vec<super::rpc::RpcServer>,
    /// Why GPU modules that are there give no device, a line each.
    pub idle: Vec<String>,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum BackendError {
    #[error(
        "no llama.cpp CPU backend module (libggml-cpu-*.so) found in {searched}; fix: keep the libggml-*.so files beside the hearth binary, or rebuild with `cargo build --release`"
    )]
    NoCpu { searched: String },
}

impl Backends {
    /// The module name of the CPU code in use, e.g. `libggml-cpu-haswell.so`,
    /// or `built in` for a static build.
    pub fn cpu_variant(&self) -> Option<String> {
        let cpu = self.backends.iter().find(|b| b.name == "CPU")?;
        Some(match &cpu.file {
            Some(f) => f.file_name()?.to_string_lossy().into_owned(),
            None => "built in".to_string(),
        })
    }

    /// Devices that take offloaded layers (discrete or integrated GPUs).
    pub fn gpus(&self) -> impl Iterator<Item = &Device> {
        self.devices
            .iter()
            .filter(|d| matches!(d.kind, DeviceKind::Gpu | DeviceKind::IntegratedGpu))
    }
}

static LOADED: OnceLock<Result<Backends, BackendError>> = OnceLock::new();

/// Loads the backends (once per process), adds the devices of the RPC
/// servers, and lists them with their devices.
pub fn load(
    extra_dir: Option<&Path>,
    rpc_servers: &[String],
) -> Result<&'static Backends, BackendError> {
    super::log::route_to_tracing();
    LOADED
        .get_or_init(|| load_now(extra_dir, rpc_servers))
        .as_ref()
        .map_err(Clone::clone)
}

/// Registers the RPC servers' devices, saying what failed.
fn add_rpc(rpc_servers: &[String]) -> Vec<super::rpc::RpcServer> {
    let servers = super::rpc::add_servers(rpc_servers);
    for server in &servers {
        if let Some(e) = &server.error {
            tracing::warn!("RPC server {}: {e}", server.endpoint);
        }
        if let Some(w) = &server.warning {
            tracing::warn!("{w}");
        }
    }
    servers
}

#[cfg(feature = "dynamic-backends")]
fn load_now(extra_dir: Option<&Path>, rpc_servers: &[String]) -> Result<Backends, BackendError> {
    let build_dir = sys::BACKENDS_DIR.map(PathBuf::from);
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf));
    let candidates: Vec<PathBuf> = exe_dir.into_iter().chain(build_dir).collect();
    let Some(folder) = candidates.iter().find(|d| has_module(d, "cpu")).cloned() else {
        let searched = candidates
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(BackendError::NoCpu { searched });
    };
    load_folder(&folder);
    let extra = extra_dir.filter(|d| *d != folder);
    if let Some(extra) = extra {
        load_extra(extra);
    }
    let rpc = add_rpc(rpc_servers);
    let backends = registered();
    let idle = idle_modules(std::iter::once(folder.as_path()).chain(extra), &backends);
    for line in &idle {
        tracing::warn!("{line}");
    }
    Ok(Backends {
        folder: Some(folder),
        backends,
        devices: devices(),
        rpc,
        idle,
    })
}

#[cfg(not(feature = "dynamic-backends"))]
fn load_now(_extra_dir: Option<&Path>, rpc_servers: &[String]) -> Result<Backends, BackendError> {
    let rpc = add_rpc(rpc_servers);
    Ok(Backends {
        folder: None,
        backends: registered(),
        devices: devices(),
        rpc,
        idle: Vec::new(),
    })
}

/// Whether `dir` holds a module of backend `name` (`libggml-NAME.so` or
/// `libggml-NAME-VARIANT.so`).
#[cfg(feature = "dynamic-backends")]
fn has_module(dir: &Path, name: &str) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| module_backend(&e.file_name().to_string_lossy()).as_deref() == Some(name))
    })
}

/// The backend a module file is for: `libggml-cpu-haswell.so` → `cpu`.
/// ggml's own libraries (`libggml.so`, `libggml-base.so`) are no modules.
fn module_backend(file: &str) -> Option<String> {
    let stem = file.strip_prefix("libggml-")?.strip_suffix(".so")?;
    let name = stem.split('-').next()?;
    (!name.is_empty() && name != "base").then(|| name.to_ascii_lowercase())
}

#[cfg(feature = "dynamic-backends")]
fn load_folder(folder: &Path) {
    let Some(path) = c_path(folder) else {
        return;
    };
    // SAFETY: a valid C string; ggml copies what it keeps.
    unsafe { sys::ggml_backend_load_all_from_path(path.as_ptr()) }
}

/// Loads the modules of `dir` for backends not registered yet (a CUDA
/// module installed apart from the CPU ones).
#[cfg(feature = "dynamic-backends")]
fn load_extra(dir: &Path) {
    let Some(modules) = modules(dir) else {
        tracing::warn!("[engine] backends_dir {} cannot be read", dir.display());
        return;
    };
    for (file, name) in modules {
        if name == "cpu"
            || registered()
                .iter()
                .any(|b| b.name.eq_ignore_ascii_case(&name))
        {
            continue;
        }
        if let Some(path) = c_path(&file) {
            // SAFETY: a valid C string; a null result means it did not load
            // (`idle_modules` says why).
            unsafe { sys::ggml_backend_load(path.as_ptr()) };
        }
    }
}

/// The backend modules in `dir`, in name order, with the backend each is
/// for; `None` when it cannot be read.
#[cfg(feature = "dynamic-backends")]
fn modules(dir: &Path) -> Option<Vec<(PathBuf, String)>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    Some(
        files
            .into_iter()
            .filter_map(|f| {
                let name = module_backend(&f.file_name()?.to_string_lossy())?;
                Some((f, name))
            })
            .collect(),
    )
}

/// Why the GPU modules in `folders` (not the CPU's, not RPC's, whose
/// devices come from servers) give no device.
#[cfg(feature = "dynamic-backends")]
fn idle_modules<'a>(folders: impl Iterator<Item = &'a Path>, loaded: &[Backend]) -> Vec<String> {
    use super::idle_modules::{Module, explain};
    let mut lines = Vec::new();
    for folder in folders {
        for (file, name) in modules(folder).unwrap_or_default() {
            if name == "cpu" || name == "rpc" {
                continue;
            }
            let module = match loaded.iter().find(|b| b.name.eq_ignore_ascii_case(&name)) {
                Some(b) => Module::Loaded {
                    backend: &b.name,
                    devices: b.devices,
                },
                None => Module::NotLoaded { file: &file },
            };
            lines.extend(explain(module));
        }
    }
    lines
}

#[cfg(feature = "dynamic-backends")]
fn c_path(path: &Path) -> Option<CString> {
    CString::new(path.to_str()?).ok()
}

/// `ggml_backend_get_features`: the features a backend reports.
type GetFeatures =
    unsafe extern "C" fn(sys::ggml_backend_reg_t) -> *const sys::ggml_backend_feature;

fn registered() -> Vec<Backend> {
    // SAFETY: ggml's registry functions take indices below the count they
    // return, and give strings that live as long as the registry.
    unsafe {
        (0..sys::ggml_backend_reg_count())
            .map(|i| {
                let reg = sys::ggml_backend_reg_get(i);
                let name_ptr = sys::ggml_backend_reg_name(reg);
                let name = text(name_ptr);
                let getter = sys::ggml_backend_reg_get_proc_address(
                    reg,
                    c"ggml_backend_get_features".as_ptr(),
                );
                let features = if getter.is_null() {
                    Vec::new()
                } else {
                    let get: GetFeatures = std::mem::transmute(getter);
                    features(get(reg))
                };
                // A module without the features function (Vulkan's) is
                // found by its name, a string it holds.
                let anchor = if getter.is_null() {
                    name_ptr.cast_mut().cast()
                } else {
                    getter
                };
                Backend {
                    file: module_file(anchor),
                    name,
                    features,
                    devices: sys::ggml_backend_reg_dev_count(reg),
                }
            })
            .collect()
    }
}

/// The features array ends with a null name.
unsafe fn features(mut f: *const sys::ggml_backend_feature) -> Vec<String> {
    let mut out = Vec::new();
    // SAFETY: ggml returns a static array terminated by a null name.
    unsafe {
        while !f.is_null() && !(*f).name.is_null() {
            let name = text((*f).name);
            let value = text((*f).value);
            out.push(if value.is_empty() || value == "1" {
                name
            } else {
                format!("{name}={value}")
            });
            f = f.add(1);
        }
    }
    out
}

/// The shared object a function of a module lies in; `None` when it lies in
/// this executable (a static build).
fn module_file(symbol: *mut c_void) -> Option<PathBuf> {
    if symbol.is_null() {
        return None;
    }
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address and fills `info`.
    if unsafe { libc::dladdr(symbol, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    let file = PathBuf::from(unsafe { text(info.dli_fname) });
    let exe = std::env::current_exe().ok();
    let is_exe =
        exe.is_some_and(|e| std::fs::canonicalize(&e).ok() == std::fs::canonicalize(&file).ok());
    (!is_exe).then_some(file)
}

fn devices() -> Vec<Device> {
    // SAFETY: indices below the count ggml returns; strings owned by ggml.
    unsafe {
        (0..sys::ggml_backend_dev_count())
            .map(|i| {
                let dev = sys::ggml_backend_dev_get(i);
                let (mut free, mut total) = (0usize, 0usize);
                sys::ggml_backend_dev_memory(dev, &mut free, &mut total);
                Device {
                    name: text(sys::ggml_backend_dev_name(dev)),
                    description: text(sys::ggml_backend_dev_description(dev)),
                    kind: match sys::ggml_backend_dev_type(dev) {
                        sys::GGML_BACKEND_DEVICE_TYPE_CPU => DeviceKind::Cpu,
                        sys::GGML_BACKEND_DEVICE_TYPE_GPU => DeviceKind::Gpu,
                        sys::GGML_BACKEND_DEVICE_TYPE_IGPU => DeviceKind::IntegratedGpu,
                        sys::GGML_BACKEND_DEVICE_TYPE_ACCEL => DeviceKind::Accelerator,
                        _ => DeviceKind::Other,
                    },
                    free_bytes: free as u64,
                    total_bytes: total as u64,
                }
            })
            .collect()
    }
}

/// A C string ggml owns, as text; empty for null.
unsafe fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the caller passes a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names_name_their_backend() {
        assert_eq!(
            module_backend("libggml-cpu-haswell.so").as_deref(),
            Some("cpu")
        );
        assert_eq!(module_backend("libggml-cpu-x64.so").as_deref(), Some("cpu"));
        assert_eq!(module_backend("libggml-cuda.so").as_deref(), Some("cuda"));
        assert_eq!(module_backend("libggml-base.so"), None);
        assert_eq!(module_backend("libggml.so"), None);
        assert_eq!(module_backend("libllama.so"), None);
        assert_eq!(module_backend("libggml-cuda.so.bak"), None);
    }

    #[test]
    fn the_loaded_backends_include_a_cpu_with_a_device() {
        let backends = load(None, &[]).expect("backends load");
        assert!(
            backends.backends.iter().any(|b| b.name == "CPU"),
            "{backends:?}"
        );
        assert!(backends.devices.iter().any(|d| d.kind == DeviceKind::Cpu));
        let variant = backends.cpu_variant().expect("a CPU backend");
        if cfg!(feature = "dynamic-backends") {
            assert!(variant.starts_with("libggml-cpu-"), "{variant}");
        } else {
            assert_eq!(variant, "built in");
        }
    }
}
