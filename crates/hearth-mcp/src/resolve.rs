//! A stdio server's command as the sandbox must show it.
//!
//! MCP servers are installed where their people install them: in a
//! virtual environment whose `python` links into `~/.pyenv/versions/…` or
//! `~/.local/share/uv/python/…`, as a console script whose shebang names
//! that `python`, under nvm's `~/.nvm/versions/node/…`. Inside the sandbox
//! only the system folders and the server's `reads` are visible, so such a
//! server could not even start, and the error said nothing of why. Here the
//! command is found on `PATH`, followed through its links, its shebang
//! (`#!/usr/bin/env node` included) and a virtual environment's `home`,
//! and the install folder of each (the prefix above its `bin`) is shown
//! read-only. A command that is not there is said so by its path.

use std::path::{Path, PathBuf};

/// Folders every sandbox shows already.
const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];
/// Links and shebangs followed at most, so a loop ends.
const MOST_HOPS: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The program to run: the command as found, not its link's target (a
    /// virtual environment's `python` knows its packages by its own path).
    pub program: PathBuf,
    /// Install folders to show read-only, beyond the system's.
    pub reads: Vec<PathBuf>,
}

/// Finds `command` (on `path_var` when it names no folder) and what it
/// needs to run. `home` is the user's home folder, which is never shown
/// whole. The error is the sentence to show.
pub fn resolve(
    command: &str,
    path_var: Option<&str>,
    home: Option<&Path>,
) -> Result<Resolved, String> {
    let program = find(command, path_var)?;
    let mut reads = Vec::new();
    let mut queue = vec![program.clone()];
    let mut hops = 0;
    while let Some(file) = queue.pop() {
        hops += 1;
        if hops > MOST_HOPS {
            break;
        }
        show(&mut reads, install_root(&file, home));
        let real = std::fs::canonicalize(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        if real != file {
            show(&mut reads, install_root(&real, home));
        }
        if let Some(venv_home) = venv_home(&file) {
            show(&mut reads, install_root(&venv_home.join("python"), home));
        }
        if let Some(interpreter) = shebang(&real, path_var) {
            queue.push(interpreter);
        }
    }
    Ok(Resolved { program, reads })
}

/// `command` itself when it names a folder, else the first executable of
/// that name on `path_var`.
fn find(command: &str, path_var: Option<&str>) -> Result<PathBuf, String> {
    if command.contains('/') {
        let path = PathBuf::from(command);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("no such file: {command}"))
        };
    }
    let dirs = path_var.unwrap_or("/usr/local/bin:/usr/bin:/bin");
    std::env::split_paths(dirs)
        .map(|d| d.join(command))
        .find(|p| p.is_absolute() && is_executable(p))
        .ok_or_else(|| format!("no such file: `{command}` is not on PATH ({dirs})"))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The folder a program was installed into: the prefix above its `bin`
/// when that prefix is an install (it has a `lib`), else its own folder.
/// Never the home folder, `~/.local` (which holds other programs' data) or
/// `/`: then the program's own folder.
fn install_root(file: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let dir = file.parent()?;
    let prefix = dir
        .parent()
        .filter(|p| dir.file_name().is_some_and(|n| n == "bin") && p.join("lib").is_dir());
    let too_wide = |p: &Path| {
        p.parent().is_none() || home.is_some_and(|h| h.starts_with(p) || p == h.join(".local"))
    };
    match prefix {
        Some(p) if !too_wide(p) => Some(p.to_path_buf()),
        _ if too_wide(dir) => None,
        _ => Some(dir.to_path_buf()),
    }
}

/// Adds `dir` unless the system shows it or it is inside one already shown.
fn show(reads: &mut Vec<PathBuf>, dir: Option<PathBuf>) {
    let Some(dir) = dir else {
        return;
    };
    if SYSTEM.iter().any(|s| dir.starts_with(s)) || reads.iter().any(|r| dir.starts_with(r)) {
        return;
    }
    reads.retain(|r| !r.starts_with(&dir));
    reads.push(dir);
}

/// A virtual environment's `home` (its base Python's folder), for a
/// program in its `bin`.
fn venv_home(file: &Path) -> Option<PathBuf> {
    let cfg = std::fs::read_to_string(file.parent()?.parent()?.join("pyvenv.cfg")).ok()?;
    cfg.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "home").then(|| PathBuf::from(value.trim()))
    })
}

/// The interpreter a script's `#!` line names (through `env`, on PATH).
fn shebang(file: &Path, path_var: Option<&str>) -> Option<PathBuf> {
    use std::io::Read as _;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(file).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = String::from_utf8_lossy(line.split(|&b| b == b'\n').next()?).into_owned();
    let mut words = line.split_whitespace();
    let interpreter = words.next()?;
    if Path::new(interpreter)
        .file_name()
        .is_some_and(|n| n == "env")
    {
        let name = words.find(|w| !w.starts_with('-'))?;
        return find(name, path_var).ok();
    }
    Some(PathBuf::from(interpreter))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn executable(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A pyenv Python, a venv made from it and a console script in the venv,
    /// as `pip install` writes one; nvm's node run through `env`.
    #[test]
    fn a_venv_script_shows_the_venv_and_its_base_python_and_nothing_wider() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home/ada");
        let base = home.join(".pyenv/versions/3.12.1");
        executable(&base.join("bin/python3.12"), "ELF");
        std::fs::create_dir_all(base.join("lib/python3.12")).unwrap();
        let venv = home.join("servers/venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::create_dir_all(venv.join("lib")).unwrap();
        std::os::unix::fs::symlink(base.join("bin/python3.12"), venv.join("bin/python")).unwrap();
        std::fs::write(
            venv.join("pyvenv.cfg"),
            format!(
                "home = {}\ninclude-system-site-packages = false\n",
                base.join("bin").display()
            ),
        )
        .unwrap();
        let script = venv.join("bin/weather-server");
        executable(
            &script,
            &format!("#!{}\nimport weather\n", venv.join("bin/python").display()),
        );
        let path_var = format!("{}:/usr/bin", venv.join("bin").display());
        let found = resolve("weather-server", Some(&path_var), Some(&home)).unwrap();
        assert_eq!(found.program, script);
        assert_eq!(found.reads, vec![venv.clone(), base.clone()]);
        assert!(
            !found
                .reads
                .iter()
                .any(|r| home.starts_with(r) || *r == home.join(".local"))
        );

        let node = home.join(".nvm/versions/node/v22.1.0");
        executable(&node.join("bin/node"), "ELF");
        std::fs::create_dir_all(node.join("lib/node_modules")).unwrap();
        let cli = home.join(".local/bin/mcp-everything");
        executable(&cli, "#!/usr/bin/env node\nrequire('x')\n");
        let path_var = format!(
            "{}:{}",
            home.join(".local/bin").display(),
            node.join("bin").display()
        );
        let found = resolve("mcp-everything", Some(&path_var), Some(&home)).unwrap();
        assert_eq!(
            found.reads,
            vec![home.join(".local/bin"), node],
            "never all of ~/.local"
        );
    }

    #[test]
    fn a_command_that_is_not_there_is_named() {
        let e = resolve("no-such-server-7f2", Some("/usr/bin:/bin"), None).unwrap_err();
        assert!(
            e.starts_with("no such file") && e.contains("no-such-server-7f2"),
            "{e}"
        );
        let e = resolve("/opt/gone/bin/server", None, None).unwrap_err();
        assert_eq!(e, "no such file: /opt/gone/bin/server");
        // Control: a system program needs nothing more shown.
        let sh = resolve("sh", Some("/usr/bin:/bin"), None).unwrap();
        assert!(sh.reads.is_empty(), "{:?}", sh.reads);
    }
}
