//! What a launcher command downloads before it runs: `npx -y PACKAGE` and
//! `uvx PACKAGE` (or `uv tool run PACKAGE`), read as npm and uv read them,
//! and the command that fetches the same packages without running the
//! server ([`Fetch::args`]).

use std::path::Path;

/// The package manager behind a launcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    Npm,
    Uv,
}

impl Manager {
    /// Its name, as errors say it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Npm => "npm",
            Self::Uv => "uv",
        }
    }

    /// Its settings for the server's own run: from the cache only.
    pub fn offline(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Npm => &[
                ("npm_config_offline", "true"),
                ("npm_config_update_notifier", "false"),
            ],
            Self::Uv => &[("UV_OFFLINE", "1"), ("UV_NO_PROGRESS", "1")],
        }
    }

    /// Its settings for the fetch: uv trusts the system's certificates, as
    /// npm and pip do (its own list lacks a site's or proxy's own CA).
    pub fn fetching(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Npm => &[],
            Self::Uv => &[("UV_NATIVE_TLS", "1")],
        }
    }

    /// Its error lines in what it said (`npm error …`, uv's `error: …`
    /// and the `cause: …` under it).
    pub fn error_lines(self, said: &str) -> Vec<String> {
        said.lines()
            .filter_map(|l| match self {
                Self::Npm => l.strip_prefix("npm error "),
                Self::Uv => l
                    .strip_prefix("error: ")
                    .or_else(|| l.trim_start().strip_prefix("cause: ")),
            })
            .filter(|l| l.trim().len() > 3 && !l.contains("complete log"))
            .take(2)
            .map(str::to_string)
            .collect()
    }
}

/// A launcher's download, made a step of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetch {
    pub manager: Manager,
    /// The packages it names, for messages.
    pub packages: Vec<String>,
    /// The same program's arguments that fetch them and run nothing.
    pub args: Vec<String>,
}

/// The download `program args` makes before its server runs, when it is
/// `npx`, `uvx` or `uv tool run`.
pub fn fetch(program: &Path, args: &[String]) -> Option<Fetch> {
    match program.file_name()?.to_str()? {
        "npx" => npx(args),
        "uvx" => uvx(&[], args),
        "uv" if args.len() > 2 && args[..2] == ["tool", "run"] => uvx(&args[..2], &args[2..]),
        _ => None,
    }
}

/// npx's packages: those of `--package`/`-p`, else its first word that is
/// not an option; fetched by `npx --yes --package=P… --call true`.
fn npx(args: &[String]) -> Option<Fetch> {
    let mut packages = Vec::new();
    let mut first = None;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word == "--" {
            first = words.next();
            break;
        } else if word == "-p" || word == "--package" {
            packages.extend(words.next().cloned());
        } else if let Some(p) = word.strip_prefix("--package=") {
            packages.push(p.to_string());
        } else if word == "-c" || word == "--call" {
            words.next();
        } else if !word.starts_with('-') {
            first = Some(word);
            break;
        }
    }
    if packages.is_empty() {
        packages.push(first?.clone());
    }
    let mut fetch = vec!["--yes".to_string()];
    fetch.extend(packages.iter().map(|p| format!("--package={p}")));
    fetch.extend(["--call".to_string(), "true".to_string()]);
    Some(Fetch {
        manager: Manager::Npm,
        packages,
        args: fetch,
    })
}

/// uv's options that take a value in the next word.
const UV_VALUED: &[&str] = &[
    "--from",
    "--with",
    "-w",
    "--with-editable",
    "--with-requirements",
    "--python",
    "-p",
    "--index",
    "--default-index",
    "--index-url",
    "-i",
    "--extra-index-url",
    "--find-links",
    "-f",
    "--constraints",
    "--constraint",
    "-c",
    "--overrides",
    "--override",
    "--build-constraints",
    "--build-constraint",
    "--env-file",
    "--cache-dir",
    "--directory",
    "--project",
    "--config-file",
    "--index-strategy",
    "--keyring-provider",
    "--resolution",
    "--prerelease",
    "--exclude-newer",
    "--exclude-newer-package",
    "--link-mode",
    "--refresh-package",
    "--reinstall-package",
    "--upgrade-package",
    "-P",
    "--no-binary-package",
    "--no-build-package",
    "--config-setting",
    "-C",
    "--color",
    "--python-preference",
    "--allow-insecure-host",
    "--torch-backend",
];

/// uvx's packages: `--from` (else the command) and each `--with`; fetched
/// by the same options with the tool environment's `python -c ""` as the
/// command, so the server itself never runs.
fn uvx(prefix: &[String], args: &[String]) -> Option<Fetch> {
    let mut options = Vec::new();
    let (mut from, mut with) = (None, Vec::new());
    let mut command = None;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word == "--" {
            command = words.next();
            break;
        }
        if !word.starts_with('-') {
            command = Some(word);
            break;
        }
        options.push(word.clone());
        let (name, value) = match word.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None if UV_VALUED.contains(&word.as_str()) => {
                let value = words.next()?.clone();
                options.push(value.clone());
                (word.as_str(), Some(value))
            }
            None => (word.as_str(), None),
        };
        match (name, value) {
            ("--from", Some(v)) => from = Some(v),
            ("--with" | "-w", Some(v)) => with.push(v),
            _ => {}
        }
    }
    let command = command?;
    let mut fetch = prefix.to_vec();
    fetch.extend(options);
    if from.is_none() {
        fetch.extend(["--from".to_string(), command.clone()]);
    }
    fetch.extend(["python".to_string(), "-c".to_string(), String::new()]);
    let mut packages = vec![from.unwrap_or_else(|| command.clone())];
    packages.extend(with);
    Some(Fetch {
        manager: Manager::Uv,
        packages,
        args: fetch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    fn packages(program: &str, args: &str) -> Option<Vec<String>> {
        fetch(Path::new(program), &words(args)).map(|f| f.packages)
    }

    #[test]
    fn the_packages_npx_would_run_are_read_as_npm_reads_them() {
        let cases = [
            (
                "-y @modelcontextprotocol/server-filesystem /home/ada",
                vec!["@modelcontextprotocol/server-filesystem"],
            ),
            (
                "--yes -q mcp-weather@1.2.0 --port 3",
                vec!["mcp-weather@1.2.0"],
            ),
            ("-p a -p b@2 serve --x", vec!["a", "b@2"]),
            ("--package=a -y serve", vec!["a"]),
            ("-y -- pkg -y", vec!["pkg"]),
        ];
        for (args, expected) in cases {
            assert_eq!(
                packages("/usr/bin/npx", args),
                Some(expected.into_iter().map(String::from).collect()),
                "{args}"
            );
        }
        assert_eq!(packages("/usr/bin/npx", "-y"), None);
        assert_eq!(packages("/usr/bin/node", "server.js"), None);
        let npx = fetch(Path::new("npx"), &words("-y a@1 --port 3")).unwrap();
        assert_eq!(npx.args, words("--yes --package=a@1 --call true"));
    }

    #[test]
    fn the_packages_uvx_would_run_are_read_as_uv_reads_them() {
        let cases = [
            ("mcp-server-time", vec!["mcp-server-time"]),
            (
                "mcp-server-time==2026.10.19 --local-timezone UTC",
                vec!["mcp-server-time==2026.10.19"],
            ),
            (
                "--python 3.12 --with httpx --from git+https://x/y.git serve --port 3",
                vec!["git+https://x/y.git", "httpx"],
            ),
            ("--from=a@1 -w b a-cli", vec!["a@1", "b"]),
            ("-q --offline -- mcp-server-fetch", vec!["mcp-server-fetch"]),
        ];
        for (args, expected) in cases {
            assert_eq!(
                packages("/home/ada/.local/bin/uvx", args),
                Some(expected.into_iter().map(String::from).collect()),
                "{args}"
            );
        }
        assert_eq!(
            packages("/usr/bin/uv", "tool run mcp-server-time"),
            Some(vec!["mcp-server-time".to_string()])
        );
        assert_eq!(packages("/usr/bin/uv", "run server.py"), None);
        assert_eq!(packages("uvx", "--python"), None);
        assert_eq!(packages("uvx", "--isolated"), None);
        // The fetch runs the tool environment's Python, never the server.
        let uvx = fetch(Path::new("uvx"), &words("--python 3.12 a@1 --port 3")).unwrap();
        assert_eq!(uvx.args[..4], words("--python 3.12 --from a@1"));
        assert_eq!(uvx.args[4..], ["python", "-c", ""]);
        let uv = fetch(Path::new("uv"), &words("tool run --from a b")).unwrap();
        assert_eq!(uv.args[..4], words("tool run --from a"));
        assert_eq!(uv.args[4..], ["python", "-c", ""]);
    }

    #[test]
    fn each_manager_s_reason_is_its_error_lines() {
        let npm = "npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/x\nnpm error 404\nnpm error A complete log of this run can be found in: /x.log\n";
        assert_eq!(
            Manager::Npm.error_lines(npm),
            [
                "code E404",
                "404 Not Found - GET https://registry.npmjs.org/x"
            ]
        );
        let uv = "error: No solution found when resolving tool dependencies\n  cause: Because x was not found in the package registry and you require x, we can conclude that your requirements are unsatisfiable.\n";
        let lines = Manager::Uv.error_lines(uv);
        assert_eq!(
            lines[0],
            "No solution found when resolving tool dependencies"
        );
        assert!(lines[1].starts_with("Because x was not found in the package registry"));
        assert!(Manager::Uv.error_lines("Installed 3 packages").is_empty());
    }
}
