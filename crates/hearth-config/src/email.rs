//! `[channels.email]`: the mail channel's keys, raw and validated.
//!
//! IMAP to receive, SMTP to answer. A sender is answered only when listed
//! in `allowed_senders` and the mail also carries proof that it is theirs:
//! a passing DKIM or SPF verdict in an `Authentication-Results` header from
//! the server named `authserv_id`, or their secret address
//! (`bot+TOKEN@…`, the token under `[channels.email.tokens]`).

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Deserialize;

use super::{ConfigError, Environment, Secret};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEmail {
    pub address: Option<String>,
    pub username: Option<String>,
    pub password: Option<String>,
    pub imap_host: Option<String>,
    pub imap_port: Option<u16>,
    pub smtp_host: Option<String>,
    pub smtp_port: Option<u16>,
    pub imap_security: Option<String>,
    pub smtp_security: Option<String>,
    pub ca_file: Option<String>,
    pub mailbox: Option<String>,
    pub allowed_senders: Option<Vec<String>>,
    pub authserv_id: Option<String>,
    pub tokens: Option<BTreeMap<String, String>>,
    pub poll_interval_secs: Option<u64>,
}

/// The checked section; `None` in [`super::Config`] when it is absent.
#[derive(Debug, Clone)]
pub struct EmailConfig {
    /// The bot's own address: `From:` of its replies.
    pub address: String,
    /// The IMAP and SMTP login; the address when unset.
    pub username: String,
    /// `HEARTH_EMAIL_PASSWORD` wins over the file.
    pub password: Secret,
    pub imap_host: String,
    pub imap_port: u16,
    pub smtp_host: String,
    pub smtp_port: u16,
    pub imap_security: MailSecurity,
    pub smtp_security: MailSecurity,
    /// More certificate authorities to trust (PEM), `~` expanded.
    pub ca_file: Option<std::path::PathBuf>,
    pub mailbox: String,
    /// Addresses, lowercased.
    pub allowed_senders: Vec<String>,
    /// The receiving server's name in its `Authentication-Results`.
    pub authserv_id: Option<String>,
    /// Sender (lowercased) to the token of their secret address.
    pub tokens: BTreeMap<String, Secret>,
    /// How often the mailbox is looked at when the server has no IDLE, and
    /// the longest an IDLE waits before it is renewed.
    pub poll_interval_secs: u64,
}

impl EmailConfig {
    /// Stage two for this section: defaults, the password variable, checks.
    pub(super) fn from_raw(
        raw: Option<RawEmail>,
        env: &Environment,
    ) -> Result<Option<Self>, ConfigError> {
        let Some(e) = raw else {
            return Ok(None);
        };
        let key = |k: &str| format!("channels.email.{k}");
        let address = e
            .address
            .map(|a| a.trim().to_ascii_lowercase())
            .filter(|a| plausible_address(a))
            .ok_or_else(|| {
                ConfigError::invalid(
                    &key("address"),
                    "the bot's own address (name@domain) is needed",
                )
            })?;
        let password = env
            .var("HEARTH_EMAIL_PASSWORD")
            .map(str::to_string)
            .or(e.password.filter(|p| !p.is_empty()))
            .map(Secret::new)
            .ok_or_else(|| {
                ConfigError::invalid(&key("password"), "set it here or in HEARTH_EMAIL_PASSWORD")
            })?;
        let imap_host = host(e.imap_host, &key("imap_host"))?;
        let smtp_host = host(e.smtp_host, &key("smtp_host"))?;
        let (imap_security, smtp_security) =
            securities(e.imap_security, &imap_host, e.smtp_security, &smtp_host)?;
        let ca_file = e
            .ca_file
            .filter(|f| !f.trim().is_empty())
            .map(|f| env.expand(f.trim()));
        let (allowed_senders, tokens) = senders(e.allowed_senders, e.tokens)?;
        let authserv_id = e
            .authserv_id
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty());
        if !allowed_senders.is_empty()
            && authserv_id.is_none()
            && tokens.len() < allowed_senders.len()
        {
            return Err(ConfigError::invalid(
                &key("authserv_id"),
                "a From: line can be forged: name the receiving server's authserv-id (trusted for its DKIM/SPF verdict), or give every allowed sender a token",
            ));
        }
        let poll_interval_secs = e.poll_interval_secs.unwrap_or(60);
        if !(1..=1740).contains(&poll_interval_secs) {
            return Err(ConfigError::invalid(
                &key("poll_interval_secs"),
                "must be between 1 and 1740 (an IDLE is renewed within 29 minutes)",
            ));
        }
        Ok(Some(Self {
            username: e.username.unwrap_or_else(|| address.clone()),
            address,
            password,
            imap_host,
            imap_port: e.imap_port.unwrap_or(match imap_security {
                MailSecurity::Plain => 143,
                _ => 993,
            }),
            smtp_host,
            smtp_port: e.smtp_port.unwrap_or(match smtp_security {
                MailSecurity::Tls => 465,
                MailSecurity::StartTls => 587,
                MailSecurity::Plain => 25,
            }),
            imap_security,
            smtp_security,
            ca_file,
            mailbox: e.mailbox.unwrap_or_else(|| "INBOX".into()),
            allowed_senders,
            authserv_id,
            tokens,
            poll_interval_secs,
        }))
    }

    /// The section as TOML, the password and tokens masked.
    pub fn render(&self) -> String {
        let mut out = String::from("[channels.email]\n");
        let senders: Vec<String> = self.allowed_senders.iter().map(|s| quote(s)).collect();
        let _ = writeln!(
            out,
            "address = {}\nusername = {}\npassword = \"{}\"\nimap_host = {}\nimap_port = {}\nimap_security = \"{}\"\nsmtp_host = {}\nsmtp_port = {}\nsmtp_security = \"{}\"\nmailbox = {}\nallowed_senders = [{}]\npoll_interval_secs = {}",
            quote(&self.address),
            quote(&self.username),
            self.password,
            quote(&self.imap_host),
            self.imap_port,
            self.imap_security.as_str(),
            quote(&self.smtp_host),
            self.smtp_port,
            self.smtp_security.as_str(),
            quote(&self.mailbox),
            senders.join(", "),
            self.poll_interval_secs,
        );
        if let Some(ca) = &self.ca_file {
            let _ = writeln!(out, "ca_file = {}", quote(&ca.display().to_string()));
        }
        match &self.authserv_id {
            Some(id) => {
                let _ = writeln!(out, "authserv_id = {}", quote(id));
            }
            None => out.push_str("# authserv_id: not set (only secret addresses count)\n"),
        }
        if !self.tokens.is_empty() {
            out.push_str("[channels.email.tokens]\n");
            for (sender, token) in &self.tokens {
                let _ = writeln!(out, "{} = \"{token}\"", quote(sender));
            }
        }
        out
    }
}

/// Whether `a` looks like `name@domain` (what a config can be checked for).
fn plausible_address(a: &str) -> bool {
    match a.split_once('@') {
        Some((name, domain)) => {
            !name.is_empty()
                && !domain.is_empty()
                && !a
                    .contains(|c: char| c.is_whitespace() || c.is_control() || "<>,;\"".contains(c))
        }
        None => false,
    }
}

/// The allowed senders, lowercased and checked, and their tokens.
fn senders(
    raw_senders: Option<Vec<String>>,
    raw_tokens: Option<BTreeMap<String, String>>,
) -> Result<(Vec<String>, BTreeMap<String, Secret>), ConfigError> {
    let key = |k: &str| format!("channels.email.{k}");
    let mut allowed_senders = Vec::new();
    for sender in raw_senders.unwrap_or_default() {
        let sender = sender.trim().to_ascii_lowercase();
        if !plausible_address(&sender) {
            return Err(ConfigError::invalid(
                &key("allowed_senders"),
                format!("`{sender}` is not an address (name@domain)"),
            ));
        }
        allowed_senders.push(sender);
    }
    let mut tokens = BTreeMap::new();
    for (sender, token) in raw_tokens.unwrap_or_default() {
        let sender = sender.trim().to_ascii_lowercase();
        if !allowed_senders.contains(&sender) {
            return Err(ConfigError::invalid(
                &key("tokens"),
                format!("`{sender}` has a token but is not in allowed_senders"),
            ));
        }
        if token.len() < 12 || !token.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(ConfigError::invalid(
                &key("tokens"),
                format!("the token for `{sender}` must be at least 12 letters and digits"),
            ));
        }
        tokens.insert(sender, Secret::new(token));
    }
    Ok((allowed_senders, tokens))
}

/// How IMAP and SMTP are protected (IMAP has no STARTTLS here).
fn securities(
    imap: Option<String>,
    imap_host: &str,
    smtp: Option<String>,
    smtp_host: &str,
) -> Result<(MailSecurity, MailSecurity), ConfigError> {
    let key = |k: &str| format!("channels.email.{k}");
    let imap_security = security(imap, imap_host, MailSecurity::Tls, &key("imap_security"))?;
    if imap_security == MailSecurity::StartTls {
        return Err(ConfigError::invalid(
            &key("imap_security"),
            "IMAP is spoken over TLS from the first byte (\"tls\", port 993), or \"plain\" to a server on this machine",
        ));
    }
    let smtp_security = security(
        smtp,
        smtp_host,
        MailSecurity::StartTls,
        &key("smtp_security"),
    )?;
    Ok((imap_security, smtp_security))
}

fn host(raw: Option<String>, key: &str) -> Result<String, ConfigError> {
    raw.map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .ok_or_else(|| ConfigError::invalid(key, "the server's host name is needed"))
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// How the connection to `host` is protected: `given`, else TLS (`remote`)
/// to another machine and none on this one. A password and mail in the
/// clear may not cross the network.
fn security(
    given: Option<String>,
    host: &str,
    remote: MailSecurity,
    key: &str,
) -> Result<MailSecurity, ConfigError> {
    let chosen = match given.as_deref().map(str::trim) {
        None => {
            if is_loopback(host) {
                MailSecurity::Plain
            } else {
                remote
            }
        }
        Some("tls") => MailSecurity::Tls,
        Some("starttls") => MailSecurity::StartTls,
        Some("plain") => MailSecurity::Plain,
        Some(other) => {
            return Err(ConfigError::invalid(
                key,
                format!("`{other}`: one of \"tls\", \"starttls\", \"plain\""),
            ));
        }
    };
    if chosen == MailSecurity::Plain && !is_loopback(host) {
        return Err(ConfigError::invalid(
            key,
            format!(
                "\"plain\" to `{host}` would send the password and the mail unencrypted across the network: only a server on this machine may be spoken to in the clear"
            ),
        ));
    }
    Ok(chosen)
}

/// How a connection to a mail server is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailSecurity {
    /// TLS from the first byte (IMAPS 993, SMTPS 465).
    Tls,
    /// SMTP's STARTTLS (587).
    StartTls,
    /// None: a server on this machine only.
    Plain,
}

impl MailSecurity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tls => "tls",
            Self::StartTls => "starttls",
            Self::Plain => "plain",
        }
    }
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(text: &str, env: &Environment) -> Result<Option<EmailConfig>, ConfigError> {
        let raw: RawEmail = toml::from_str(text).unwrap();
        EmailConfig::from_raw(Some(raw), env)
    }

    const BASE: &str = "address = \"Bot@Home.test\"\npassword = \"pw\"\nimap_host = \"127.0.0.1\"\nsmtp_host = \"127.0.0.1\"\n";

    #[test]
    fn an_allowed_sender_needs_a_verdict_or_a_token_and_a_remote_server_is_refused() {
        let env = Environment::with_home("/home/u");
        let c = parse(BASE, &env).unwrap().unwrap();
        assert_eq!(
            (c.address.as_str(), c.username.as_str()),
            ("bot@home.test", "bot@home.test")
        );
        let no_proof = format!("{BASE}allowed_senders = [\"a@b.test\"]\n");
        let e = parse(&no_proof, &env).unwrap_err().to_string();
        assert!(e.contains("authserv_id"), "{e}");
        let with_token = format!("{no_proof}[tokens]\n\"A@b.test\" = \"abcdefghijkl12\"\n");
        let c = parse(&with_token, &env).unwrap().unwrap();
        assert_eq!(c.tokens["a@b.test"].expose(), "abcdefghijkl12");
        assert!(!c.render().contains("abcdefghijkl12"), "{}", c.render());
        let short = format!("{no_proof}[tokens]\n\"a@b.test\" = \"short\"\n");
        assert!(parse(&short, &env).is_err());
        let remote = BASE.replace(
            "imap_host = \"127.0.0.1\"",
            "imap_host = \"imap.example.org\"",
        );
        let c = parse(&remote, &env).unwrap().unwrap();
        assert_eq!((c.imap_security, c.imap_port), (MailSecurity::Tls, 993));
        assert_eq!((c.smtp_security, c.smtp_port), (MailSecurity::Plain, 25));
        let plain = format!("{remote}imap_security = \"plain\"\n");
        let e = parse(&plain, &env).unwrap_err().to_string();
        assert!(
            e.contains("imap.example.org") && e.contains("unencrypted"),
            "{e}"
        );
        let smtp = BASE.replace(
            "smtp_host = \"127.0.0.1\"",
            "smtp_host = \"smtp.example.org\"",
        );
        let c = parse(&smtp, &env).unwrap().unwrap();
        assert_eq!(
            (c.smtp_security, c.smtp_port),
            (MailSecurity::StartTls, 587)
        );
    }

    #[test]
    fn the_password_variable_wins_and_is_never_rendered() {
        let env = Environment::with_home("/home/u").set("HEARTH_EMAIL_PASSWORD", "from-env-pass");
        let c = parse(&BASE.replace("password = \"pw\"\n", ""), &env)
            .unwrap()
            .unwrap();
        assert_eq!(c.password.expose(), "from-env-pass");
        assert!(!c.render().contains("from-env-pass"));
        let none = Environment::with_home("/home/u");
        assert!(parse(&BASE.replace("password = \"pw\"\n", ""), &none).is_err());
    }
}
