//! Finding and parsing the config file.

use std::path::{Path, PathBuf};

use super::raw::RawConfig;
use super::{Config, ConfigError, ConfigSource, Environment};

impl Config {
    /// Loads the configuration: `explicit` (from `--config`), else
    /// `$HEARTH_CONFIG`, else the default path if it exists, else defaults.
    /// A path the user named must exist; the default path may be absent.
    pub fn load(explicit: Option<&Path>, env: &Environment) -> Result<Self, ConfigError> {
        let named = explicit
            .map(Path::to_path_buf)
            .or_else(|| env.var("HEARTH_CONFIG").map(PathBuf::from));
        match named {
            Some(path) => Self::load_file(&path, env),
            None => match env.default_config_path() {
                Some(path) if path.exists() => Self::load_file(&path, env),
                _ => Self::defaults(env),
            },
        }
    }

    /// Reads and validates one file.
    pub fn load_file(path: &Path, env: &Environment) -> Result<Self, ConfigError> {
        let text = read_text(path).map_err(|source| ConfigError::Unreadable {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path, env)
    }

    /// Parses config text; `path` is only used in error messages. Every
    /// problem is reported at once: a key found wrong is set aside (as if
    /// it were not in the file) and the rest is read again, so one run names
    /// each unknown key, wrong type and invalid value.
    pub fn parse(text: &str, path: &Path, env: &Environment) -> Result<Self, ConfigError> {
        let mut table: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| ConfigError::Syntax {
                    path: path.to_path_buf(),
                    message: one_line(&e.to_string()),
                })?;
        let notices = super::renamed::carry_forward(
            &mut table,
            super::renamed::RENAMED,
            super::renamed::RETIRED,
        );
        let mut problems: Vec<ConfigError> = Vec::new();
        loop {
            let read = parse_raw(&table, path).and_then(|raw| {
                Self::from_raw(raw, ConfigSource::File(path.to_path_buf()), env).map_err(
                    |e| match e {
                        ConfigError::Invalid { key, message } => ConfigError::Key {
                            path: path.to_path_buf(),
                            key,
                            message,
                        },
                        other => other,
                    },
                )
            });
            let error = match read {
                Ok(config) if problems.is_empty() => return Ok(Config { notices, ..config }),
                Ok(_) => break,
                Err(e) => e,
            };
            let set_aside = match &error {
                ConfigError::Key { key, .. } => remove_key(&mut table, key),
                _ => false,
            };
            problems.push(error);
            if !set_aside || problems.len() >= MAX_PROBLEMS {
                break;
            }
        }
        if problems.len() == 1 {
            return Err(problems.remove(0));
        }
        Err(ConfigError::Several {
            path: path.to_path_buf(),
            problems: problems
                .iter()
                .map(|p| match p {
                    ConfigError::Key { key, message, .. } => format!("key `{key}`: {message}"),
                    other => other.to_string(),
                })
                .collect(),
        })
    }
}

/// Problems named in one run at most.
const MAX_PROBLEMS: usize = 50;

/// Removes `key` (`a.b`, `lms.sources[0].url`) from `table`; whether it was there.
fn remove_key(table: &mut toml::Table, key: &str) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    let Some((last, parents)) = parts.split_last() else {
        return false;
    };
    let mut here = table;
    for part in parents {
        let (name, index) = indexed(part);
        let next = match (here.get_mut(name), index) {
            (Some(toml::Value::Table(t)), None) => t,
            (Some(toml::Value::Array(items)), Some(i)) => match items.get_mut(i) {
                Some(toml::Value::Table(t)) => t,
                _ => return false,
            },
            _ => return false,
        };
        here = next;
    }
    let (name, index) = indexed(last);
    match index {
        None => here.remove(name).is_some(),
        Some(i) => match here.get_mut(name) {
            Some(toml::Value::Array(items)) if i < items.len() => {
                items.remove(i);
                true
            }
            _ => false,
        },
    }
}

/// `sources[2]` as (`sources`, Some(2)); `model` as (`model`, None).
fn indexed(part: &str) -> (&str, Option<usize>) {
    match part.split_once('[') {
        Some((name, rest)) => (name, rest.trim_end_matches(']').parse().ok()),
        None => (part, None),
    }
}

/// The largest config file read.
const MAX_BYTES: u64 = 1 << 20;

/// The text of a config file, which must be a plain file: a FIFO would
/// block the open (and the start) for ever, a device would never end.
/// Opened without blocking, then checked before anything is read.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, a device, a socket or a folder); hearth reads its config from a plain file",
        ));
    }
    if meta.len() > MAX_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} bytes; a config is at most {MAX_BYTES} bytes",
                meta.len()
            ),
        ));
    }
    let mut text = String::new();
    file.take(MAX_BYTES + 1).read_to_string(&mut text)?;
    Ok(text)
}

fn parse_raw(table: &toml::Table, path: &Path) -> Result<RawConfig, ConfigError> {
    let de = toml::Value::Table(table.clone());
    serde_path_to_error::deserialize(de).map_err(|e| {
        let parent = e.path().to_string();
        let message = one_line(&e.inner().to_string());
        match unknown_field(&message) {
            Some(field) => ConfigError::Key {
                path: path.to_path_buf(),
                key: if parent.ends_with(field) {
                    parent.clone()
                } else {
                    join_key(&parent, field)
                },
                message: format!(
                    "unknown key ({})",
                    message
                        .split(", expected")
                        .nth(1)
                        .map_or("not a hearth setting".to_string(), |s| format!(
                            "expected{s}"
                        ))
                ),
            },
            // A type error quotes the value: never for a secret.
            None if super::secret::names_a_secret(&parent) => ConfigError::Key {
                path: path.to_path_buf(),
                key: parent,
                message: "has the wrong type: it must be a string (the value is not shown: this key holds a secret)".to_string(),
            },
            None => ConfigError::Key {
                path: path.to_path_buf(),
                key: parent,
                message,
            },
        }
    })
}

/// The field name in serde's "unknown field `x`, expected ..." message.
fn unknown_field(message: &str) -> Option<&str> {
    let rest = message.split("unknown field `").nth(1)?;
    rest.split('`').next()
}

fn join_key(parent: &str, field: &str) -> String {
    if parent.is_empty() || parent == "." {
        field.to_string()
    } else {
        format!("{parent}.{field}")
    }
}

/// toml's messages span several lines with a source excerpt; keep the gist.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !is_excerpt(l))
        .collect::<Vec<_>>()
        .join(": ")
}

/// A source excerpt line of a toml message: `2 | key = "x"` or `  ^^^`.
fn is_excerpt(line: &str) -> bool {
    let gutter = line.split('|').next().unwrap_or(line);
    (line.contains('|') && gutter.trim().chars().all(|c| c.is_ascii_digit()))
        || line.chars().all(|c| c == '^' || c == ' ')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Environment {
        Environment::with_home("/home/u")
    }

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/c.toml"), &env())
    }

    #[test]
    fn valid_file_overrides_defaults() {
        let c = parse("[model]\ncontext_size = 2048\nchat_template = \"gemma\"\n[generation]\ntemperature = 0.0\nseed = 7\n[data]\ndir = \"~/hd\"\n").unwrap();
        assert_eq!(c.model.context_size, 2048);
        assert_eq!(c.model.chat_template.as_deref(), Some("gemma"));
        assert_eq!(c.generation.temperature, 0.0);
        assert_eq!(c.generation.seed, Some(7));
        assert_eq!(c.generation.max_tokens, 512, "unset keys keep defaults");
        assert_eq!(c.data_dir, PathBuf::from("/home/u/hd"));
        assert_eq!(c.source, ConfigSource::File("/c.toml".into()));
    }

    #[test]
    fn empty_file_is_the_defaults() {
        let c = parse("").unwrap();
        assert_eq!(c.model.path, crate::DEFAULT_MODEL_FILE);
        assert_eq!(c.data_dir, PathBuf::from("/home/u/.local/share/hearth"));
    }

    #[test]
    fn every_problem_is_named_in_one_run() {
        let e = parse(
            "[model]\ncontxt_size = 5\ncontext_size = \"big\"\n[modle]\npath = \"x\"\n[scheduler]\nmax_jobs = 0\n[generation]\ntemperature = 0.5\n",
        )
        .unwrap_err()
        .to_string();
        for named in [
            "`model.contxt_size`",
            "`model.context_size`",
            "`modle`",
            "`scheduler.max_jobs`",
            "4 problems",
        ] {
            assert!(e.contains(named), "{named}: {e}");
        }
        // Positive control: a good key beside them is not named.
        assert!(!e.contains("temperature"), "{e}");
        let ok = parse("[generation]\ntemperature = 0.5\n").unwrap();
        assert_eq!(ok.generation.temperature, 0.5);
    }

    #[test]
    fn unknown_key_is_named() {
        let e = parse("[model]\ncontxt_size = 5\n").unwrap_err().to_string();
        assert!(e.contains("`model.contxt_size`"), "{e}");
        assert!(e.contains("unknown key"), "{e}");
        let e = parse("[modle]\npath = \"x\"\n").unwrap_err().to_string();
        assert!(e.contains("`modle`"), "{e}");
    }

    #[test]
    fn wrong_type_is_named() {
        let e = parse("[model]\ncontext_size = \"big\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`model.context_size`"), "{e}");
        assert!(e.contains("invalid type"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
        assert!(!e.contains(" | "), "no source excerpt: {e}");
    }

    #[test]
    fn bad_value_is_named() {
        let e = parse("[generation]\ntemperature = 9.5\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`generation.temperature`"), "{e}");
        let e = parse("[log]\nlevel = \"loud[\"\n").unwrap_err().to_string();
        assert!(e.contains("`log.level`"), "{e}");
    }

    #[test]
    fn syntax_error_is_one_line() {
        let e = parse("[model\npath=1").unwrap_err().to_string();
        assert!(e.starts_with("config /c.toml:"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn environment_overrides_file_and_secrets_are_masked() {
        let env = env()
            .set("HEARTH_TELEGRAM_TOKEN", "999:from-the-environment-token")
            .set("HEARTH_DATA_DIR", "/srv/hearth")
            .set("HEARTH_MODEL", "/m/other.gguf");
        let c = Config::parse(
            "[channels.telegram]\nbot_token = \"111:file-token-value-here\"\n[providers.openai]\napi_key = \"sk-file-key-0123456789\"\n",
            Path::new("/c.toml"),
            &env,
        )
        .unwrap();
        assert_eq!(
            c.telegram.bot_token.as_ref().unwrap().expose(),
            "999:from-the-environment-token"
        );
        assert_eq!(
            c.openai.api_key.as_ref().unwrap().expose(),
            "sk-file-key-0123456789"
        );
        assert_eq!(c.data_dir, PathBuf::from("/srv/hearth"));
        assert_eq!(c.model.path, "/m/other.gguf");
        let shown = c.render();
        assert!(!shown.contains("from-the-environment"), "{shown}");
        assert!(!shown.contains("file-key"), "{shown}");
    }

    #[test]
    fn hearth_threads_overrides_the_file_and_a_bad_one_is_named() {
        let c = Config::parse("[model]\nthreads = 4\n", Path::new("/c.toml"), &env()).unwrap();
        assert_eq!(c.model.threads, 4);
        let one = env().set("HEARTH_THREADS", "1");
        let c = Config::parse("[model]\nthreads = 4\n", Path::new("/c.toml"), &one).unwrap();
        assert_eq!(c.model.threads, 1);
        for bad in ["two", "-1", "2000"] {
            let e = Config::parse("", Path::new("/c.toml"), &env().set("HEARTH_THREADS", bad))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("HEARTH_THREADS") || e.contains("model.threads"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn load_order() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let cfg_dir = home.join(".config/hearth");
        std::fs::create_dir_all(&cfg_dir).unwrap();
        std::fs::write(cfg_dir.join("config.toml"), "[model]\nthreads = 3\n").unwrap();
        let other = dir.path().join("other.toml");
        std::fs::write(&other, "[model]\nthreads = 5\n").unwrap();

        let env = Environment::with_home(&home);
        assert_eq!(Config::load(None, &env).unwrap().model.threads, 3);
        let env_named = env.clone().set("HEARTH_CONFIG", other.to_str().unwrap());
        assert_eq!(Config::load(None, &env_named).unwrap().model.threads, 5);
        let explicit = Config::load(Some(&cfg_dir.join("config.toml")), &env_named).unwrap();
        assert_eq!(explicit.model.threads, 3);
        let missing = Config::load(Some(Path::new("/nonexistent/h.toml")), &env).unwrap_err();
        assert!(matches!(missing, ConfigError::Unreadable { .. }));
        let bare = Environment::with_home(dir.path().join("nobody"));
        assert_eq!(
            Config::load(None, &bare).unwrap().source,
            ConfigSource::Defaults
        );
    }
}

#[cfg(test)]
mod example {
    use super::*;

    /// config.example.toml parses, and its values are the built-in defaults.
    #[test]
    fn the_example_file_is_valid_and_matches_the_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config.example.toml");
        let env = Environment::with_home("/home/u");
        let example = Config::load_file(&path, &env).unwrap();
        let defaults = Config::defaults(&env).unwrap();
        let strip = |c: &Config| c.render().lines().skip(1).collect::<Vec<_>>().join("\n");
        assert_eq!(strip(&example), strip(&defaults));
    }
}
