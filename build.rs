//! Build script: makes `target/<profile>/` a folder that runs as it is.
//!
//! With the `dynamic-backends` feature llama.cpp is built as shared libraries
//! (`libllama.so.0`, `libggml*.so.0`) and one CPU backend module per
//! instruction-set level (`libggml-cpu-haswell.so`, …), all in
//! llama-cpp-sys-2's build folder. (That crate links only the unversioned
//! `.so` symlinks into the profile folder, which point at nothing there.) The
//! libraries under their run-time names and the modules are placed beside the
//! binary and beside test binaries (`deps/`), and the binary is given an rpath
//! of its own folder, so the folder can be copied to another machine and run
//! there; at start hearth loads the best CPU module for that machine.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DEP_LLAMA_BACKENDS_DIR");
    if std::env::var_os("CARGO_FEATURE_DYNAMIC_BACKENDS").is_none() {
        return;
    }
    // The shared libraries lie beside the binary (and beside test binaries in deps/).
    println!("cargo:rustc-link-arg=-Wl,-rpath,$ORIGIN");
    let Some(modules) = std::env::var_os("DEP_LLAMA_BACKENDS_DIR").map(PathBuf::from) else {
        println!("cargo:warning=llama-cpp-sys-2 named no backends folder");
        return;
    };
    let Some(profile_dir) = profile_dir() else {
        println!("cargo:warning=could not find the target profile folder");
        return;
    };
    let out = modules.parent().map(Path::to_path_buf).unwrap_or_default();
    let sources = [modules, out.join("lib"), out.join("lib64")];
    for dir in &sources {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if runtime_name(&name.to_string_lossy()) {
                for to in [profile_dir.clone(), profile_dir.join("deps")] {
                    place(&entry.path(), &to.join(&name));
                }
            }
        }
    }
}

/// Files the dynamic loader opens: backend modules (`libggml-cpu-x64.so`)
/// and libraries under their soname (`libllama.so.0`), not the unversioned
/// link-time names nor the fully versioned files the sonames point at.
fn runtime_name(name: &str) -> bool {
    if !name.starts_with("lib") {
        return false;
    }
    if let Some((_, version)) = name.split_once(".so.") {
        return !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit());
    }
    name.starts_with("libggml-") && name.ends_with(".so") && !name.starts_with("libggml-base")
}

/// `target/<profile>`: three levels above this script's OUT_DIR
/// (`target/<profile>/build/hearth-<hash>/out`).
fn profile_dir() -> Option<PathBuf> {
    let out = PathBuf::from(std::env::var_os("OUT_DIR")?);
    out.ancestors().nth(3).map(Path::to_path_buf)
}

/// Links (or copies) a library to `to`, replacing an older one; a symlink
/// is followed, so `to` is the library itself.
fn place(from: &Path, to: &Path) {
    let Ok(from) = std::fs::canonicalize(from) else {
        return;
    };
    let from = from.as_path();
    let same = match (std::fs::metadata(from), std::fs::metadata(to)) {
        (Ok(a), Ok(b)) => a.len() == b.len() && a.modified().ok() <= b.modified().ok(),
        _ => false,
    };
    if same {
        return;
    }
    let _ = std::fs::remove_file(to);
    if let Some(dir) = to.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if std::fs::hard_link(from, to).is_err()
        && let Err(e) = std::fs::copy(from, to)
    {
        println!("cargo:warning=cannot place {}: {e}", to.display());
    }
}
