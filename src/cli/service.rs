//! `hearth service install`: a systemd user unit that runs `hearth daemon`
//! at boot and restarts it after a failure.
//!
//! No secret sits in the unit: hearth reads its tokens from
//! `~/.config/hearth/secrets.env` itself (see `config::secrets`), the same
//! file `hearth ask` in a shell reads. The unit still reads the
//! `telegram.env` that older installs wrote.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::Context;

use crate::config::Environment;

/// The unit's file name.
pub const UNIT_NAME: &str = "hearth.service";

/// The unit text for `exe`, with `--config` when one was given.
pub fn unit(exe: &Path, config: Option<&Path>) -> String {
    let mut exec = format!("{} daemon", quote(exe));
    if let Some(c) = config {
        exec.push_str(&format!(" --config {}", quote(c)));
    }
    format!(
        "[Unit]
Description=hearth local AI assistant
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
ExecStart={exec}
# Secrets: hearth reads ~/.config/hearth/secrets.env itself (NAME=value
# lines, chmod 600). telegram.env is what older installs wrote; the leading
# '-' makes it optional.
EnvironmentFile=-%h/.config/hearth/telegram.env
Restart=on-failure
RestartSec=5

[Install]
WantedBy=default.target
"
    )
}

fn quote(path: &Path) -> String {
    let p = path.display().to_string();
    if p.contains(char::is_whitespace) || p.contains('"') {
        format!("\"{}\"", p.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        p
    }
}

/// Where systemd looks for user units.
pub fn unit_dir(env: &Environment) -> Option<PathBuf> {
    env.var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| env.home().map(|h| h.join(".config")))
        .map(|c| c.join("systemd").join("user"))
}

/// Writes the unit; returns its path.
pub fn write_unit(env: &Environment, text: &str) -> anyhow::Result<PathBuf> {
    let dir = unit_dir(env).context("no home directory: cannot place a systemd user unit")?;
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(UNIT_NAME);
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

pub fn install(
    env: &Environment,
    config: Option<&Path>,
    print: bool,
    enable: bool,
) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot tell where the hearth binary is")?;
    let config = match config {
        Some(c) => Some(
            c.canonicalize()
                .with_context(|| format!("config {} not found", c.display()))?,
        ),
        None => None,
    };
    let text = unit(&exe, config.as_deref());
    if print {
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let path = write_unit(env, &text)?;
    println!("wrote {}", path.display());
    match env.secrets_path() {
        Some(secrets) if !secrets.exists() => println!(
            "its tokens go in {} (NAME=value lines, chmod 600), read at start",
            secrets.display()
        ),
        _ => {}
    }
    if !enable {
        println!(
            "enable it with: systemctl --user daemon-reload && systemctl --user enable --now hearth"
        );
        return Ok(ExitCode::SUCCESS);
    }
    for args in [
        &["--user", "daemon-reload"][..],
        &["--user", "enable", "--now", UNIT_NAME],
    ] {
        let ok = Command::new("systemctl")
            .args(args)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            eprintln!(
                "`systemctl {}` failed; the unit is written, enable it by hand:\n  systemctl --user daemon-reload && systemctl --user enable --now hearth",
                args.join(" ")
            );
            return Ok(ExitCode::FAILURE);
        }
    }
    println!(
        "hearth runs now and at login; `loginctl enable-linger $USER` keeps it running when you are logged out.\nIts log: journalctl --user -u hearth -f"
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_runs_the_daemon_with_the_given_config() {
        let u = unit(
            Path::new("/opt/my apps/hearth"),
            Some(Path::new("/etc/h.toml")),
        );
        assert!(
            u.contains("ExecStart=\"/opt/my apps/hearth\" daemon --config /etc/h.toml\n"),
            "{u}"
        );
        assert!(u.contains("Restart=on-failure"));
        assert!(u.contains("WantedBy=default.target"));
    }

    #[test]
    fn the_unit_goes_under_the_user_config_dir() {
        let dir = tempfile::tempdir().unwrap();
        let env = Environment::with_home(dir.path());
        let path = write_unit(&env, "x").unwrap();
        assert_eq!(path, dir.path().join(".config/systemd/user/hearth.service"));
        let env = Environment::with_home("/nowhere").set("XDG_CONFIG_HOME", "/x");
        assert_eq!(unit_dir(&env).unwrap(), Path::new("/x/systemd/user"));
    }
}
