//! `make gpu` on a machine without the CUDA toolkit: it stops at once and
//! names what is missing. With stand-ins for nvcc and CMake, the recipe is
//! followed to the end: the vendored llama.cpp is configured with a
//! dynamically loaded CUDA backend and the library lands where hearth looks.
//! With the real CMake and NVIDIA's real compiler from PyPI (`make
//! cuda-compiler`, which `make test` runs), the configure step itself runs
//! on the vendored sources and gets past configure and generate; cuBLAS,
//! which only the link needs, is a stand-in there (a library with no
//! symbols), since the real one is 444 MB.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A folder for PATH holding only the tools the recipe uses, so that an
/// nvcc installed on this machine is not found.
fn bare_path(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in [
        "sh", "sed", "find", "head", "mkdir", "install", "nproc", "cat", "printf", "env",
        "dirname", "objdump", "awk", "grep", "cp", "ldconfig",
    ] {
        let found = ["/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin"]
            .iter()
            .map(|d| Path::new(d).join(tool))
            .find(|p| p.exists());
        if let Some(real) = found {
            std::os::unix::fs::symlink(real, bin.join(tool)).unwrap();
        }
    }
    bin
}

/// A program on this process's PATH.
fn on_path(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not installed"))
}

/// The llama-cpp-sys-2 version Cargo.lock pins: the vendored sources'.
fn vendored_version() -> String {
    let lock =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock")).unwrap();
    lock.split("name = \"llama-cpp-sys-2\"\nversion = \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_string()
}

fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A CMake stand-in: records its arguments; `--build DIR` leaves the library
/// a real build would.
fn fake_cmake(bin: &Path, log: &Path) {
    script(
        &bin.join("cmake"),
        &format!(
            "echo \"$*\" >> {log}\n\
             if [ \"$1\" = --build ]; then mkdir -p \"$2/bin\" && echo lib > \"$2/bin/libggml-cuda.so\"; fi",
            log = log.display()
        ),
    );
}

fn make_gpu(bin: &Path, dir: &Path, extra: &[(&str, String)]) -> Output {
    let mut cmd = std::process::Command::new(on_path("make"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["-s", "gpu"])
        .env_clear()
        .env("PATH", bin)
        .env("HOME", std::env::var("HOME").unwrap_or_default())
        .env("CUDA_PATH", dir.join("no-cuda"))
        .env("GPU_BUILD", dir.join("build"))
        .env("GPU_DEST", dir.join("dest"));
    if let Ok(home) = std::env::var("CARGO_HOME") {
        cmd.env("CARGO_HOME", home);
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.output().expect("make")
}

#[test]
fn without_nvcc_make_gpu_stops_at_once_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let bin = bare_path(dir.path());
    let log = dir.path().join("cmake.log");
    fake_cmake(&bin, &log);
    let out = make_gpu(&bin, dir.path(), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("missing:") && stderr.contains("nvcc (the CUDA toolkit)"),
        "{stderr}"
    );
    assert!(stderr.contains("CUDA_PATH"), "the fix is named: {stderr}");
    assert!(!log.exists(), "CMake ran although nvcc is missing");
    assert!(!dir.path().join("dest").exists());
}

#[test]
fn without_cmake_or_sources_each_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let bin = bare_path(dir.path());
    script(&bin.join("nvcc"), "echo nvcc");
    let out = make_gpu(
        &bin,
        dir.path(),
        &[(
            "LLAMA_SRC",
            dir.path().join("nowhere").display().to_string(),
        )],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("cmake: apt-get install cmake"), "{stderr}");
    assert!(stderr.contains("the llama.cpp sources"), "{stderr}");
    assert!(
        !stderr.contains("nvcc (the CUDA toolkit)"),
        "nvcc was found: {stderr}"
    );
}

#[test]
fn with_the_toolkit_it_builds_the_vendored_ggml_as_a_loadable_cuda_backend() {
    let dir = tempfile::tempdir().unwrap();
    let bin = bare_path(dir.path());
    let log = dir.path().join("cmake.log");
    fake_cmake(&bin, &log);
    script(&bin.join("nvcc"), "echo nvcc");
    let out = make_gpu(&bin, dir.path(), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    let configure = calls.lines().next().unwrap();
    let version = vendored_version();
    assert!(
        configure.contains(&format!("llama-cpp-sys-2-{version}/llama.cpp -B")),
        "not the vendored sources' top level: {configure}"
    );
    for flag in [
        "-DGGML_CUDA=ON",
        "-DGGML_BACKEND_DL=ON",
        "-DBUILD_SHARED_LIBS=ON",
        "-DLLAMA_BUILD_COMMON=OFF",
        "-DLLAMA_BUILD_TOOLS=OFF",
    ] {
        assert!(configure.contains(flag), "{flag} missing: {configure}");
    }
    assert!(
        configure.contains(&format!(
            "-DCMAKE_CUDA_COMPILER={}",
            bin.join("nvcc").display()
        )),
        "{configure}"
    );
    assert!(
        calls.lines().nth(1).unwrap().contains("--target ggml-cuda"),
        "{calls}"
    );
    assert!(dir.path().join("dest/libggml-cuda.so").is_file());
    assert!(stdout.contains("hearth doctor"), "{stdout}");
}

/// NVIDIA's compiler as `make cuda-compiler` lays it out.
fn pypi_cuda() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/cuda-pypi/nvidia/cu13");
    assert!(
        root.join("bin/nvcc").is_file(),
        "no CUDA compiler in {}: run `make cuda-compiler` (make test does)",
        root.display()
    );
    root
}

/// A cuBLAS with no symbols: enough for CMake to make its target.
fn stand_in_cublas(dir: &Path) -> String {
    let c = dir.join("empty.c");
    std::fs::write(&c, "void hearth_stand_in(void) {}\n").unwrap();
    let mut flags = Vec::new();
    for name in ["cublas", "cublasLt"] {
        let lib = dir.join(format!("lib{name}.so"));
        let built = std::process::Command::new("cc")
            .args(["-shared", "-o"])
            .arg(&lib)
            .arg(&c)
            .status()
            .unwrap();
        assert!(built.success());
        flags.push(format!("-DCUDA_{name}_LIBRARY={}", lib.display()));
    }
    flags.join(" ")
}

/// `make gpu-configure` with the real CMake and nvcc.
fn configure(dir: &Path, llama_src: Option<&Path>) -> (bool, String) {
    let mut cmd = std::process::Command::new(on_path("make"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["-s", "gpu-configure"])
        .arg(format!("CUDA_PATH={}", pypi_cuda().display()))
        .arg(format!("GPU_BUILD={}", dir.join("build").display()))
        .arg("CUDA_ARCHS=90")
        .arg(format!("GPU_CMAKE_FLAGS={}", stand_in_cublas(dir)));
    if let Some(src) = llama_src {
        cmd.arg(format!("LLAMA_SRC={}", src.display()));
    }
    let out = cmd.output().expect("make");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn the_configure_step_runs_on_the_vendored_sources_with_nvidias_compiler() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, log) = configure(dir.path(), None);
    assert!(ok, "{log}");
    for step in [
        "The CUDA compiler identification is NVIDIA",
        "Including CUDA backend",
        "Configuring done",
        "Generating done",
    ] {
        assert!(log.contains(step), "no `{step}`:\n{log}");
    }
    assert!(
        dir.path().join("build/build.ninja").is_file()
            || dir.path().join("build/Makefile").is_file()
    );
    // The module's run path starts beside it, where `make gpu` copies the
    // CUDA libraries the loader cannot find.
    // CMake writes the link's libraries and run path into a response file
    // (Makefiles) or the link statement (Ninja).
    let made = dir.path().join("build");
    let link = std::fs::read_to_string(
        made.join("ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/linkLibs.rsp"),
    )
    .or_else(|_| std::fs::read_to_string(made.join("build.ninja")))
    .unwrap();
    assert!(
        link.contains("$ORIGIN"),
        "no $ORIGIN in the module's run path: {link}"
    );
}

/// The control: the way `make gpu` used to configure (ggml on its own, a
/// standalone project) fails on these same sources, so the test above can
/// fail.
#[test]
fn configuring_ggml_alone_fails_on_the_vendored_sources() {
    let dir = tempfile::tempdir().unwrap();
    let version = vendored_version();
    let home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cargo"));
    let ggml = std::fs::read_dir(home.join("registry/src"))
        .unwrap()
        .flatten()
        .map(|d| {
            d.path()
                .join(format!("llama-cpp-sys-2-{version}/llama.cpp/ggml"))
        })
        .find(|p| p.is_dir())
        .expect("the vendored sources");
    // ggml's own folder looks like a llama.cpp tree to the Makefile check
    // only if it has a ggml/ inside: give it its parent's layout by a link.
    let fake_src = dir.path().join("src");
    std::fs::create_dir_all(&fake_src).unwrap();
    std::fs::copy(ggml.join("CMakeLists.txt"), fake_src.join("CMakeLists.txt")).unwrap();
    for entry in std::fs::read_dir(&ggml).unwrap().flatten() {
        if entry.file_name() != "CMakeLists.txt" {
            std::os::unix::fs::symlink(entry.path(), fake_src.join(entry.file_name())).unwrap();
        }
    }
    std::os::unix::fs::symlink(&ggml, fake_src.join("ggml")).unwrap();
    let (ok, log) = configure(dir.path(), Some(&fake_src));
    assert!(!ok, "{log}");
    assert!(log.contains("ggml.pc.in"), "{log}");
}

/// A toolkit off the loader's paths (as `make cuda-toolkit` lays out
/// NVIDIA's from PyPI): the CUDA runtime the module needs is copied beside
/// it, so it loads once the toolkit's folder is gone; a system library it
/// needs (`libm`) is not copied. The stand-in module is linked as CMake
/// links the real one, with `$ORIGIN` first in its run path.
#[test]
fn the_cuda_libraries_the_loader_cannot_find_go_beside_the_module() {
    let dir = tempfile::tempdir().unwrap();
    let (toolkit, lib) = (dir.path().join("toolkit"), dir.path().join("toolkit/lib"));
    std::fs::create_dir_all(toolkit.join("bin")).unwrap();
    std::fs::create_dir_all(&lib).unwrap();
    script(&toolkit.join("bin/nvcc"), "echo nvcc");
    let cc = |args: &[&str]| {
        let built = std::process::Command::new("cc")
            .args(args)
            .status()
            .unwrap();
        assert!(built.success(), "cc {args:?}");
    };
    let runtime = dir.path().join("cudart.c");
    std::fs::write(&runtime, "int cudart_version(void) { return 13; }\n").unwrap();
    let versioned = lib.join("libcudart.so.13.0.96");
    cc(&[
        "-shared",
        "-Wl,-soname,libcudart.so.13",
        "-o",
        versioned.to_str().unwrap(),
        runtime.to_str().unwrap(),
    ]);
    std::os::unix::fs::symlink("libcudart.so.13.0.96", lib.join("libcudart.so.13")).unwrap();
    std::os::unix::fs::symlink("libcudart.so.13", lib.join("libcudart.so")).unwrap();
    let module_c = dir.path().join("module.c");
    std::fs::write(
        &module_c,
        "#include <math.h>\nint cudart_version(void);\ndouble probe(double x) { return sqrt(x) + cudart_version(); }\n",
    )
    .unwrap();
    let module = dir.path().join("libggml-cuda.so");
    cc(&[
        "-shared",
        "-Wl,--no-as-needed",
        "-Wl,-rpath,$ORIGIN",
        "-o",
        module.to_str().unwrap(),
        module_c.to_str().unwrap(),
        &format!("-L{}", lib.display()),
        "-lcudart",
        "-lm",
    ]);
    let bin = bare_path(dir.path());
    let log = dir.path().join("cmake.log");
    script(
        &bin.join("cmake"),
        &format!(
            "echo \"$*\" >> {log}\n\
             if [ \"$1\" = --build ]; then mkdir -p \"$2/bin\" && cat {module} > \"$2/bin/libggml-cuda.so\"; fi",
            log = log.display(),
            module = module.display()
        ),
    );
    let out = make_gpu(
        &bin,
        dir.path(),
        &[("CUDA_PATH", toolkit.display().to_string())],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dest = dir.path().join("dest");
    let copied = dest.join("libcudart.so.13");
    assert!(copied.is_file() && !copied.is_symlink(), "{stdout}");
    assert!(
        stdout.contains("copied libcudart.so.13 beside it"),
        "{stdout}"
    );
    assert!(
        !dest.join("libm.so.6").exists(),
        "a system library was copied"
    );
    // The toolkit gone, the module still finds its runtime: beside it.
    std::fs::remove_dir_all(&toolkit).unwrap();
    let ldd = std::process::Command::new("ldd")
        .arg(dest.join("libggml-cuda.so"))
        .output()
        .unwrap();
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    let line = ldd.lines().find(|l| l.contains("libcudart.so.13")).unwrap();
    assert!(line.contains(&copied.display().to_string()), "{ldd}");
}
