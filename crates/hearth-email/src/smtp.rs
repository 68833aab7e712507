//! Sending over SMTP (RFC 5321): greeting, EHLO, AUTH PLAIN where the
//! server offers it, one envelope, DATA with dot-stuffing, QUIT. Every
//! reply is read whole (continuation lines) and checked; every step has a
//! deadline.

use std::time::Duration;

use super::EmailError;
use super::compose::Outgoing;
use super::tls::{Conn, Security, Trust};
use base64::Engine as _;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Who sends, through which server.
pub struct Relay<'a> {
    pub server: (&'a str, u16),
    pub security: Security,
    pub trust: &'a Trust,
    pub username: &'a str,
    pub password: &'a str,
    pub from: &'a str,
    pub timeout: Duration,
}

impl Relay<'_> {
    fn name(&self) -> String {
        format!("{}:{}", self.server.0, self.server.1)
    }

    /// Connects, reads the greeting, says EHLO and logs in where the
    /// server offers AUTH PLAIN.
    async fn open(&self) -> Result<Session<'_>, EmailError> {
        let (host, port) = self.server;
        let stream = tokio::time::timeout(
            self.timeout,
            super::tls::connect(self.trust, host, port, self.security),
        )
        .await
        .map_err(|_| self.late())??;
        let mut s = Session {
            io: BufReader::new(stream),
            relay: self,
        };
        s.expect("greeting", None, 220).await?;
        let mut ehlo = s.expect("EHLO", Some("EHLO hearth"), 250).await?;
        if self.security == Security::StartTls {
            if !ehlo
                .lines()
                .any(|l| l.trim().eq_ignore_ascii_case("STARTTLS"))
            {
                return Err(EmailError::NoStartTls {
                    server: self.name(),
                });
            }
            s.expect("STARTTLS", Some("STARTTLS"), 220).await?;
            let plain = s.io.into_inner();
            let tls =
                tokio::time::timeout(self.timeout, self.trust.wrap(host, &self.name(), plain))
                    .await
                    .map_err(|_| self.late())??;
            s = Session {
                io: BufReader::new(tls),
                relay: self,
            };
            ehlo = s.expect("EHLO", Some("EHLO hearth"), 250).await?;
        }
        let offers_plain = ehlo.lines().any(|l| {
            let l = l.to_ascii_uppercase();
            l.starts_with("AUTH") && l.split([' ', '=']).any(|w| w == "PLAIN")
        });
        if offers_plain && !self.username.is_empty() {
            let token = base64::engine::general_purpose::STANDARD
                .encode(format!("\0{}\0{}", self.username, self.password));
            s.expect("AUTH", Some(&format!("AUTH PLAIN {token}")), 235)
                .await?;
        }
        Ok(s)
    }

    /// Whether the server takes the bot's greeting (and login): what
    /// `hearth doctor` checks.
    pub async fn hello(&self) -> Result<(), EmailError> {
        let mut s = self.open().await?;
        s.expect("QUIT", Some("QUIT"), 221).await?;
        Ok(())
    }

    /// Hands `mail` to the server; `Ok` once it answered 250 to its data.
    pub async fn send(&self, mail: &Outgoing) -> Result<(), EmailError> {
        let io = |source| EmailError::SmtpIo {
            server: self.name(),
            source,
        };
        let mut s = self.open().await?;
        s.expect(
            "MAIL FROM",
            Some(&format!("MAIL FROM:<{}>", self.from)),
            250,
        )
        .await?;
        s.expect("RCPT TO", Some(&format!("RCPT TO:<{}>", mail.to)), 250)
            .await?;
        s.expect("DATA", Some("DATA"), 354).await?;
        let mut data = Vec::with_capacity(mail.bytes.len() + 64);
        for line in mail.bytes.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.first() == Some(&b'.') {
                data.push(b'.');
            }
            data.extend_from_slice(line);
            data.extend_from_slice(b"\r\n");
        }
        data.extend_from_slice(b".\r\n");
        s.io.get_mut().write_all(&data).await.map_err(io)?;
        s.expect("the mail", None, 250).await?;
        // The mail is taken; a failed goodbye changes nothing.
        let _ = s.expect("QUIT", Some("QUIT"), 221).await;
        Ok(())
    }

    fn late(&self) -> EmailError {
        EmailError::Timeout {
            server: self.name(),
            seconds: self.timeout.as_secs(),
        }
    }
}

struct Session<'a> {
    io: BufReader<Conn>,
    relay: &'a Relay<'a>,
}

impl Session<'_> {
    /// Sends `command` (if any), reads the whole reply and checks its code.
    async fn expect(
        &mut self,
        step: &'static str,
        command: Option<&str>,
        code: u16,
    ) -> Result<String, EmailError> {
        let relay = self.relay;
        let io = |source| EmailError::SmtpIo {
            server: relay.name(),
            source,
        };
        tokio::time::timeout(relay.timeout, async {
            if let Some(c) = command {
                self.io
                    .get_mut()
                    .write_all(format!("{c}\r\n").as_bytes())
                    .await
                    .map_err(io)?;
            }
            let mut reply = String::new();
            loop {
                let mut line = String::new();
                if self.io.read_line(&mut line).await.map_err(io)? == 0 {
                    return Err(io(std::io::ErrorKind::UnexpectedEof.into()));
                }
                let last = line.as_bytes().get(3) != Some(&b'-');
                reply.push_str(line.get(4..).unwrap_or("").trim_end());
                reply.push('\n');
                if last {
                    let got: u16 = line.get(..3).and_then(|c| c.parse().ok()).unwrap_or(0);
                    if got != code {
                        return Err(EmailError::Smtp {
                            server: relay.name(),
                            step,
                            reply: format!("{} {}", got, reply.trim()),
                        });
                    }
                    return Ok(reply);
                }
            }
        })
        .await
        .map_err(|_| relay.late())?
    }
}
