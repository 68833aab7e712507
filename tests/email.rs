//! The mail channel against the real servers: a `hearth daemon` process
//! reading the bot's mailbox from Dovecot over IMAP and answering through
//! Postfix, which hands the answer to Dovecot for the person's mailbox,
//! read here from disk (`support::mail`). The model is the slow
//! OpenAI-compatible fake, which answers "Reply to: <what it was asked>".
//!
//! Hostile first, each with its control beside it: a forged `From:` (no
//! verdict, a verdict from another server, a failing verdict, a wrong
//! secret address) is ignored and logged; the same sender with the
//! receiving server's passing verdict, or with the right secret address,
//! is answered in the thread. Old mail is not answered on the first run.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;

use crate::common::documents::reader;
use crate::common::{Sandbox, assert_no_panic};
use crate::support::daemon_process::{Daemon, box_shows_listener_failing, until};
use crate::support::mail::{DOMAIN, MailHouse, PASSWORD, header, mail, passed};
use crate::support::slow_model::SlowModel;

const ANN: &str = "ann@example.test";
const BOT: &str = "bot@example.test";
const TOKEN: &str = "k7q2m9x4w1z8";
const GATEWAY_TOKEN: &str = "gateway-token-for-the-mail-test";
const LATE: &str = "Late submissions lose five points for each day past the deadline.";

fn config(sandbox: &Sandbox, house: &MailHouse, model: &SlowModel, extra: &str) -> PathBuf {
    sandbox.config(&format!(
        r#"[model]
path = "/nonexistent/none.gguf"
[memory]
enabled = false
[channels.email]
address = "{BOT}"
password = "{PASSWORD}"
imap_host = "127.0.0.1"
imap_port = {imap}
smtp_host = "127.0.0.1"
smtp_port = {smtp}
allowed_senders = ["{ANN}"]
authserv_id = "mx.example.test"
[channels.email.tokens]
"{ANN}" = "{TOKEN}"
[providers.openai]
base_url = "{model}"
model = "slow"
[routing]
default_provider = "openai"
[log]
level = "info"
{extra}
"#,
        imap = house.imap,
        smtp = house.smtp,
        model = model.base_url,
    ))
}

/// What `hearth doctor` printed.
fn doctor(sandbox: &Sandbox, config: &std::path::Path) -> String {
    let out = sandbox
        .hearth_process()
        .args(["--config", config.to_str().unwrap(), "doctor"])
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The text of a reply the bot sent (its body is base64).
fn text_of(reply: &str) -> String {
    let body = reply.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    let joined: String = body.split_whitespace().collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(joined)
        .unwrap_or_else(|e| panic!("{e}: {reply}"));
    String::from_utf8(bytes).unwrap()
}

async fn replies(house: &MailHouse, n: usize, daemon: &Daemon) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    loop {
        let got = house.mailbox("ann");
        if got.len() >= n {
            return got;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} of {n} replies in Ann's mailbox:\n{}\n{}",
            got.len(),
            daemon.log(),
            house.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The one reply among `got` to the mail `id`.
fn answer<'a>(got: &'a [String], id: &str) -> &'a String {
    let wanted = format!("<{id}>");
    let found: Vec<&String> = got
        .iter()
        .filter(|r| header(r, "In-Reply-To").as_deref() == Some(wanted.as_str()))
        .collect();
    assert_eq!(found.len(), 1, "replies to {id}: {got:#?}");
    found[0]
}

/// A mail with `pdf` attached as `name`.
fn with_pdf(extra: &str, subject: &str, id: &str, text: &str, name: &str, pdf: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(pdf);
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(76)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "{extra}From: <{ANN}>\r\nTo: <{BOT}>\r\nSubject: {subject}\r\nMessage-ID: <{id}>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"part\"\r\n\r\n--part\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n--part\r\nContent-Type: application/pdf; name=\"{name}\"\r\nContent-Disposition: attachment; filename=\"{name}\"\r\nContent-Transfer-Encoding: base64\r\n\r\n{}\r\n--part--\r\n",
        lines.join("\r\n")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vouched_mail_is_answered_in_its_thread_forged_ones_and_old_mail_are_not() {
    let Some(house) = MailHouse::start() else {
        return;
    };
    let model = SlowModel::start(3, Duration::from_millis(20)).await;
    // A full mailbox before the first run, each mail one that would be
    // answered if it were new.
    let old: Vec<String> = (0..500)
        .map(|i| {
            let id = format!("old{i}@{DOMAIN}");
            mail(
                &passed(DOMAIN),
                ANN,
                BOT,
                "old",
                &id,
                &format!("OLD MAIL {i}"),
            )
        })
        .collect();
    house.deliver("bot", &old);
    let sandbox = Sandbox::new();
    let config = config(&sandbox, &house, &model, "");
    // `hearth doctor` logs in and says what it found; a wrong password
    // and a wrong port are named with their fix.
    let said = doctor(&sandbox, &config);
    let want = format!(
        "IMAP 127.0.0.1:{} takes the login as {BOT} (500 mails in INBOX; IDLE), SMTP 127.0.0.1:{} answers",
        house.imap, house.smtp
    );
    assert!(said.contains(&want), "{said}");
    let other = Sandbox::new();
    let text = std::fs::read_to_string(&config).unwrap();
    let wrong = other.config(&text.replace(
        &format!("password = \"{PASSWORD}\""),
        "password = \"guess\"",
    ));
    let said = doctor(&other, &wrong);
    assert!(
        said.contains("IMAP login as `bot@example.test` refused")
            && said.contains("username and password"),
        "{said}"
    );
    let port = format!("imap_port = {}", house.imap);
    let wrong = other.config(&text.replace(&port, "imap_port = 9"));
    let said = doctor(&other, &wrong);
    assert!(
        said.contains("cannot reach 127.0.0.1:9") && said.contains("is the server running"),
        "{said}"
    );
    let daemon = Daemon::start(&sandbox, &config);
    daemon.wait_log(
        "its 500 mails are old and are not answered",
        Duration::from_secs(60),
    );
    daemon.wait_log("email: listening to INBOX", Duration::from_secs(60));

    // Hostile: Ann's address on mails the receiving server did not vouch for.
    let forged = [
        String::new(),
        "Authentication-Results: mx.attacker.test; dkim=pass header.d=example.test\r\n".to_string(),
        "Authentication-Results: mx.example.test; dkim=fail header.d=example.test; spf=fail smtp.mailfrom=example.test\r\n".to_string(),
    ];
    for (i, verdict) in forged.iter().enumerate() {
        let id = format!("forged{i}@elsewhere.test");
        house.send(
            ANN,
            BOT,
            &mail(verdict, ANN, BOT, "hello", &id, &format!("FORGED {i}")),
        );
    }
    let wrong = format!("bot+wrongtoken1234@{DOMAIN}");
    house.send(
        ANN,
        &wrong,
        &mail(
            "",
            ANN,
            &wrong,
            "hello",
            "forged3@elsewhere.test",
            "FORGED 3",
        ),
    );
    // Controls: the receiving server's passing verdict, in a thread; then
    // the secret address with no verdict at all.
    let thread = format!(
        "References: <c0@{DOMAIN}>\r\nIn-Reply-To: <c0@{DOMAIN}>\r\n{}",
        passed(DOMAIN)
    );
    house.send(ANN, BOT, &mail(&thread, ANN, BOT, "Re: the plan", "c1@example.test", "CONTROL what is the plan?\r\n\r\nOn Mon, 30 Nov 2026, hearth wrote:\r\n> QUOTED BEFORE, a long thread\r\n"));
    let secret = format!("bot+{TOKEN}@{DOMAIN}");
    house.send(
        ANN,
        &secret,
        &mail(
            "",
            ANN,
            &secret,
            "by token",
            "t1@example.test",
            "TOKEN MAIL",
        ),
    );

    let got = replies(&house, 2, &daemon).await;
    let first = answer(&got, "c1@example.test");
    for (name, want) in [
        ("From", "<bot@example.test>"),
        ("To", "<ann@example.test>"),
        ("In-Reply-To", "<c1@example.test>"),
        ("References", "<c0@example.test> <c1@example.test>"),
        ("Subject", "Re: the plan"),
        ("Auto-Submitted", "auto-replied"),
    ] {
        assert_eq!(
            header(first, name).as_deref(),
            Some(want),
            "{name}: {first}"
        );
    }
    assert!(
        text_of(first).contains("Reply to: CONTROL what is the plan?"),
        "{first}"
    );
    let second = answer(&got, "t1@example.test");
    assert_eq!(
        header(second, "In-Reply-To").as_deref(),
        Some("<t1@example.test>")
    );
    assert_eq!(header(second, "Subject").as_deref(), Some("Re: by token"));
    assert!(text_of(second).contains("TOKEN MAIL"), "{second}");
    // Each forged mail was read (it came before the controls) and ignored.
    let log = daemon.log();
    assert_eq!(log.matches("is not vouched for").count(), 4, "{log}");
    assert_eq!(model.asked("FORGED"), 0);
    assert_eq!(model.asked("OLD MAIL"), 0);
    // The thread quoted below the new words is not given to the model.
    assert_eq!(model.asked("QUOTED BEFORE"), 0);

    // A PDF goes the document path: read, its answering page given to the
    // turn, kept for Ann.
    let pdf = with_pdf(
        &passed(DOMAIN),
        "the reader",
        "d1@example.test",
        "What happens to late submissions?",
        "reader.pdf",
        &reader(30, 17, LATE),
    );
    house.send(ANN, BOT, &pdf);
    let got = replies(&house, 3, &daemon).await;
    answer(&got, "d1@example.test");
    assert!(model.asked(LATE) >= 1, "{}", daemon.log());
    assert!(model.asked("reader.pdf, page 17:") >= 1, "{}", daemon.log());
    let listed = sandbox
        .hearth_process()
        .args(["--config", config.to_str().unwrap(), "docs", "list"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("reader.pdf (pdf, 30 pages)") && listed.contains(ANN),
        "{listed}"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(house.mailbox("ann").len(), 3, "nothing more");
    let (_, log) = daemon.term();
    assert_no_panic(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_imap_server_away_a_minute_and_a_restart_lose_and_double_nothing() {
    let Some(house) = MailHouse::start() else {
        return;
    };
    let model = SlowModel::start(3, Duration::from_millis(20)).await;
    let sandbox = Sandbox::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gateway =
        format!("[channels.gateway]\nlisten = \"127.0.0.1:{port}\"\ntoken = \"{GATEWAY_TOKEN}\"\n");
    let config = config(&sandbox, &house, &model, &gateway);
    let daemon = Daemon::start(&sandbox, &config);
    daemon.wait_log("email: listening to INBOX", Duration::from_secs(60));
    let ask = |n: usize| {
        let id = format!("q{n}@{DOMAIN}");
        house.send(
            ANN,
            BOT,
            &mail(
                &passed(DOMAIN),
                ANN,
                BOT,
                "question",
                &id,
                &format!("QUESTION {n}"),
            ),
        );
    };
    ask(1);
    replies(&house, 1, &daemon).await;

    // Dovecot away for a minute; meanwhile a mail waits in Postfix's queue.
    house.stop_dovecot();
    until("the listener to notice", Duration::from_secs(30), || {
        daemon.log().contains("listener failed; restarting")
    })
    .await;
    ask(2);
    // The page's box and /metrics say so, with the cause.
    let cause = format!("cannot reach 127.0.0.1:{}", house.imap);
    box_shows_listener_failing(port, GATEWAY_TOKEN, "email", &cause).await;
    tokio::time::sleep(Duration::from_secs(55)).await;
    house.start_dovecot();
    let deadline = std::time::Instant::now() + Duration::from_secs(150);
    while house.mailbox("ann").len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "{}\n{}",
            daemon.log(),
            house.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // And a restart: the cursor and the inbox carry over.
    let (_, log) = daemon.term();
    assert_no_panic(&log);
    let daemon = Daemon::start(&sandbox, &config);
    daemon.wait_log("email: listening to INBOX", Duration::from_secs(60));
    ask(3);
    let got = replies(&house, 3, &daemon).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(house.mailbox("ann").len(), 3, "{}", daemon.log());
    for n in 1..=3 {
        answer(&got, &format!("q{n}@{DOMAIN}"));
        assert_eq!(model.asked(&format!("QUESTION {n}")), 1, "{}", daemon.log());
    }
    let status = sandbox
        .hearth_process()
        .args(["--config", config.to_str().unwrap(), "status"])
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("read up to UID 3 (UIDVALIDITY")
            && status.contains("the threads of 3 mails"),
        "{status}"
    );
    let (_, log) = daemon.term();
    assert_no_panic(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_a_home_servers_own_authority_is_trusted_when_named_and_refused_when_not() {
    let Some(house) = MailHouse::start() else {
        return;
    };
    let model = SlowModel::start(3, Duration::from_millis(20)).await;
    let sandbox = Sandbox::new();
    let tls = format!(
        "ca_file = \"{}\"\nimap_security = \"tls\"\nsmtp_security = \"starttls\"\n",
        house.ca().display()
    );
    let text = std::fs::read_to_string(config(&sandbox, &house, &model, "")).unwrap();
    let text = text
        .replace(
            &format!("imap_port = {}", house.imap),
            &format!("imap_port = {}", house.imaps),
        )
        .replace(
            "[channels.email.tokens]",
            &format!("{tls}[channels.email.tokens]"),
        );
    // Hostile first: the same servers, their authority not named.
    let other = Sandbox::new();
    let untrusted =
        other.config(&text.replace(&format!("ca_file = \"{}\"\n", house.ca().display()), ""));
    let said = doctor(&other, &untrusted);
    let refused = format!(
        "TLS with 127.0.0.1:{}: invalid peer certificate: UnknownIssuer",
        house.imaps
    );
    assert!(
        said.contains(&refused) && said.contains("set [channels.email] ca_file"),
        "{said}"
    );
    let config = sandbox.config(&text);
    let said = doctor(&sandbox, &config);
    let want = format!("IMAP 127.0.0.1:{} takes the login as {BOT}", house.imaps);
    assert!(said.contains(&want), "{said}");

    let daemon = Daemon::start(&sandbox, &config);
    daemon.wait_log("email: listening to INBOX", Duration::from_secs(60));
    house.send(
        ANN,
        BOT,
        &mail(
            &passed(DOMAIN),
            ANN,
            BOT,
            "sealed",
            "s1@example.test",
            "SEALED QUESTION",
        ),
    );
    let got = replies(&house, 1, &daemon).await;
    assert_eq!(
        header(&got[0], "In-Reply-To").as_deref(),
        Some("<s1@example.test>")
    );
    assert!(text_of(&got[0]).contains("SEALED QUESTION"));
    // Both legs were encrypted: the servers' own words.
    let logs = house.logs();
    assert!(
        logs.lines().any(
            |l| l.contains("imap-login: Info: Login: user=<bot@example.test>")
                && l.contains(", TLS,")
        ),
        "{logs}"
    );
    assert!(
        logs.contains("TLS connection established from localhost[127.0.0.1]: TLSv1.3"),
        "{logs}"
    );
    let (_, log) = daemon.term();
    assert_no_panic(&log);
}
