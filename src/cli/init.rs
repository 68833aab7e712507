//! `hearth init`: writes a working config, asking at a terminal and taking
//! flags in a script. Telegram with the person's own user id found for
//! them (their first message to the bot, read with `getUpdates`), the
//! gateway with a generated token and the page's address, the model
//! (pulled and used), the service unit. Tokens go to the secrets file
//! (`~/.config/hearth/secrets.env`), never into the config.
//!
//! Running it again changes only what is asked: the config is edited in
//! place (comments and other keys kept), a token already in the secrets
//! file is kept, and a config hearth would refuse is never written.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

use crate::channels::gateway::page_url as gateway_page_url;
use crate::config::{Config, DEFAULT_TELEGRAM_API_URL, Environment, secrets};

/// What to set up; `None` leaves it as it is.
#[derive(Debug, Default, clap::Args)]
pub struct InitArgs {
    /// The bot's token from @BotFather: turns Telegram on.
    #[arg(long, value_name = "TOKEN")]
    pub telegram_token: Option<String>,
    /// Your Telegram user id (default: found from your first message to the bot).
    #[arg(long, value_name = "ID")]
    pub telegram_user: Option<String>,
    /// A Bot API server other than Telegram's.
    #[arg(long, value_name = "URL")]
    pub telegram_api_url: Option<String>,
    /// Turns the gateway and the web page on at this address (127.0.0.1:8787).
    #[arg(long, value_name = "ADDRESS", num_args = 0..=1, default_missing_value = "127.0.0.1:8787")]
    pub gateway: Option<String>,
    /// Pull this catalogue model and use it (`recommended`: the one that fits).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Adds a course site: moodle, canvas, ical or rss (with --lms-url),
    /// checked by one poll before anything is written.
    #[arg(long, value_name = "KIND", requires = "lms_url")]
    pub lms: Option<String>,
    /// The site's address (Moodle's or Canvas's root, a feed's URL).
    #[arg(long, value_name = "URL")]
    pub lms_url: Option<String>,
    /// Its token (Moodle, Canvas), kept in the secrets file.
    #[arg(long, value_name = "TOKEN")]
    pub lms_token: Option<String>,
    /// Its name in notices (default: the kind).
    #[arg(long, value_name = "NAME")]
    pub lms_name: Option<String>,
    /// Write the systemd user unit (`hearth service install --no-enable`).
    #[arg(long)]
    pub service: bool,
    /// How long to wait for your first message to the bot.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub wait_secs: u64,
}

impl InitArgs {
    fn asks_nothing(&self) -> bool {
        self.telegram_token.is_none()
            && self.gateway.is_none()
            && self.model.is_none()
            && self.lms.is_none()
            && !self.service
    }
}

pub async fn run(
    path: Option<&Path>,
    env: &Environment,
    mut args: InitArgs,
) -> anyhow::Result<ExitCode> {
    if args.asks_nothing() {
        if !std::io::stdin().is_terminal() {
            bail!(
                "nothing to set up: pass --telegram-token, --gateway, --model or --service (or run `hearth init` at a terminal to be asked)"
            );
        }
        questions(&mut args)?;
    }
    let file = match path {
        Some(p) => p.to_path_buf(),
        None => env
            .default_config_path()
            .context("no home directory to keep a config file in; pass --config FILE")?,
    };
    let secrets_file = env
        .secrets_path()
        .context("no home directory to keep the secrets file in")?;
    if let Some(name) = args.model.as_deref().filter(|n| *n != "recommended") {
        crate::models::Catalogue::builtin().get(name)?;
    }
    let mut doc = read_config(&file)?;
    let mut secrets = Secrets::read(&secrets_file)?;
    let mut said = Vec::new();
    if let Some(line) = telegram(&args, &mut doc, &mut secrets).await? {
        said.push(line);
    }
    if let Some(listen) = &args.gateway {
        said.push(gateway(listen, env, &mut doc, &mut secrets, &secrets_file)?);
    }
    let lms = lms(&args, &mut doc, &mut secrets)?;
    // Never write a config hearth would refuse: checked with the new secrets.
    let text = doc.to_string();
    let checked_env = secrets.apply(env.clone());
    let config = Config::parse(&text, &file, &checked_env)
        .with_context(|| format!("the config hearth init would write to {}", file.display()))?;
    config.gateway.check_serving()?;
    if let Some(name) = &lms {
        let items = crate::lms::check_source(&config.lms, name)
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "the course site `{name}` cannot be read: {}; nothing was written",
                    e.with_fix()
                )
            })?;
        said.push(format!("{name}: read, {items} items listed now"));
    }
    secrets.write(&secrets_file)?;
    super::models_use::write_atomically(&file, &text)?;
    println!(
        "wrote {}; secrets in {}",
        file.display(),
        secrets_file.display()
    );
    if let Some(name) = &args.model {
        model(&config, &checked_env, name).await?;
    }
    if args.service {
        super::service::install(&checked_env, path, false, false)?;
    }
    for line in said {
        println!("{line}");
    }
    println!("check it with `hearth doctor`; run it with `hearth daemon`");
    Ok(ExitCode::SUCCESS)
}

/// Telegram: the token proved by `getMe`, the person's id (given, or from
/// their first message), the token into the secrets.
async fn telegram(
    args: &InitArgs,
    doc: &mut toml_edit::DocumentMut,
    secrets: &mut Secrets,
) -> anyhow::Result<Option<String>> {
    let Some(token) = &args.telegram_token else {
        return Ok(None);
    };
    let api = args
        .telegram_api_url
        .clone()
        .unwrap_or_else(|| DEFAULT_TELEGRAM_API_URL.to_string());
    let bot = telegram_bot(&api, token).await?;
    let user = match &args.telegram_user {
        Some(id) => id.clone(),
        None => first_sender(&api, token, &bot, args.wait_secs).await?,
    };
    let section = table(doc, &["channels", "telegram"])?;
    add_to_list(section, "allowed_users", &user);
    if let Some(url) = &args.telegram_api_url {
        section.insert("api_url", toml_edit::value(url.as_str()));
    }
    secrets.set("HEARTH_TELEGRAM_TOKEN", token);
    Ok(Some(format!(
        "Telegram: @{bot} answers you (user {user}); message it once `hearth daemon` runs"
    )))
}

/// The gateway at `listen`, with a token made unless one is kept already;
/// the line that says where the page is.
fn gateway(
    listen: &str,
    env: &Environment,
    doc: &mut toml_edit::DocumentMut,
    secrets: &mut Secrets,
    secrets_file: &Path,
) -> anyhow::Result<String> {
    let section = table(doc, &["channels", "gateway"])?;
    section.insert("listen", toml_edit::value(listen));
    if secrets.get("HEARTH_GATEWAY_TOKEN").is_none() && env.var("HEARTH_GATEWAY_TOKEN").is_none() {
        secrets.set("HEARTH_GATEWAY_TOKEN", &new_token());
    }
    let page = listen
        .parse()
        .map(gateway_page_url)
        .unwrap_or_else(|_| format!("http://{listen}/"));
    Ok(format!(
        "the web page: {page} (sign in with HEARTH_GATEWAY_TOKEN from {})",
        secrets_file.display()
    ))
}

/// At a terminal with no flags: one question for each part.
fn questions(args: &mut InitArgs) -> anyhow::Result<()> {
    let token = ask("Telegram bot token from @BotFather (empty: no Telegram)")?;
    args.telegram_token = (!token.is_empty()).then_some(token);
    if ask("The web page and API on this machine? [y/N]")?.eq_ignore_ascii_case("y") {
        args.gateway = Some("127.0.0.1:8787".into());
    }
    if ask("Pull the model recommended for this machine? [y/N]")?.eq_ignore_ascii_case("y") {
        args.model = Some("recommended".into());
    }
    args.service =
        ask("Start hearth at boot (a systemd user unit)? [y/N]")?.eq_ignore_ascii_case("y");
    Ok(())
}

fn ask(question: &str) -> anyhow::Result<String> {
    print!("{question}: ");
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim().to_string())
}

fn read_config(file: &Path) -> anyhow::Result<toml_edit::DocumentMut> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
    };
    text.parse()
        .with_context(|| format!("{} is not valid TOML; fix it first", file.display()))
}

/// The table at `path` (`[channels.telegram]`), made if missing.
fn table<'a>(
    doc: &'a mut toml_edit::DocumentMut,
    path: &[&str],
) -> anyhow::Result<&'a mut toml_edit::Table> {
    let mut at = doc.as_table_mut();
    for key in path {
        let item = at.entry(key).or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        });
        at = item
            .as_table_mut()
            .with_context(|| format!("`{key}` in the config is not a table"))?;
    }
    Ok(at)
}

/// Adds `value` to the list `key` unless it is there.
fn add_to_list(section: &mut toml_edit::Table, key: &str, value: &str) {
    let list = section
        .entry(key)
        .or_insert_with(|| toml_edit::value(toml_edit::Array::new()));
    match list.as_array_mut() {
        Some(items) if items.iter().any(|v| v.as_str() == Some(value)) => {}
        Some(items) => items.push(value),
        None => *list = toml_edit::value(toml_edit::Array::from_iter([value])),
    }
}

/// 192 random bits as 48 hex digits.
fn new_token() -> String {
    let two = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    two[..48].to_string()
}

/// The bot's username, which also proves the token.
async fn telegram_bot(api: &str, token: &str) -> anyhow::Result<String> {
    let me = bot_api(api, token, "getMe", &[]).await?;
    Ok(me["username"].as_str().unwrap_or("your bot").to_string())
}

/// The id of the first person to write to the bot in private after init
/// asked them to, waiting up to `wait_secs`. An older message (a stranger
/// who wrote to the bot yesterday) is not taken: whoever it names is let in.
/// Nothing is marked read: the daemon still sees the message.
async fn first_sender(api: &str, token: &str, bot: &str, wait_secs: u64) -> anyhow::Result<String> {
    // A minute of slack for a clock that differs from Telegram's.
    let asked = chrono::Utc::now().timestamp() - 60;
    println!("Send any message to @{bot} in Telegram now (waiting up to {wait_secs} s)…");
    let deadline = Instant::now() + Duration::from_secs(wait_secs);
    while Instant::now() < deadline {
        let updates = bot_api(api, token, "getUpdates", &[("timeout", "10")]).await?;
        let private = updates.as_array().into_iter().flatten().find_map(|u| {
            let m = &u["message"];
            let fresh = m["date"].as_i64().is_some_and(|d| d >= asked);
            (m["chat"]["type"] == "private" && fresh).then_some(m["from"].clone())
        });
        if let Some(from) = private.filter(|f| f["id"].is_i64()) {
            let who = match from["username"].as_str() {
                Some(name) => format!("@{name}"),
                None => from["first_name"].as_str().unwrap_or("someone").to_string(),
            };
            println!("{who} wrote first: they are the one @{bot} answers");
            return Ok(from["id"].to_string());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    bail!(
        "no message came to @{bot} within {wait_secs} s; send one and run hearth init again, or pass --telegram-user ID"
    )
}

async fn bot_api(
    api: &str,
    token: &str,
    method: &str,
    query: &[(&str, &str)],
) -> anyhow::Result<Value> {
    let url = format!("{}/bot{token}/{method}", api.trim_end_matches('/'));
    let answer: Value = reqwest::Client::new()
        .get(&url)
        .query(query)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach the Bot API at {api}: {}", e.without_url()))?
        .json()
        .await
        .with_context(|| format!("the Bot API at {api} did not answer in JSON"))?;
    if answer["ok"] != true {
        let why = answer["description"].as_str().unwrap_or("refused");
        bail!("Telegram refused the bot's token ({why}); copy it again from @BotFather");
    }
    Ok(answer["result"].clone())
}

/// Pulls and uses `name` (`recommended`: the chat model that fits here).
async fn model(config: &Config, env: &Environment, name: &str) -> anyhow::Result<()> {
    use super::models_cmd::ModelsCommand;
    let name = if name == "recommended" {
        let budget = crate::models::Budget::of(
            crate::engine::backends::load(
                config.engine.backends_dir.as_deref(),
                &config.engine.rpc_servers,
            )
            .ok(),
        );
        match budget.recommend(&crate::models::Catalogue::builtin()) {
            Some(m) => m.name.clone(),
            None => bail!("no catalogue model fits this machine; the default test model stays"),
        }
    } else {
        name.to_string()
    };
    for command in [
        ModelsCommand::Pull { name: name.clone() },
        ModelsCommand::Use { name },
    ] {
        if super::models_cmd::run(config, env, command).await? != ExitCode::SUCCESS {
            bail!("the model is not set up; the rest of the config is written");
        }
    }
    Ok(())
}

/// The secrets file's lines, with names set or replaced in place.
struct Secrets {
    lines: Vec<String>,
}

impl Secrets {
    fn read(path: &PathBuf) -> anyhow::Result<Self> {
        // Through the one reader, so a file others may read is refused here too.
        secrets::read(path)?;
        let text = std::fs::read_to_string(path).unwrap_or_default();
        Ok(Self {
            lines: text.lines().map(str::to_string).collect(),
        })
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.lines.iter().position(|l| {
            l.split_once('=')
                .is_some_and(|(n, _)| n.trim() == name && !l.trim_start().starts_with('#'))
        })
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.position(name)
            .and_then(|i| self.lines[i].split_once('='))
            .map(|(_, v)| v.trim())
    }

    fn set(&mut self, name: &str, value: &str) {
        let line = format!("{name}={value}");
        match self.position(name) {
            Some(i) => self.lines[i] = line,
            None => self.lines.push(line),
        }
    }

    /// `env` with these secrets, as hearth will read them.
    fn apply(&self, mut env: Environment) -> Environment {
        for line in &self.lines {
            if let Some((name, value)) = line.split_once('=')
                && !line.trim_start().starts_with('#')
                && env.var(name.trim()).is_none()
            {
                env = env.set(name.trim(), value.trim());
            }
        }
        env
    }

    fn write(&self, path: &Path) -> anyhow::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let text = format!("{}\n", self.lines.join("\n"));
        crate::file_modes::replace_file(path, text.as_bytes(), 0o600)
            .with_context(|| format!("cannot write {}", path.display()))
    }
}

/// The course site asked for, added with its token in the secrets; its name.
fn lms(
    args: &InitArgs,
    doc: &mut toml_edit::DocumentMut,
    secrets: &mut Secrets,
) -> anyhow::Result<Option<String>> {
    let (Some(kind), Some(url)) = (&args.lms, &args.lms_url) else {
        return Ok(None);
    };
    let name = args.lms_name.clone().unwrap_or_else(|| kind.clone());
    lms_source(doc, kind, &name, url)?;
    if let Some(token) = &args.lms_token {
        secrets.set(&crate::config::token_variable(&name), token);
    }
    Ok(Some(name))
}

/// Adds `[[lms.sources]]` named `name`, or points the one of that name at
/// `url` and `kind`.
fn lms_source(
    doc: &mut toml_edit::DocumentMut,
    kind: &str,
    name: &str,
    url: &str,
) -> anyhow::Result<()> {
    let lms = table(doc, &["lms"])?;
    let sources = lms
        .entry("sources")
        .or_insert_with(|| toml_edit::Item::ArrayOfTables(toml_edit::ArrayOfTables::new()))
        .as_array_of_tables_mut()
        .context("`lms.sources` in the config is not a list of [[lms.sources]]")?;
    let found = sources
        .iter_mut()
        .find(|t| t.get("name").and_then(|v| v.as_str()) == Some(name));
    let source = match found {
        Some(t) => t,
        None => {
            sources.push(toml_edit::Table::new());
            sources
                .iter_mut()
                .last()
                .context("a source was just added")?
        }
    };
    source.insert("kind", toml_edit::value(kind));
    source.insert("name", toml_edit::value(name));
    source.insert("url", toml_edit::value(url));
    Ok(())
}
