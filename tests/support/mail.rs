//! Real mail servers for the tests: Debian's Dovecot (IMAP and LMTP) and
//! Postfix (SMTP), installed by `make test-mail`, each instance with its own
//! configuration, queue and mailboxes in a folder of its own under
//! `/var/tmp` and on free 127.0.0.1 ports, so that tests run side by side.
//! Postfix takes every mail for `example.test` and hands it to Dovecot over
//! LMTP, as a home server relaying for its people does; every user's
//! password is `secret`, every mailbox a Maildir under `home/USER`. Both
//! also speak TLS with a certificate for 127.0.0.1 signed by a certificate
//! authority made for the instance ([`MailHouse::ca`]): Dovecot IMAPS on
//! [`MailHouse::imaps`], Postfix STARTTLS on [`MailHouse::smtp`].
//! Stopped when dropped. Both need root, so the tests that use them say so
//! and end early for a plain user ([`MailHouse::start`] is `None`).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub const DOMAIN: &str = "example.test";
/// The receiving server's name in the `Authentication-Results` it writes.
pub const AUTHSERV: &str = "mx.example.test";
pub const PASSWORD: &str = "secret";

pub struct MailHouse {
    dir: tempfile::TempDir,
    pub imap: u16,
    pub imaps: u16,
    pub smtp: u16,
    pub lmtp: u16,
}

impl MailHouse {
    /// Both servers up and answering; `None` (said) for a plain user.
    pub fn start() -> Option<Self> {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("the mail tests run Postfix, which needs root: not run as this user");
            return None;
        }
        for program in ["dovecot", "postfix"] {
            assert!(
                Command::new("sh")
                    .args(["-c", &format!("command -v {program}")])
                    .output()
                    .is_ok_and(|o| o.status.success()),
                "{program} is missing: run `make test-mail` as root"
            );
        }
        let dir = tempfile::Builder::new()
            .prefix("hearth-mail-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let house = Self {
            imap: free_port(),
            imaps: free_port(),
            smtp: free_port(),
            lmtp: free_port(),
            dir,
        };
        house.write_configs();
        house.start_dovecot();
        house.start_postfix();
        Some(house)
    }

    /// The certificate authority (PEM) that signed both servers' certificate.
    pub fn ca(&self) -> PathBuf {
        self.path("tls/ca.pem")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn dovecot_conf(&self) -> String {
        self.path("dovecot/dovecot.conf").display().to_string()
    }

    fn start_postfix(&self) {
        let conf = self.path("postfix/conf").display().to_string();
        self.detached(
            Command::new("postfix").args(["-c", &conf, "start"]),
            "postfix/start.log",
        );
        wait_port(self.smtp);
    }

    /// Runs a command that leaves a daemon behind, its output to `log`: a
    /// file, not a pipe that the daemon would hold and `output()` wait on
    /// for ever.
    fn detached(&self, command: &mut Command, log: &str) {
        let path = self.path(log);
        let file = std::fs::File::create(&path).unwrap();
        let status = command
            .stdin(std::process::Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .status()
            .unwrap();
        let said = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(status.success(), "{command:?}: {said}");
    }

    pub fn start_dovecot(&self) {
        self.detached(
            Command::new("dovecot").args(["-c", &self.dovecot_conf()]),
            "dovecot/start.log",
        );
        wait_port(self.imap);
        wait_port(self.lmtp);
    }

    /// Dovecot gone: its port refuses, its sessions are cut.
    pub fn stop_dovecot(&self) {
        run(Command::new("dovecot").args(["-c", &self.dovecot_conf(), "stop"]));
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", self.imap)).is_ok() {
            assert!(Instant::now() < deadline, "Dovecot did not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends `mail` (headers and body, lines joined by `\r\n`) from `from`
    /// to `to` through Postfix.
    pub fn send(&self, from: &str, to: &str, mail: &str) {
        let mut s = Smtp::open(self.smtp, "EHLO client.example.test");
        s.transaction(from, to, mail);
        s.say("QUIT", 221);
    }

    /// Puts each of `mails` into `user`'s mailbox at once, straight through
    /// Dovecot's LMTP (one session for all of them).
    pub fn deliver(&self, user: &str, mails: &[String]) {
        let mut s = Smtp::open(self.lmtp, "LHLO client.example.test");
        for mail in mails {
            s.transaction("old@example.test", &format!("{user}@{DOMAIN}"), mail);
        }
        s.say("QUIT", 221);
    }

    /// Every mail in `user`'s mailbox, oldest first.
    pub fn mailbox(&self, user: &str) -> Vec<String> {
        let root = self.path("home").join(user).join("Maildir");
        let mut files: Vec<PathBuf> = ["new", "cur"]
            .iter()
            .filter_map(|d| std::fs::read_dir(root.join(d)).ok())
            .flat_map(|entries| entries.flatten().map(|e| e.path()))
            .collect();
        // Maildir names: `SECONDS.MMICROSECONDSPPID.HOST…`, in delivery order.
        files.sort_by_key(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            let mut parts = name.split('.');
            let secs: u64 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
            let micros: u64 = parts
                .next()
                .and_then(|m| m.strip_prefix('M')?.split('P').next()?.parse().ok())
                .unwrap_or(0);
            (secs, micros, name)
        });
        // Dovecot keeps them with bare line feeds; given back as mail is
        // written, CRLF.
        files
            .iter()
            .filter_map(|p| std::fs::read(p).ok())
            .map(|b| {
                String::from_utf8_lossy(&b)
                    .replace("\r\n", "\n")
                    .replace('\n', "\r\n")
            })
            .collect()
    }

    /// What the servers logged, for a failure's message.
    pub fn logs(&self) -> String {
        let read = |p: &str| std::fs::read_to_string(self.path(p)).unwrap_or_default();
        format!(
            "dovecot:\n{}\npostfix:\n{}",
            read("dovecot/dovecot.log"),
            read("postfix/postfix.log")
        )
    }

    fn write_configs(&self) {
        let d = self.dir.path();
        for sub in [
            "home",
            "dovecot",
            "postfix/conf",
            "postfix/queue",
            "postfix/data",
            "tls",
        ] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        make_certificates(&d.join("tls"));
        // Dovecot's users (uid mail) and Postfix's programs reach into it.
        chmod(d, 0o755);
        chown(&d.join("home"), "mail:mail");
        chown(&d.join("postfix/data"), "postfix");
        std::fs::write(d.join("dovecot/dovecot.conf"), self.dovecot_text()).unwrap();
        std::fs::write(d.join("postfix/conf/main.cf"), self.postfix_main()).unwrap();
        std::fs::write(d.join("postfix/conf/master.cf"), self.postfix_master()).unwrap();
    }

    fn dovecot_text(&self) -> String {
        let d = self.path("dovecot").display().to_string();
        let home = self.path("home").display().to_string();
        format!(
            r#"protocols = imap lmtp
listen = 127.0.0.1
base_dir = {d}/run
state_dir = {d}/state
log_path = {d}/dovecot.log
default_internal_user = dovecot
default_login_user = dovenull
first_valid_uid = 0
ssl = yes
ssl_cert = <{tls}/cert.pem
ssl_key = <{tls}/key.pem
disable_plaintext_auth = no
auth_mechanisms = plain login
mail_location = maildir:~/Maildir
recipient_delimiter = +
passdb {{
  driver = static
  args = password={PASSWORD}
}}
userdb {{
  driver = static
  args = uid=mail gid=mail home={home}/%n
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {imaps}
  }}
}}
service lmtp {{
  inet_listener lmtp {{
    address = 127.0.0.1
    port = {lmtp}
  }}
}}
"#,
            imap = self.imap,
            imaps = self.imaps,
            lmtp = self.lmtp,
            tls = self.path("tls").display(),
        )
    }

    fn postfix_main(&self) -> String {
        let p = self.path("postfix").display().to_string();
        format!(
            r#"compatibility_level = 3.6
queue_directory = {p}/queue
data_directory = {p}/data
command_directory = /usr/sbin
daemon_directory = /usr/lib/postfix/sbin
meta_directory = /etc/postfix
mail_owner = postfix
setgid_group = postdrop
myhostname = {AUTHSERV}
mydomain = {DOMAIN}
myorigin = {DOMAIN}
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
virtual_mailbox_domains = {DOMAIN}
virtual_transport = lmtp:inet:127.0.0.1:{lmtp}
recipient_delimiter = +
maillog_file = {p}/postfix.log
smtpd_tls_cert_file = {tls}/cert.pem
smtpd_tls_key_file = {tls}/key.pem
smtpd_tls_security_level = may
smtpd_tls_loglevel = 1
smtputf8_enable = no
biff = no
alias_maps =
alias_database =
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
"#,
            lmtp = self.lmtp,
            tls = self.path("tls").display(),
        )
    }

    fn postfix_master(&self) -> String {
        let mut text = format!("127.0.0.1:{} inet n - n - - smtpd\n", self.smtp);
        for (name, kind, private, limit, program) in [
            ("pickup", "unix", "n", "1", "pickup"),
            ("cleanup", "unix", "n", "0", "cleanup"),
            ("qmgr", "unix", "n", "1", "qmgr"),
            ("rewrite", "unix", "-", "-", "trivial-rewrite"),
            ("bounce", "unix", "-", "0", "bounce"),
            ("defer", "unix", "-", "0", "bounce"),
            ("trace", "unix", "-", "0", "bounce"),
            ("verify", "unix", "-", "1", "verify"),
            ("flush", "unix", "n", "0", "flush"),
            ("proxymap", "unix", "-", "-", "proxymap"),
            ("smtp", "unix", "-", "-", "smtp"),
            ("relay", "unix", "-", "-", "smtp"),
            ("showq", "unix", "n", "-", "showq"),
            ("error", "unix", "-", "-", "error"),
            ("retry", "unix", "-", "-", "error"),
            ("discard", "unix", "-", "-", "discard"),
            ("lmtp", "unix", "-", "-", "lmtp"),
            ("anvil", "unix", "-", "1", "anvil"),
            ("scache", "unix", "-", "1", "scache"),
            // smtpd's STARTTLS needs it: without, "TLS not available".
            ("tlsmgr", "unix", "-", "1", "tlsmgr"),
            ("postlog", "unix-dgram", "n", "1", "postlogd"),
        ] {
            text.push_str(&format!(
                "{name} {kind} {private} - n - {limit} {program}\n"
            ));
        }
        text
    }
}

impl Drop for MailHouse {
    fn drop(&mut self) {
        let conf = self.path("postfix/conf").display().to_string();
        let _ = Command::new("postfix").args(["-c", &conf, "stop"]).output();
        let _ = Command::new("dovecot")
            .args(["-c", &self.dovecot_conf(), "stop"])
            .output();
    }
}

/// A mail from `from` to `to`, `extra` header lines first (each ending in
/// `\r\n`), with `body` as plain text.
pub fn mail(extra: &str, from: &str, to: &str, subject: &str, id: &str, body: &str) -> String {
    format!(
        "{extra}From: <{from}>\r\nTo: <{to}>\r\nSubject: {subject}\r\nMessage-ID: <{id}>\r\nDate: Thu, 03 Dec 2026 09:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n"
    )
}

/// The verdict the receiving server writes on a mail whose DKIM signature
/// for `domain` it checked and found good.
pub fn passed(domain: &str) -> String {
    format!(
        "Authentication-Results: {AUTHSERV}; dkim=pass header.d={domain}; spf=pass smtp.mailfrom={domain}\r\n"
    )
}

/// The value of header `name` in `mail` (unfolded), if it has one.
pub fn header(mail: &str, name: &str) -> Option<String> {
    let head = mail.split("\r\n\r\n").next().unwrap_or(mail);
    let mut value: Option<String> = None;
    for line in head.split("\r\n") {
        if let Some(v) = value.as_mut().filter(|_| line.starts_with([' ', '\t'])) {
            v.push(' ');
            v.push_str(line.trim());
        } else if value.is_some() {
            break;
        } else if let Some((_, v)) = line
            .split_once(':')
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            value = Some(v.trim().to_string());
        }
    }
    value
}

/// A client for SMTP and LMTP, the two alike: each reply read whole and
/// its code checked.
struct Smtp {
    reader: BufReader<TcpStream>,
}

impl Smtp {
    fn open(port: u16, hello: &str) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut s = Self {
            reader: BufReader::new(stream),
        };
        s.reply(220);
        s.say(hello, 250);
        s
    }

    fn say(&mut self, line: &str, code: u16) -> String {
        self.reader
            .get_mut()
            .write_all(format!("{line}\r\n").as_bytes())
            .unwrap();
        self.reply(code)
    }

    fn reply(&mut self, code: u16) -> String {
        let mut all = String::new();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            all.push_str(&line);
            if line.as_bytes().get(3) != Some(&b'-') {
                break;
            }
        }
        assert!(
            all.starts_with(&code.to_string()),
            "wanted {code}, got {all}"
        );
        all
    }

    fn transaction(&mut self, from: &str, to: &str, mail: &str) {
        self.say(&format!("MAIL FROM:<{from}>"), 250);
        self.say(&format!("RCPT TO:<{to}>"), 250);
        self.say("DATA", 354);
        let mut data = String::new();
        for line in mail.split("\r\n") {
            if line.starts_with('.') {
                data.push('.');
            }
            data.push_str(line);
            data.push_str("\r\n");
        }
        data.push_str(".\r\n");
        self.reader.get_mut().write_all(data.as_bytes()).unwrap();
        self.reply(250);
    }
}

/// A certificate authority, and a certificate for 127.0.0.1 it signed.
fn make_certificates(dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    run(Command::new("openssl")
        .current_dir(dir)
        .args(["req", "-x509"])
        .args(ec)
        .args([
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=hearth test mail CA",
        ]));
    run(Command::new("openssl")
        .current_dir(dir)
        .arg("req")
        .args(ec)
        .args([
            "-keyout",
            "key.pem",
            "-out",
            "cert.csr",
            "-subj",
            "/CN=127.0.0.1",
        ]));
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(Command::new("openssl").current_dir(dir).args([
        "x509",
        "-req",
        "-in",
        "cert.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "cert.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    ]));
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing answers on port {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn run(command: &mut Command) {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn chown(path: &Path, owner: &str) {
    run(Command::new("chown").arg(owner).arg(path));
}
