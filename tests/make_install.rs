//! `make install`: the release build, its libraries and the models it uses
//! by default go to `PREFIX/lib/hearth`, linked from `PREFIX/bin/hearth`,
//! and the installed command chats and speaks from anywhere with nothing of
//! the build tree or the checkout; the config beside it is never touched. The control: the binary copied alone, as a
//! user would without the target, cannot start, which is why the libraries
//! travel with it.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::path::Path;
use std::process::Command;

/// `make ARGS`, with the build cargo made for this test (cargo holds the
/// build folder while tests run, so make may not build again), from the
/// profile folder it is in (`make test` builds in its own).
fn make(args: &[&str]) -> std::process::Output {
    let build_dir = Path::new(env!("CARGO_BIN_EXE_hearth")).parent().unwrap();
    Command::new("make")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["-s", "NO_BUILD=1"])
        .arg(format!("BUILD_DIR={}", build_dir.display()))
        .args(args)
        .output()
        .expect("make")
}

/// `hearth ARGS` run from `/` with only the basic environment.
fn run(binary: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    command(binary, home, args, false).output().unwrap()
}

/// `binary ARGS` as [`run`] runs it; with `without_checkout`, in a mount
/// namespace (bubblewrap) where the checkout it was built from is an empty
/// folder, as if it were deleted.
fn command(binary: &Path, home: &Path, args: &[&str], without_checkout: bool) -> Command {
    let mut cmd = if without_checkout {
        let mut c = Command::new("bwrap");
        c.args(["--dev-bind", "/", "/", "--tmpfs"])
            .arg(env!("CARGO_MANIFEST_DIR"))
            .arg("--")
            .arg(binary);
        c
    } else {
        Command::new(binary)
    };
    cmd.current_dir("/")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home)
        .args(args);
    cmd
}

/// [`command`] with `input` on stdin, the checkout hidden.
fn run_without_checkout(
    binary: &Path,
    home: &Path,
    args: &[&str],
    input: &str,
) -> std::process::Output {
    use std::io::Write;
    let mut child = command(binary, home, args, true)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("bubblewrap hides the checkout: apt-get install bubblewrap");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
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

    // Installed means it runs from PREFIX and the data folder alone: the
    // model, the voice, the embedding model and the speech model it uses
    // are the installed copies, and it chats and speaks with the checkout
    // gone (hidden by an empty folder in a mount namespace).
    let installed = prefix.join("lib/hearth/models");
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in [" model ", " voice ", " memory "] {
        let line = report
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{report}"));
        assert!(
            line.contains(&installed.display().to_string())
                && !line.contains(&checkout.join("models").display().to_string()),
            "{line}"
        );
    }
    let chat = run_without_checkout(&link, &home, &["chat"], "Say hello.\n/quit\n");
    assert!(
        chat.status.success() && !chat.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&chat.stderr)
    );
    // The control: in that namespace the checkout's own build is gone.
    let built = run_without_checkout(
        Path::new(env!("CARGO_BIN_EXE_hearth")),
        &home,
        &["--version"],
        "",
    );
    assert!(!built.status.success(), "the checkout was still there");
    let note = home.join("note.ogg");
    let said = run_without_checkout(
        &link,
        &home,
        &["say", "The kettle is on.", "-o", note.to_str().unwrap()],
        "",
    );
    assert!(
        said.status.success() && std::fs::read(&note).unwrap().starts_with(b"OggS"),
        "{}",
        String::from_utf8_lossy(&said.stderr)
    );
    // The control: without the installed model, chat fails, and what it
    // searched names no folder of the checkout.
    let model = installed.join("SmolLM2-135M-Instruct.Q4_1.gguf");
    let kept = dir.path().join("kept.gguf");
    std::fs::rename(&model, &kept).unwrap();
    let chat = run_without_checkout(&link, &home, &["chat"], "Say hello.\n/quit\n");
    let stderr = String::from_utf8_lossy(&chat.stderr);
    assert!(
        !chat.status.success()
            && stderr.contains("not found")
            && !stderr.contains(&checkout.display().to_string()),
        "{stderr}"
    );
    std::fs::rename(&kept, &model).unwrap();

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
