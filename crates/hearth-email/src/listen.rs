//! Receiving: log in over IMAP, look at the mailbox, hand each new mail to
//! the inbox, wait (IDLE where the server has it, else a poll), again.
//!
//! On the first run (no cursor, or the mailbox was rebuilt under a new
//! UIDVALIDITY) what the mailbox holds is old mail: the cursor is set past
//! it and none of it is answered. After that, a mail is fetched without
//! marking it read (`BODY.PEEK`), recorded in the inbox or ignored with a
//! log line saying why, and only then does the cursor move past it and is
//! it marked `\Seen`.

use std::time::Duration;

use futures::TryStreamExt;

use hearth_channel::{ChannelMessage, Intake};

use super::state::{Cursor, Thread};
use super::verdict::{Evidence, proof};
use super::{EmailChannel, EmailError, NAME, inbound};

type Session = async_imap::Session<super::tls::Conn>;

impl EmailChannel {
    pub(super) async fn listen_once(&self, intake: &Intake) -> Result<(), EmailError> {
        let mut session = self.login().await?;
        let idle = self.within(session.capabilities()).await?.has_str("IDLE");
        let mailbox = self.within(session.select(&self.settings.mailbox)).await?;
        let validity = mailbox.uid_validity.unwrap_or(0);
        let mut cursor = match self.state.cursor() {
            Some(c) if c.uid_validity == validity => c,
            saved => {
                let last_uid = match mailbox.uid_next {
                    Some(next) => next.saturating_sub(1),
                    // A server that does not say UIDNEXT: the highest UID
                    // there, so that none of what is there counts as new.
                    None => self
                        .within(session.uid_search("ALL"))
                        .await?
                        .into_iter()
                        .max()
                        .unwrap_or(0),
                };
                if saved.is_some() {
                    tracing::warn!(
                        "email: {} was rebuilt (new UIDVALIDITY): its {} mails are taken as read",
                        self.settings.mailbox,
                        mailbox.exists
                    );
                } else {
                    tracing::info!(
                        "email: first look at {}: its {} mails are old and are not answered",
                        self.settings.mailbox,
                        mailbox.exists
                    );
                }
                let c = Cursor {
                    uid_validity: validity,
                    last_uid,
                };
                self.state.save_cursor(c)?;
                c
            }
        };
        tracing::info!(
            "email: listening to {} as {} (IDLE: {idle})",
            self.settings.mailbox,
            self.settings.username
        );
        self.healthy
            .store(true, std::sync::atomic::Ordering::Relaxed);
        loop {
            self.take_new(&mut session, &mut cursor, intake).await?;
            if intake.is_closed() {
                let _ = self.within(session.logout()).await;
                return Ok(());
            }
            session = self.wait(session, idle, intake).await?;
        }
    }

    pub(super) async fn login(&self) -> Result<Session, EmailError> {
        let (host, port) = (&self.settings.imap.0, self.settings.imap.1);
        let server = format!("{host}:{port}");
        let security = self.settings.imap_security;
        let conn = tokio::time::timeout(
            self.settings.timeout,
            super::tls::connect(&self.trust, host, port, security),
        )
        .await
        .map_err(|_| self.late(&server))??;
        let mut client = async_imap::Client::new(conn);
        let greeting = tokio::time::timeout(self.settings.timeout, client.read_response())
            .await
            .map_err(|_| self.late(&server))?
            .map_err(|source| EmailError::Unreachable {
                server: server.clone(),
                source,
            })?;
        if greeting.is_none() {
            return Err(EmailError::Unreachable {
                server,
                source: std::io::ErrorKind::UnexpectedEof.into(),
            });
        }
        let user = &self.settings.username;
        match tokio::time::timeout(
            self.settings.timeout,
            client.login(user, self.settings.password.expose()),
        )
        .await
        {
            Err(_) => Err(self.late(&server)),
            Ok(Ok(session)) => Ok(session),
            Ok(Err((async_imap::error::Error::No(why), _)))
            | Ok(Err((async_imap::error::Error::Bad(why), _))) => Err(EmailError::Login {
                user: user.clone(),
                why,
            }),
            Ok(Err((e, _))) => Err(e.into()),
        }
    }

    /// Every mail past the cursor, in UID order.
    async fn take_new(
        &self,
        session: &mut Session,
        cursor: &mut Cursor,
        intake: &Intake,
    ) -> Result<(), EmailError> {
        let mut uids: Vec<u32> = self
            .within(session.uid_search(format!("UID {}:*", cursor.last_uid.saturating_add(1))))
            .await?
            .into_iter()
            // `N:*` names the last mail even when it is below N.
            .filter(|&u| u > cursor.last_uid)
            .collect();
        uids.sort_unstable();
        for uid in uids {
            let raw = self.fetch(session, uid).await?;
            let id = format!("{}.{uid}", cursor.uid_validity);
            let taken = match raw {
                Some(raw) => self.take(&id, &raw, intake).await?,
                None => {
                    tracing::warn!("email: mail {uid} vanished before it was read");
                    false
                }
            };
            if intake.is_closed() {
                // Not recorded: fetched again at the next start.
                return Ok(());
            }
            cursor.last_uid = uid;
            self.state.save_cursor(*cursor)?;
            if taken {
                let flags = self
                    .within(session.uid_store(uid.to_string(), "+FLAGS.SILENT (\\Seen)"))
                    .await?;
                let _: Vec<_> = self.within(flags.try_collect()).await?;
            }
        }
        while session.unsolicited_responses.try_recv().is_ok() {}
        Ok(())
    }

    async fn fetch(&self, session: &mut Session, uid: u32) -> Result<Option<Vec<u8>>, EmailError> {
        let fetches = self
            .within(session.uid_fetch(uid.to_string(), "(UID BODY.PEEK[])"))
            .await?;
        let fetches: Vec<_> = self.within(fetches.try_collect()).await?;
        Ok(fetches
            .iter()
            .find(|f| f.uid == Some(uid))
            .and_then(|f| f.body())
            .map(<[u8]>::to_vec))
    }

    /// Hands one mail to the inbox if its sender may be answered; whether it
    /// was.
    async fn take(&self, id: &str, raw: &[u8], intake: &Intake) -> Result<bool, EmailError> {
        let Some(mail) = inbound::read(raw) else {
            tracing::warn!("email: mail {id} is not a mail; ignored");
            return Ok(false);
        };
        let s = &self.settings;
        let why_not = if mail.from.is_empty() {
            Some("it has no From: address")
        } else if mail.from == s.address {
            Some("it is from the bot's own address")
        } else if mail.automatic {
            Some("a program sent it (an auto-reply, a bounce or a list)")
        } else if !s.allows(&mail.from) {
            Some("its sender is not in allowed_senders")
        } else {
            None
        };
        if let Some(why) = why_not {
            tracing::info!(from = %mail.from, "email: mail {id} ignored: {why}");
            return Ok(false);
        }
        let evidence = Evidence {
            from: &mail.from,
            results: &mail.results,
            recipients: &mail.recipients,
        };
        let Some(proof) = proof(&evidence, s.authserv_id.as_deref(), &s.address, &s.tokens) else {
            tracing::warn!(from = %mail.from, "email: mail {id} ignored: its From: is not vouched for (no passing DKIM/SPF verdict from {} for its domain, nor its sender's secret address)", s.authserv_id.as_deref().unwrap_or("the receiving server"));
            return Ok(false);
        };
        tracing::debug!(from = %mail.from, "email: mail {id} taken ({proof:?})");
        self.state.keep_thread(
            id,
            &Thread {
                message_id: mail.message_id.clone(),
                references: mail.references.clone(),
                subject: mail.subject.clone(),
            },
        )?;
        let content = match (mail.text.is_empty(), mail.subject.is_empty()) {
            (true, _) => mail.subject.clone(),
            (false, true) => mail.text.clone(),
            (false, false) if mail.references.is_empty() => {
                format!("{}\n\n{}", mail.subject, mail.text)
            }
            (false, false) => mail.text.clone(),
        };
        let mut message =
            ChannelMessage::now(NAME, id.to_string(), &mail.from, &mail.from, &content);
        message.interruption_scope_id = Some(mail.from.clone());
        message.images = mail.images;
        message.audio = mail.audio;
        message.documents = mail.documents;
        if intake.accept(message).await.is_err() {
            return Ok(false);
        }
        Ok(true)
    }

    /// Until the mailbox may have changed: an IDLE that ends with news or
    /// after the poll interval, or a plain wait without IDLE.
    async fn wait(
        &self,
        mut session: Session,
        idle: bool,
        intake: &Intake,
    ) -> Result<Session, EmailError> {
        let interval = self.settings.poll_interval;
        if !idle {
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = intake.closed() => {}
            }
            self.within(session.noop()).await?;
            return Ok(session);
        }
        let mut handle = session.idle();
        self.within(handle.init()).await?;
        {
            let (news, _stop) = handle.wait_with_timeout(interval + Duration::from_secs(1));
            tokio::select! {
                r = news => { r?; }
                _ = intake.closed() => {}
            }
        }
        session = self.within(handle.done()).await?;
        Ok(session)
    }

    /// `step`, or a timeout error when the server takes too long.
    pub(super) async fn within<T, E: Into<EmailError>>(
        &self,
        step: impl std::future::Future<Output = Result<T, E>>,
    ) -> Result<T, EmailError> {
        let server = format!("{}:{}", self.settings.imap.0, self.settings.imap.1);
        match tokio::time::timeout(self.settings.timeout, step).await {
            Ok(r) => r.map_err(Into::into),
            Err(_) => Err(self.late(&server)),
        }
    }

    fn late(&self, server: &str) -> EmailError {
        EmailError::Timeout {
            server: server.to_string(),
            seconds: self.settings.timeout.as_secs(),
        }
    }
}
