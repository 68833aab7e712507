//! LMS delivery (`support::lms_fake`): refused notices stay queued, sites
//! that fail back off, summaries fall back, and a chat that hangs never
//! holds a poll.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::time::Duration;

use axum::http::StatusCode;
use futures::future::BoxFuture;
use hearth::chat::{Priority, ProviderError};
use hearth::lms::{Notice, NoticeError, NoticeSink, Notifier};
use hearth::providers::ScriptedProvider;
use std::sync::Arc;

use hearth::config::LmsKind;
use hearth::lms::ManualClock;
use support::lms_fake::*;

#[tokio::test]
async fn a_failed_delivery_stays_unsent_and_goes_out_next_poll() {
    let fake = Fake::with(&[("feed", "news.rss")]);
    let url = feed_server(fake.clone(), "application/rss+xml").await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let sink = Recorder::default();
    let cfg = config(vec![source(LmsKind::Rss, "news", &url, None)]);
    sink.refuse("Library");

    let report = notifier(&cfg, dir.path(), &clock).poll_once(&sink).await;
    let r = report.source("news").unwrap();
    assert_eq!((r.sent, r.failed), (1, 1));
    assert_eq!(ids(&sink.take()), ["news-2025-030"]);

    sink.accept_all();
    // After a restart, too: the refused notice is still pending.
    let report = notifier(&cfg, dir.path(), &clock).poll_once(&sink).await;
    assert_eq!((report.sent(), report.failed()), (1, 0));
    assert_eq!(ids(&sink.take()), ["news-2025-031"]);
}

#[tokio::test]
async fn a_rate_limit_and_server_errors_back_off_without_losing_anything() {
    let fake = Fake::with(&[("feed", "news.rss")]);
    let url = feed_server(fake.clone(), "application/rss+xml").await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let sink = Recorder::default();
    let cfg = config(vec![source(LmsKind::Rss, "news", &url, None)]);
    let n = notifier(&cfg, dir.path(), &clock);

    fake.fail_with(
        StatusCode::TOO_MANY_REQUESTS,
        vec![("retry-after", "7200".into())],
        "slow down",
    );
    let report = n.poll_once(&sink).await;
    let error = error_of(&report, "news");
    assert!(
        error.contains("rate limited (retry after 7200 s)"),
        "{error}"
    );
    assert_eq!(fake.hits().len(), 1);

    // The next poll, 30 minutes later, leaves the site alone.
    clock.advance(chrono::Duration::minutes(30));
    let report = n.poll_once(&sink).await;
    assert!(error_of(&report, "news").contains("backing off"));
    assert_eq!(fake.hits().len(), 1, "no request during the backoff");

    // Two hours on, it asks again and gets a 503.
    fake.fail_with(StatusCode::SERVICE_UNAVAILABLE, Vec::new(), "maintenance");
    clock.advance(chrono::Duration::minutes(90));
    let report = n.poll_once(&sink).await;
    assert!(error_of(&report, "news").contains("HTTP 503"));
    assert_eq!(fake.hits().len(), 2);
    assert_eq!(report.sent(), 0);

    // Second failure in a row: one poll is skipped, then it recovers.
    fake.heal();
    clock.advance(chrono::Duration::minutes(30));
    n.poll_once(&sink).await;
    assert_eq!(
        fake.hits().len(),
        2,
        "one poll skipped after the second failure"
    );
    clock.advance(chrono::Duration::minutes(30));
    let report = n.poll_once(&sink).await;
    assert_eq!(report.source("news").unwrap().error, None);
    assert_eq!(report.sent(), 2, "every item arrives after the outage");
}

#[tokio::test]
async fn summaries_run_in_the_background_and_fall_back_to_the_plain_notice() {
    let fake = Fake::with(&[("feed", "news.rss")]);
    let url = feed_server(fake.clone(), "application/rss+xml").await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let sink = Recorder::default();
    let mut cfg = config(vec![source(LmsKind::Rss, "news", &url, None)]);
    cfg.summarise = true;
    let provider = Arc::new(
        ScriptedProvider::new(["Apply to be a tutor by 20 March."])
            .then_fail(ProviderError::Failed("the engine is busy".into())),
    );
    let n = Notifier::new(&cfg, dir.path(), Some(provider.clone()))
        .unwrap()
        .with_clock(clock.clone());
    n.poll_once(&sink).await;
    let notices = sink.take();
    assert_eq!(notices.len(), 2);
    // Items first seen together go out by id: 030 (summarised), then 031.
    let tutors = notices
        .iter()
        .find(|n| n.item.id == "news-2025-030")
        .unwrap();
    let library = notices
        .iter()
        .find(|n| n.item.id == "news-2025-031")
        .unwrap();
    assert!(
        tutors
            .text
            .ends_with("\n\nApply to be a tutor by 20 March."),
        "{}",
        tutors.text
    );
    assert!(
        !library.text.contains("\n\n"),
        "the failed summary falls back: {}",
        library.text
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.priority == Priority::Background));
    assert!(
        requests[0].messages[1]
            .content
            .contains("Apply by 20 March."),
        "the body reaches the model"
    );
}

/// A chat that accepts nothing and answers nothing while it is down, like
/// Telegram during an outage with the client retrying.
#[derive(Default)]
struct Outage {
    down: std::sync::atomic::AtomicBool,
    attempts: std::sync::atomic::AtomicUsize,
    delivered: std::sync::Mutex<Vec<String>>,
}

impl NoticeSink for Outage {
    fn deliver<'a>(&'a self, notice: &'a Notice) -> BoxFuture<'a, Result<(), NoticeError>> {
        use std::sync::atomic::Ordering;
        Box::pin(async move {
            self.attempts.fetch_add(1, Ordering::SeqCst);
            while self.down.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            self.delivered.lock().unwrap().push(notice.item.id.clone());
            Ok(())
        })
    }
}

#[tokio::test]
async fn a_telegram_outage_never_delays_a_poll_of_another_source() {
    use std::sync::atomic::Ordering;
    let news = Fake::with(&[("feed", "news.rss")]);
    let news_url = feed_server(news.clone(), "application/rss+xml").await;
    let cal = Fake::with(&[("feed", "calendar.ics")]);
    let cal_url = feed_server(cal.clone(), "text/calendar").await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let cfg = config(vec![
        source(LmsKind::Rss, "news", &news_url, None),
        source(LmsKind::Ical, "calendar", &cal_url, None),
    ]);
    let n = Arc::new(notifier(&cfg, dir.path(), &clock));
    let chat = Arc::new(Outage::default());
    chat.down.store(true, Ordering::SeqCst);

    // The first poll records both sources; delivery starts and hangs on the
    // first notice.
    let report = n.poll().await;
    assert_eq!(report.source("calendar").unwrap().items, 3);
    let courier = tokio::spawn({
        let (n, chat) = (n.clone(), chat.clone());
        async move {
            let mut report = hearth::lms::PollReport::default();
            n.deliver(chat.as_ref(), &mut report).await;
            report
        }
    });
    while chat.attempts.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // While the chat is down (two hours of polls), every poll of every
    // source runs and records what changed; none waits for the chat.
    cal.edit(
        "feed",
        "SUMMARY:Quiz 2: Sorting closes",
        "SUMMARY:Quiz 2: Sorting closes (room H1)",
    );
    for _ in 0..4 {
        clock.advance(chrono::Duration::minutes(30));
        let report = tokio::time::timeout(Duration::from_secs(30), n.poll())
            .await
            .expect("a poll never waits for the chat");
        assert!(
            report.sources.iter().all(|s| s.error.is_none()),
            "{report:?}"
        );
    }
    assert_eq!(cal.hits().len(), 5, "every poll reached the calendar");
    assert_eq!(news.hits().len(), 5, "and the news feed");
    assert!(!courier.is_finished(), "the chat is still down");
    assert_eq!(chat.attempts.load(Ordering::SeqCst), 1);

    // The chat is back: everything arrives, once, the quiz as it is now.
    chat.down.store(false, Ordering::SeqCst);
    let report = courier.await.unwrap();
    assert_eq!(report.sent(), 5);
    let mut again = hearth::lms::PollReport::default();
    n.deliver(chat.as_ref(), &mut again).await;
    assert_eq!(again.sent(), 0, "nothing twice");
    let mut delivered = chat.delivered.lock().unwrap().clone();
    delivered.sort();
    assert_eq!(
        delivered,
        [
            "901@moodle.example.edu",
            "905@moodle.example.edu",
            "holiday-2025-04-18@example.edu",
            "news-2025-030",
            "news-2025-031"
        ]
    );
}

/// The same through the daemon: the notices go to Telegram (the fake Bot
/// API, down and answering 502 as a broken proxy does, while the client
/// retries), and the LMS services poll on their own schedule meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_daemon_polls_go_on_while_telegram_is_down() {
    use hearth::config::{LmsTarget, StreamMode};
    use support::telegram_bot::{WAIT, sent_to, telegram_config};
    use support::telegram_fake::FakeTelegram;

    let news = Fake::with(&[("feed", "news.rss")]);
    let news_url = feed_server(news.clone(), "application/rss+xml").await;
    let cal = Fake::with(&[("feed", "calendar.ics")]);
    let cal_url = feed_server(cal.clone(), "text/calendar").await;
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let mut cfg = support::config(home.path());
    telegram_config(&mut cfg, &fake, &["42"], StreamMode::Off);
    cfg.lms = config(vec![
        source(LmsKind::Rss, "news", &news_url, None),
        source(LmsKind::Ical, "calendar", &cal_url, None),
    ]);
    cfg.lms.deliver = Some(LmsTarget {
        channel: "telegram".into(),
        to: "42".into(),
    });
    cfg.lms.poll_interval = Duration::from_millis(300);
    // This test counts the notices; the morning brief (on by default with
    // LMS sources, and due whenever the test runs after 07:30) has its own.
    cfg.brief.enabled = Some(false);
    fake.set_down(true);

    let provider = Arc::new(ScriptedProvider::new(["unused"]));
    let services = hearth::daemon::Services::open(&cfg, provider.clone()).unwrap();
    let bot = support::telegram_bot::start(fake, home, cfg, support::local(provider), |b| b);
    let stop = tokio_util::sync::CancellationToken::new();
    let metrics = Arc::new(hearth::metrics::Metrics::new());
    services.spawn(bot.daemon.delivery(), metrics, stop.clone());

    // Down: the first notice is being retried, and both sources are polled
    // again and again meanwhile.
    let deadline = tokio::time::Instant::now() + WAIT;
    while news.hits().len() < 10 || cal.hits().len() < 10 {
        assert!(tokio::time::Instant::now() < deadline, "polls stalled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let tried = bot
        .fake
        .calls()
        .iter()
        .filter(|c| c.method == "sendMessage")
        .count();
    assert!(tried >= 1, "delivery was tried during the outage");
    assert!(sent_to(&bot.fake, 42).is_empty());

    // Back up: every notice arrives, once.
    bot.fake.set_down(false);
    let deadline = tokio::time::Instant::now() + WAIT;
    while sent_to(&bot.fake, 42).len() < 5 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            sent_to(&bot.fake, 42)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let sent = sent_to(&bot.fake, 42);
    assert_eq!(sent.len(), 5, "nothing twice: {sent:?}");
    stop.cancel();
    bot.daemon.stop().await;
}
