//! `[mcp.servers.NAME]`: the tool servers hearth is a client of. A server
//! is started as a command (stdio, inside hearth's sandbox) or reached at a
//! URL (Streamable HTTP); its tools join the agent's under `NAME__tool`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;

use serde::Deserialize;

use super::render::quote;
use super::{ConfigError, Environment, Secret};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMcp {
    #[serde(default)]
    pub servers: BTreeMap<String, RawServer>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawServer {
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    pub env: Option<BTreeMap<String, String>>,
    pub url: Option<String>,
    pub headers: Option<BTreeMap<String, String>>,
    pub bearer_token_env: Option<String>,
    pub enabled: Option<bool>,
    pub allow: Option<Vec<String>>,
    pub deny: Option<Vec<String>>,
    pub approve: Option<RawApprove>,
    pub network: Option<bool>,
    pub reads: Option<Vec<String>>,
    pub memory_mib: Option<u64>,
    pub timeout_secs: Option<u64>,
    pub start_timeout_secs: Option<u64>,
}

/// `approve = "ask"` for every tool, or per tool with `"*"` for the rest.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawApprove {
    All(String),
    PerTool(BTreeMap<String, String>),
}

/// Whether a call waits for the person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    Ask,
    Never,
}

impl Ask {
    fn parse(key: &str, word: &str) -> Result<Self, ConfigError> {
        match word.trim() {
            "ask" => Ok(Self::Ask),
            "never" => Ok(Self::Never),
            other => Err(ConfigError::invalid(
                key,
                format!("`{other}` is not \"ask\" or \"never\""),
            )),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Never => "never",
        }
    }
}

/// How hearth reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A command hearth starts, contained, speaking on its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        /// Read-only paths the server needs beyond `/usr` (its code).
        reads: Vec<PathBuf>,
        /// Whether it may reach the network.
        network: bool,
        /// What its process tree may hold in memory, in MiB (a cgroup's
        /// cap, where one can be made).
        memory_mib: u64,
    },
    /// A Streamable HTTP endpoint.
    Http {
        url: String,
        headers: BTreeMap<String, Secret>,
        /// The bearer token, read from the environment variable named.
        bearer: Option<Secret>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub transport: Transport,
    pub enabled: bool,
    /// Only these tools are offered (all when empty).
    pub allow: Vec<String>,
    /// These tools are never offered.
    pub deny: Vec<String>,
    /// Per tool, then `default` for the rest.
    pub approve: BTreeMap<String, Ask>,
    pub approve_default: Ask,
    /// A call with no answer (nor progress) for this long fails.
    pub timeout_secs: u64,
    /// Starting (spawn or connect, then `initialize`) fails after this long.
    pub start_timeout_secs: u64,
}

impl ServerConfig {
    /// Whether the server's tool `tool` is offered to the model.
    pub fn offers(&self, tool: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|t| t == tool))
            && !self.deny.iter().any(|t| t == tool)
    }

    /// Whether a call of the server's tool `tool` asks first.
    pub fn asks_before(&self, tool: &str) -> bool {
        self.approve
            .get(tool)
            .copied()
            .unwrap_or(self.approve_default)
            == Ask::Ask
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpConfig {
    pub servers: BTreeMap<String, ServerConfig>,
}

/// What a stdio server's process tree may hold in memory unless its
/// section says otherwise, in MiB.
pub const DEFAULT_MEMORY_MIB: u64 = 1024;

/// What separates a server's name from its tool's in the registry. No
/// built-in tool has it in its name, so the two cannot collide.
pub const SEPARATOR: &str = "__";

impl McpConfig {
    pub(super) fn from_raw(raw: Option<RawMcp>, env: &Environment) -> Result<Self, ConfigError> {
        let mut servers = BTreeMap::new();
        for (name, raw) in raw.unwrap_or_default().servers {
            check_name(&name)?;
            servers.insert(name.clone(), server(&name, raw, env)?);
        }
        Ok(Self { servers })
    }

    /// The servers that are on.
    pub fn enabled(&self) -> impl Iterator<Item = (&String, &ServerConfig)> {
        self.servers.iter().filter(|(_, s)| s.enabled)
    }

    /// The secrets the config holds (scrubbed from tool output and logs).
    pub fn secrets(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in self.servers.values() {
            if let Transport::Http {
                headers, bearer, ..
            } = &s.transport
            {
                out.extend(headers.values().map(|v| v.expose().to_string()));
                out.extend(bearer.iter().map(|b| b.expose().to_string()));
            }
        }
        out
    }

    pub(super) fn render(&self, out: &mut String) {
        for (name, s) in &self.servers {
            let _ = writeln!(out, "[mcp.servers.{name}]");
            match &s.transport {
                Transport::Stdio {
                    command,
                    args,
                    env,
                    reads,
                    network,
                    memory_mib,
                } => {
                    let _ = writeln!(out, "command = {}", quote(command));
                    let _ = writeln!(out, "args = {}", list(args.iter()));
                    for key in env.keys() {
                        let _ = writeln!(out, "# env.{key} is set");
                    }
                    let reads = reads.iter().map(|p| p.display().to_string());
                    let _ = writeln!(out, "reads = {}", list(reads));
                    let _ = writeln!(out, "network = {network}");
                    let _ = writeln!(out, "memory_mib = {memory_mib}");
                }
                Transport::Http {
                    url,
                    headers,
                    bearer,
                } => {
                    let shown = super::secret::mask_url(url);
                    let _ = writeln!(out, "url = {}", quote(&shown));
                    for (key, value) in headers {
                        let _ = writeln!(out, "# headers.{key} = {value}");
                    }
                    if let Some(b) = bearer {
                        let _ = writeln!(out, "# bearer token: {b}");
                    }
                }
            }
            let _ = writeln!(
                out,
                "enabled = {}\nallow = {}\ndeny = {}",
                s.enabled,
                list(s.allow.iter()),
                list(s.deny.iter())
            );
            let mut approve = format!("\"*\" = \"{}\"", s.approve_default.as_str());
            for (tool, ask) in &s.approve {
                let _ = write!(approve, ", {} = \"{}\"", quote(tool), ask.as_str());
            }
            let _ = writeln!(
                out,
                "approve = {{ {approve} }}\ntimeout_secs = {}\nstart_timeout_secs = {}\n",
                s.timeout_secs, s.start_timeout_secs
            );
        }
    }
}

fn list(items: impl Iterator<Item = impl AsRef<str>>) -> String {
    let quoted: Vec<String> = items.map(|i| quote(i.as_ref())).collect();
    format!("[{}]", quoted.join(", "))
}

/// A server's name: letters, digits, `-` and single `_`, so that
/// `NAME__tool` splits one way only.
fn check_name(name: &str) -> Result<(), ConfigError> {
    let fine = !name.is_empty()
        && name.len() <= 32
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !name.contains(SEPARATOR)
        && !name.ends_with('_');
    if fine {
        Ok(())
    } else {
        Err(ConfigError::invalid(
            &format!("mcp.servers.{name}"),
            "a server's name is 1 to 32 letters, digits, '-' or single '_' (not at the end)",
        ))
    }
}

fn server(name: &str, r: RawServer, env: &Environment) -> Result<ServerConfig, ConfigError> {
    let key = |k: &str| format!("mcp.servers.{name}.{k}");
    let transport = match (r.command, r.url) {
        (Some(command), None) => {
            if r.headers.is_some() || r.bearer_token_env.is_some() {
                return Err(ConfigError::invalid(
                    &key("headers"),
                    "headers and bearer_token_env are for a `url` server; a command server takes `env`",
                ));
            }
            Transport::Stdio {
                // A venv's console script is often written `~/…`.
                command: match command.strip_prefix("~/") {
                    Some(_) => env.expand(&command).display().to_string(),
                    None => command,
                },
                args: r.args.unwrap_or_default(),
                env: r.env.unwrap_or_default(),
                reads: r
                    .reads
                    .unwrap_or_default()
                    .iter()
                    .map(|p| env.expand(p))
                    .collect(),
                network: r.network.unwrap_or(false),
                memory_mib: match r.memory_mib.unwrap_or(DEFAULT_MEMORY_MIB) {
                    m @ 16..=65_536 => m,
                    _ => {
                        return Err(ConfigError::invalid(
                            &key("memory_mib"),
                            "must be between 16 and 65536 (MiB)",
                        ));
                    }
                },
            }
        }
        (None, Some(url)) => http(name, url, r.headers, r.bearer_token_env, env)?,
        (Some(_), Some(_)) => {
            return Err(ConfigError::invalid(
                &key("url"),
                "set `command` (a stdio server) or `url` (Streamable HTTP), not both",
            ));
        }
        (None, None) => {
            return Err(ConfigError::invalid(
                &format!("mcp.servers.{name}"),
                "set `command` (a stdio server) or `url` (Streamable HTTP)",
            ));
        }
    };
    let (approve, approve_default) = approve(name, r.approve)?;
    let c = ServerConfig {
        transport,
        enabled: r.enabled.unwrap_or(true),
        allow: r.allow.unwrap_or_default(),
        deny: r.deny.unwrap_or_default(),
        approve,
        approve_default,
        timeout_secs: r.timeout_secs.unwrap_or(60),
        start_timeout_secs: r.start_timeout_secs.unwrap_or(30),
    };
    for (k, v) in [
        ("timeout_secs", c.timeout_secs),
        ("start_timeout_secs", c.start_timeout_secs),
    ] {
        if !(1..=3600).contains(&v) {
            return Err(ConfigError::invalid(&key(k), "must be between 1 and 3600"));
        }
    }
    Ok(c)
}

fn http(
    name: &str,
    url: String,
    headers: Option<BTreeMap<String, String>>,
    bearer_env: Option<String>,
    env: &Environment,
) -> Result<Transport, ConfigError> {
    let key = format!("mcp.servers.{name}.url");
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(ConfigError::invalid(
            &key,
            format!("`{url}` is not an http:// or https:// URL"),
        ));
    }
    let bearer = match bearer_env {
        None => None,
        Some(var) => Some(Secret::new(env.named(&var).ok_or_else(|| {
            ConfigError::invalid(
                &format!("mcp.servers.{name}.bearer_token_env"),
                format!("the environment variable `{var}` is not set"),
            )
        })?)),
    };
    let headers = headers
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, Secret::new(v)))
        .collect();
    Ok(Transport::Http {
        url,
        headers,
        bearer,
    })
}

fn approve(
    name: &str,
    raw: Option<RawApprove>,
) -> Result<(BTreeMap<String, Ask>, Ask), ConfigError> {
    let key = format!("mcp.servers.{name}.approve");
    match raw {
        None => Ok((BTreeMap::new(), Ask::Ask)),
        Some(RawApprove::All(word)) => Ok((BTreeMap::new(), Ask::parse(&key, &word)?)),
        Some(RawApprove::PerTool(tools)) => {
            let mut default = Ask::Ask;
            let mut per_tool = BTreeMap::new();
            for (tool, word) in tools {
                let ask = Ask::parse(&format!("{key}.{tool}"), &word)?;
                if tool == "*" {
                    default = ask;
                } else {
                    per_tool.insert(tool, ask);
                }
            }
            Ok((per_tool, default))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, env: &Environment) -> Result<McpConfig, ConfigError> {
        let raw: RawMcp = toml::from_str(text).unwrap();
        McpConfig::from_raw(Some(raw), env)
    }

    #[test]
    fn every_tool_asks_first_unless_the_config_says_otherwise() {
        let env = Environment::with_home("/h");
        let c = parse(
            "[servers.time]\ncommand = \"mcp-server-time\"\n[servers.ha]\nurl = \"http://ha:8123/mcp\"\napprove = { \"*\" = \"never\", turn_on = \"ask\" }\n",
            &env,
        )
        .unwrap();
        assert!(c.servers["time"].asks_before("get_current_time"));
        assert!(!c.servers["ha"].asks_before("get_state"));
        assert!(c.servers["ha"].asks_before("turn_on"));
        assert!(matches!(
            c.servers["time"].transport,
            Transport::Stdio { network: false, .. }
        ));
    }

    #[test]
    fn allow_and_deny_choose_the_tools_offered() {
        let env = Environment::with_home("/h");
        let c = parse(
            "[servers.a]\ncommand = \"x\"\nallow = [\"read\", \"list\"]\ndeny = [\"list\"]\n[servers.b]\ncommand = \"x\"\ndeny = [\"write\"]\n",
            &env,
        )
        .unwrap();
        let (a, b) = (&c.servers["a"], &c.servers["b"]);
        assert!(a.offers("read") && !a.offers("list") && !a.offers("write"));
        assert!(b.offers("read") && !b.offers("write"));
    }

    #[test]
    fn names_that_would_split_two_ways_are_refused() {
        let env = Environment::with_home("/h");
        for bad in ["a__b", "x_", "", "sp ace", "dot.ted"] {
            let text = format!("[servers.\"{bad}\"]\ncommand = \"x\"\n");
            let e = parse(&text, &env).unwrap_err().to_string();
            assert!(e.contains("server's name"), "{bad}: {e}");
        }
        assert!(parse("[servers.my-files_2]\ncommand = \"x\"\n", &env).is_ok());
    }

    #[test]
    fn a_server_is_a_command_or_a_url() {
        let env = Environment::with_home("/h");
        let both = parse("[servers.a]\ncommand = \"x\"\nurl = \"http://h/\"\n", &env);
        assert!(both.unwrap_err().to_string().contains("not both"));
        let neither = parse("[servers.a]\nenabled = true\n", &env);
        assert!(neither.unwrap_err().to_string().contains("set `command`"));
        let ftp = parse("[servers.a]\nurl = \"ftp://h/\"\n", &env);
        assert!(ftp.unwrap_err().to_string().contains("not an http"));
        let word = parse(
            "[servers.a]\ncommand = \"x\"\napprove = \"sometimes\"\n",
            &env,
        );
        assert!(
            word.unwrap_err()
                .to_string()
                .contains("\"ask\" or \"never\"")
        );
    }

    #[test]
    fn the_bearer_token_comes_from_the_environment_and_never_prints() {
        let env = Environment::with_home("/h").set("HA_TOKEN", "secret-token-123456");
        let c = parse(
            "[servers.ha]\nurl = \"http://ha/mcp\"\nbearer_token_env = \"HA_TOKEN\"\n",
            &env,
        )
        .unwrap();
        assert_eq!(c.secrets(), vec!["secret-token-123456".to_string()]);
        let mut out = String::new();
        c.render(&mut out);
        assert!(!out.contains("secret-token-123456"), "{out}");
        let missing = parse(
            "[servers.ha]\nurl = \"http://ha/mcp\"\nbearer_token_env = \"NOPE\"\n",
            &Environment::with_home("/h"),
        );
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .contains("`NOPE` is not set")
        );
    }
}
