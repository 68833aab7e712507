//! `make install`: the release build and its libraries go to
//! `PREFIX/lib/hearth`, linked from `PREFIX/bin/hearth`, and the installed
//! command runs from anywhere with nothing of the build tree; the config
//! beside it is never touched. The control: the binary copied alone, as a
//! user would without the target, cannot start, which is why the libraries
//! travel with it.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::path::Path;
use std::process::Command;

/// `make ARGS`, with the build cargo made for this test (cargo holds the
/// build folder while tests run, so make may not build again).
fn make(args: &[&str]) -> std::process::Output {
    Command::new("make")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["-s", "NO_BUILD=1"])
        .args(args)
        .output()
        .expect("make")
}

/// `hearth ARGS` run from `/` with only the basic environment.
fn run(binary: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    Command::new(binary)
        .current_dir("/")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn make_install_puts_a_runnable_hearth_under_prefix_and_keeps_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    let home = dir.path().join("home");
    let config = home.join(".config/hearth/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let text = "# mine\n[generation]\ntemperature = 0.3\n";
    std::fs::write(&config, text).unwrap();

    let out = make(&["install", &format!("PREFIX={}", prefix.display())]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let link = prefix.join("bin/hearth");
    assert!(link.is_symlink(), "{said}");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        prefix.join("lib/hearth/hearth")
    );
    // Twice: an upgrade in place works the same.
    assert!(
        make(&["install", &format!("PREFIX={}", prefix.display())])
            .status
            .success()
    );
    let version = run(&link, &home, &["--version"]);
    assert!(
        version.status.success(),
        "{}",
        String::from_utf8_lossy(&version.stderr)
    );
    let checked = run(&link, &home, &["config", "check"]);
    let stdout = String::from_utf8_lossy(&checked.stdout);
    assert!(
        checked.status.success() && stdout.contains("temperature = 0.3"),
        "{stdout}{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), text);
    // ONNX Runtime for spoken replies (fetched by `make test-speech`) is
    // installed beside the binary, and the installed binary uses that copy.
    let runtime = prefix.join("lib/hearth/onnxruntime/libonnxruntime.so.1.22.1");
    assert!(runtime.is_file(), "{said}");
    let doctor = run(&link, &home, &["doctor"]);
    let report = String::from_utf8_lossy(&doctor.stdout);
    let voice = report
        .lines()
        .find(|l| l.contains(" voice "))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(voice.contains(&runtime.display().to_string()), "{voice}");

    // The control: the binary alone.
    let alone = dir.path().join("alone");
    std::fs::create_dir_all(&alone).unwrap();
    std::fs::copy(prefix.join("lib/hearth/hearth"), alone.join("hearth")).unwrap();
    let out = run(&alone.join("hearth"), &home, &["--version"]);
    assert!(!out.status.success(), "a lone binary started");

    let out = make(&["uninstall", &format!("PREFIX={}", prefix.display())]);
    assert!(out.status.success());
    assert!(!link.exists() && !prefix.join("lib/hearth").exists());
    assert_eq!(std::fs::read_to_string(&config).unwrap(), text);
}
