//! llama.cpp's backends loaded at run time: the best CPU code for this
//! machine from the binary's own folder, a GPU module from a configured
//! folder, and never a library planted where hearth happens to be started.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::Sandbox;

/// A shared library named like a CUDA backend module whose constructor
/// writes `marker`: proof that a process loaded it.
fn planted_module(dir: &Path, marker: &Path) -> PathBuf {
    let source = dir.join("planted.c");
    std::fs::write(
        &source,
        format!(
            "#include <stdio.h>\n\
             __attribute__((constructor)) static void planted(void) {{\n\
               FILE *f = fopen(\"{}\", \"w\"); if (f) {{ fputs(\"loaded\", f); fclose(f); }}\n\
             }}\n",
            marker.display()
        ),
    )
    .unwrap();
    let module = dir.join("libggml-cuda.so");
    let status = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&module)
        .arg(&source)
        .status()
        .expect("a C compiler (the llama.cpp build needs one too)");
    assert!(status.success());
    module
}

fn doctor(s: &Sandbox, cwd: &Path, config: &Path) -> (Output, String) {
    let out = s
        .hearth()
        .current_dir(cwd)
        .arg("--config")
        .arg(config)
        .arg("doctor")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, stdout)
}

#[test]
fn a_library_planted_in_the_working_directory_is_never_loaded() {
    common::model(common::SMOLLM2);
    let s = Sandbox::new();
    let planted = s.path("planted");
    std::fs::create_dir_all(&planted).unwrap();
    let marker = s.path("marker");
    planted_module(&planted, &marker);
    let workspace = s.path("workspace");

    // hearth started inside the folder that holds the library.
    let config = s.config(&format!(
        "[agent]\nworkspace = \"{}\"\n",
        workspace.display()
    ));
    let (out, stdout) = doctor(&s, &planted, &config);
    common::assert_no_panic(&String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}");
    assert!(!marker.exists(), "the planted library ran inside hearth");
    assert!(stdout.contains("ok   cpucode "), "{stdout}");

    // Positive control: the same library in a configured backends folder is
    // loaded (and refused as no backend), so the marker does tell.
    let config = s.config(&format!(
        "[agent]\nworkspace = \"{}\"\n[engine]\nbackends_dir = \"{}\"\n",
        workspace.display(),
        planted.display()
    ));
    let (out, stdout) = doctor(&s, s.dir.path(), &config);
    common::assert_no_panic(&String::from_utf8_lossy(&out.stderr));
    assert!(
        marker.exists(),
        "the configured module was not loaded:\n{stdout}"
    );
    assert!(
        stdout.contains("ok   load "),
        "hearth still runs on the CPU:\n{stdout}"
    );
}

#[test]
fn a_backends_folder_inside_the_workspace_is_refused() {
    let s = Sandbox::new();
    let workspace = s.path("workspace");
    let config = s.config(&format!(
        "[agent]\nworkspace = \"{ws}\"\n[engine]\nbackends_dir = \"{ws}/libs\"\n",
        ws = workspace.display()
    ));
    let (out, stdout) = doctor(&s, s.dir.path(), &config);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("engine.backends_dir") && stdout.contains("workspace"),
        "{stdout}"
    );
    // A folder beside the workspace is accepted.
    let config = s.config(&format!(
        "[agent]\nworkspace = \"{}\"\n[engine]\nbackends_dir = \"{}\"\n",
        workspace.display(),
        s.path("backends").display()
    ));
    let out = s
        .hearth()
        .args(["config", "check"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The release folder (binary, llama.cpp's libraries, the CPU modules)
/// copied elsewhere runs there and loads its CPU code from there.
#[cfg(feature = "dynamic-backends")]
#[test]
fn the_binary_folder_runs_where_it_is_copied() {
    common::model(common::SMOLLM2);
    let s = Sandbox::new();
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_hearth"));
    let from = exe.parent().unwrap();
    let to = s.path("hearth-release");
    std::fs::create_dir_all(&to).unwrap();
    let mut modules = 0;
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let wanted = name == "hearth" || (name.starts_with("lib") && name.contains(".so"));
        if wanted && entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
            modules += usize::from(name.starts_with("libggml-cpu-"));
        }
    }
    assert!(modules >= 2, "no CPU variants beside {}", exe.display());
    let mut cmd = std::process::Command::new(to.join("hearth"));
    cmd.env("HOME", s.dir.path())
        .env("HEARTH_DATA_DIR", s.path("data"))
        .env_remove("LD_LIBRARY_PATH")
        .arg("--config")
        .arg(s.config(&format!(
            "[model]\npath = \"{}\"\n",
            common::model(common::SMOLLM2).display()
        )))
        .arg("doctor");
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let backend = stdout
        .lines()
        .find(|l| l.starts_with("ok   backend"))
        .unwrap_or_default();
    assert!(
        backend.contains(&to.display().to_string()),
        "not loaded from the copy: {backend}"
    );
    assert!(stdout.contains("ok   cpucode libggml-cpu-"), "{stdout}");
}
