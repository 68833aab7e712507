//! The device tests again on a real Vulkan device: Mesa's lavapipe, which
//! runs Vulkan on the CPU, through llama.cpp's Vulkan backend as `make
//! vulkan` builds it. ggml lists a CPU-type Vulkan device only when asked
//! (`GGML_VK_VISIBLE_DEVICES`), which these tests do; without it, hearth
//! says the backend found no GPU and runs on the CPU (the positive control).
//!
//! lavapipe is slow (well under a token per second on 2 cores, most of it
//! compiling ggml's shaders on first use), so replies here are short.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;

use std::path::{Path, PathBuf};

use common::Sandbox;

fn vulkan_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/vulkan");
    assert!(
        dir.join("libggml-vulkan.so").is_file(),
        "no Vulkan backend: run `make vulkan` (make test does)"
    );
    dir
}

/// A config for SmolLM2 with the Vulkan backend, written to `name`.
fn config(s: &Sandbox, name: &str, model_extra: &str, engine_extra: &str) -> PathBuf {
    let path = s.path(name);
    std::fs::write(
        &path,
        format!(
            "[model]\npath = \"{}\"\ncontext_size = 512\n{model_extra}\n\
             [generation]\ntemperature = 0.0\nmax_tokens = 16\n\
             [engine]\nslots = 2\nspeculative = \"off\"\nbackends_dir = \"{}\"\n{engine_extra}\n",
            common::model(common::SMOLLM2).display(),
            vulkan_dir().display(),
        ),
    )
    .unwrap();
    path
}

/// Mesa keeps the shaders it compiled for lavapipe under the home folder,
/// which is the sandbox's and empty: one folder for every lavapipe process
/// of the run saves compiling them again in each (Gemma's first reply took
/// 207 s on the 2-core VM with none cached, 36 s with them).
fn shader_cache() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mesa-shader-cache")
}

/// `hearth` with lavapipe listed (`visible`) or not.
fn run(s: &Sandbox, config: &Path, visible: bool, args: &[&str]) -> (bool, String, String) {
    let mut cmd = s.hearth();
    // lavapipe compiles a model's shaders on first use: minutes on a busy
    // 2-core machine.
    cmd.timeout(std::time::Duration::from_secs(900))
        .env("RUST_LOG", "warn,hearth::cli::ask=info")
        .env("VK_ICD_FILENAMES", lavapipe_icd())
        .env("MESA_SHADER_CACHE_DIR", shader_cache());
    if visible {
        cmd.env("GGML_VK_VISIBLE_DEVICES", "0");
    } else {
        cmd.env_remove("GGML_VK_VISIBLE_DEVICES");
    }
    let out = cmd.arg("--config").arg(config).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    common::assert_no_panic(&stderr);
    (out.status.success(), stdout, stderr)
}

/// Mesa's lavapipe driver manifest, so device 0 is lavapipe on any machine.
fn lavapipe_icd() -> String {
    let found = std::fs::read_dir("/usr/share/vulkan/icd.d")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("lvp_icd")
        });
    found
        .expect("no lavapipe: apt-get install mesa-vulkan-drivers (make vulkan does)")
        .display()
        .to_string()
}

#[test]
fn doctor_names_lavapipe_and_offloads_every_layer_and_says_why_not_without_it() {
    let _engine = common::engine_lock();
    let s = Sandbox::new();
    let config = config(&s, "vk.toml", "", "");
    let (_, out, err) = run(&s, &config, true, &["doctor"]);
    let gpu = out
        .lines()
        .find(|l| l.contains("gpu ") && l.contains("Vulkan0"))
        .unwrap_or_else(|| panic!("{out}\n{err}"));
    assert!(
        gpu.starts_with("ok") && gpu.contains("llvmpipe") && gpu.contains("MiB free of"),
        "{gpu}"
    );
    assert_eq!(common::offloaded(&out), (31, 31), "{out}");
    // Each backend is named with the folder it came from: Vulkan from
    // `backends_dir`, the CPU's from the build.
    let backend = out
        .lines()
        .find(|l| l.starts_with("ok   backend"))
        .unwrap_or_default();
    let vulkan = format!("Vulkan from {}", vulkan_dir().display());
    assert!(
        backend.contains(&vulkan)
            && backend.contains("CPU from ")
            && !backend.contains("CPU, Vulkan"),
        "{backend}"
    );
    // Positive control: the same backend with no GPU it will use says so.
    let (_, out, _) = run(&s, &config, false, &["doctor"]);
    assert!(
        out.contains("the Vulkan backend is installed") && out.contains("found no GPU"),
        "{out}"
    );
    assert_eq!(common::offloaded(&out), (0, 31), "{out}");
}

#[test]
fn on_lavapipe_greedy_replies_match_the_cpu_and_a_cap_offloads_part() {
    let _engine = common::engine_lock();
    let s = Sandbox::new();
    let question = ["ask", "What is the capital of France?"];
    let (ok, on_device, err) = run(&s, &config(&s, "vk.toml", "", ""), true, &question);
    assert!(ok && !on_device.trim().is_empty(), "{on_device}\n{err}");
    let (ok, on_cpu, err) = run(
        &s,
        &config(&s, "cpu.toml", "gpu_layers = 0", ""),
        true,
        &question,
    );
    assert!(ok, "{err}");
    eprintln!("lavapipe: {on_device}\nCPU: {on_cpu}");
    assert!(
        common::shared(&on_device, &on_cpu) >= 20,
        "{on_device}\n---\n{on_cpu}"
    );

    // lavapipe reports 2 GiB; with 810 MiB planned for (768 of them the
    // margin, about 23 for the KV cache of 2 × 512 tokens), part of the model.
    let capped = config(&s, "capped.toml", "", "gpu_memory_mb = 810");
    let (_, out, _) = run(&s, &capped, true, &["doctor"]);
    let (n, total) = common::offloaded(&out);
    assert!(
        n > 0 && n < total,
        "part of the model: {n} of {total}\n{out}"
    );
    let (ok, reply, err) = run(&s, &capped, true, &question);
    assert!(ok && !reply.trim().is_empty(), "{reply}\n{err}");
}

#[test]
fn on_lavapipe_the_cache_resumes_after_a_restart_and_batches_match() {
    let _engine = common::engine_lock();
    let s = Sandbox::new();
    let config = config(&s, "vk.toml", "", "");
    let (ok, _, err) = run(
        &s,
        &config,
        true,
        &["ask", "--session", "t", "My name is Ada."],
    );
    assert!(ok, "{err}");
    let (ok, _, err) = run(
        &s,
        &config,
        true,
        &["ask", "--session", "t", "What is my name?"],
    );
    assert!(ok, "{err}");
    common::assert_resumed(&err);

    let json = s.path("parallel.json");
    let (ok, out, err) = run(
        &s,
        &config,
        true,
        &[
            "bench",
            "--parallel",
            "2",
            "--rounds",
            "1",
            "--reply-tokens",
            "16",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(ok, "{out}\n{err}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let common: Vec<u64> = report["rounds"][0]["common_prefix_chars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    eprintln!(
        "batched against one at a time on lavapipe: {} of 2 identical, {common:?}",
        report["identical_replies"]
    );
    assert!(common.iter().all(|&n| n >= 20), "{report}");
}

/// `hearth` on lavapipe with `limit_kb` of address space: lavapipe's
/// "device memory" is this process's, so the limit is the device's.
fn run_limited(s: &Sandbox, config: &Path, limit_kb: u32, args: &[&str]) -> (bool, String) {
    let base = s.hearth_process();
    let mut cmd = std::process::Command::new("bash");
    cmd.arg("-c")
        .arg(format!("ulimit -v {limit_kb}; exec \"$0\" \"$@\""))
        .arg(base.get_program());
    for (key, value) in base.get_envs() {
        match value {
            Some(v) => cmd.env(key, v),
            None => cmd.env_remove(key),
        };
    }
    let out = cmd
        .env("RUST_LOG", "warn")
        .env("GGML_VK_VISIBLE_DEVICES", "0")
        .env("VK_ICD_FILENAMES", lavapipe_icd())
        .env("MESA_SHADER_CACHE_DIR", shader_cache())
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    common::assert_no_panic(&stderr);
    (out.status.success(), stderr)
}

#[test]
fn on_lavapipe_a_cache_the_device_cannot_hold_is_a_clear_error_not_an_abort() {
    let _engine = common::engine_lock();
    let s = Sandbox::new();
    // 16 × 8,192 tokens of KV cache (about 3 GiB) with every layer forced
    // onto a device limited to 2.5 GB.
    let forced = |slots: u32| {
        let path = s.path(&format!("big-{slots}.toml"));
        std::fs::write(
            &path,
            format!(
                "[model]\npath = \"{}\"\ngpu_layers = 99\ncontext_size = 8192\n\
                 [generation]\ntemperature = 0.0\nmax_tokens = 8\n\
                 [engine]\nslots = {slots}\nspeculative = \"off\"\nbackends_dir = \"{}\"\n",
                common::model(common::SMOLLM2).display(),
                vulkan_dir().display(),
            ),
        )
        .unwrap();
        path
    };
    let (ok, err) = run_limited(&s, &forced(16), 2_500_000, &["ask", "Say hello."]);
    assert!(!ok, "{err}");
    assert!(
        err.contains("on the GPU") && err.contains("fix:") && err.contains("gpu_layers"),
        "{err}"
    );
    assert!(
        !err.contains("ggml_abort") && !err.contains("backtrace"),
        "{err}"
    );
    // Positive control: the same limit with a cache that fits answers.
    let (ok, err) = run_limited(&s, &forced(2), 2_500_000, &["ask", "Say hello."]);
    assert!(ok, "{err}");
}

#[test]
fn on_lavapipe_gemma_answers_like_the_cpu_and_resumes_after_a_restart() {
    let _engine = common::engine_lock();
    let s = Sandbox::new();
    let path = s.path("gemma.toml");
    std::fs::write(
        &path,
        format!(
            "[model]\npath = \"{}\"\nchat_template = \"gemma\"\ncontext_size = 512\n\
             [generation]\ntemperature = 0.0\nmax_tokens = 16\n\
             [engine]\nslots = 1\nspeculative = \"off\"\nbackends_dir = \"{}\"\n",
            common::model(common::GEMMA3).display(),
            vulkan_dir().display(),
        ),
    )
    .unwrap();
    let (_, out, err) = run(&s, &path, true, &["doctor"]);
    let (n, total) = common::offloaded(&out);
    assert!(
        n == total && n > 0,
        "every layer: {n} of {total}\n{out}\n{err}"
    );

    let question = "Name three colours of the rainbow.";
    let (ok, on_device, err) = run(&s, &path, true, &["ask", "--session", "g", question]);
    assert!(ok && !on_device.trim().is_empty(), "{on_device}\n{err}");
    // Positive control and reference: the same without lavapipe listed
    // runs on the CPU.
    let (ok, on_cpu, err) = run(&s, &path, false, &["ask", "--session", "c", question]);
    assert!(ok, "{err}");
    let shared = common::shared(&on_device, &on_cpu);
    eprintln!("gemma, lavapipe against CPU: {shared} characters equal\n{on_device}\n---\n{on_cpu}");
    assert!(shared >= 20, "{on_device}\n---\n{on_cpu}");

    // A new process: the conversation's cache comes back onto the device.
    let (ok, _, err) = run(&s, &path, true, &["ask", "--session", "g", "And two more?"]);
    assert!(ok, "{err}");
    common::assert_resumed(&err);
}
