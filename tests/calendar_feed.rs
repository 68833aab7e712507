//! The deadlines as a calendar feed: read by software that is not hearth's
//! (the `icalendar` parser, a real Radicale's import, the `caldav` client
//! reading it back), its UIDs stable when a due date moves, only the LMS
//! person's reminders in it; and served by a real daemon's gateway at its
//! secret address, refusing a wrong or revoked secret.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::sync::Arc;

use hearth::config::{LmsTarget, SchedulerConfig};
use hearth::daemon::DeadlineFeed;
use hearth::lms::{Clock, ManualClock};
use hearth::scheduler::{Delivery, JobStore, NewJob, Payload, Schedule, Scheduler};
use support::lms_fake::*;

fn reminder(to: &str, at: chrono::DateTime<chrono::Utc>, name: &str) -> NewJob {
    NewJob {
        name: Some(name.to_string()),
        schedule: Schedule::At(at),
        timezone: chrono_tz::Europe::Berlin,
        payload: Payload::AgentPrompt {
            prompt: format!("Remind me: {name}"),
        },
        delivery: Delivery {
            channel: "telegram".into(),
            to: to.into(),
            thread: None,
            owner: None,
        },
    }
}

/// The LMS person (chat 42 on Telegram), their Moodle polled at NOW, and
/// their jobs.
struct Person {
    fake: Arc<Fake>,
    dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    cfg: hearth::config::LmsConfig,
    jobs: Arc<Scheduler>,
}

async fn polled(caldav: Option<String>) -> Person {
    let fake = moodle_fake();
    let url = moodle_server(fake.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let mut cfg = moodle_config(&url);
    cfg.deliver = Some(LmsTarget {
        channel: "telegram".into(),
        to: "42".into(),
    });
    cfg.caldav = caldav;
    notifier(&cfg, dir.path(), &clock).poll().await;
    let jobs = Scheduler::open(
        &JobStore::path_in(dir.path()),
        SchedulerConfig::default(),
        clock.clone(),
    )
    .unwrap();
    Person {
        fake,
        dir,
        clock,
        cfg,
        jobs: Arc::new(jobs),
    }
}

#[tokio::test]
async fn the_feed_parses_keeps_its_uids_when_a_date_moves_and_imports_into_radicale() {
    let Person {
        fake,
        dir,
        clock,
        cfg,
        jobs,
    } = polled(None).await;

    // The LMS person's reminder is in the feed; another person's is not.
    jobs.add(reminder(
        "42",
        at("2025-03-12T07:00:00Z"),
        "Bring the lab kit",
    ))
    .unwrap();
    jobs.add(reminder(
        "77",
        at("2025-03-12T08:00:00Z"),
        "Someone else's dentist",
    ))
    .unwrap();
    let feed = DeadlineFeed::open(dir.path(), &cfg, Some(jobs)).unwrap();
    let before = feed.text(clock.now()).unwrap();

    // The essay moves two days later.
    move_the_essay_two_days(&fake);
    clock.advance(chrono::Duration::minutes(30));
    notifier(&cfg, dir.path(), &clock).poll().await;
    let after = feed.text(clock.now()).unwrap();

    let (a, b) = (dir.path().join("before.ics"), dir.path().join("after.ics"));
    std::fs::write(&a, &before).unwrap();
    std::fs::write(&b, &after).unwrap();
    let checked = support::ways_in::python(
        "calendar_check.py",
        &[a.to_str().unwrap(), b.to_str().unwrap()],
        "",
    )
    .await;
    assert_eq!(checked["problems"], serde_json::json!([]), "{checked:#}");
    let (was, now) = (
        checked["before"].as_object().unwrap(),
        checked["after"].as_object().unwrap(),
    );
    let summaries: Vec<&str> = now
        .values()
        .map(|e| e["summary"].as_str().unwrap())
        .collect();
    assert_eq!(
        now.len(),
        4,
        "three dated items and one reminder: {summaries:?}"
    );
    assert!(
        summaries.contains(&"Reminder: Bring the lab kit"),
        "{summaries:?}"
    );
    assert!(
        !summaries.iter().any(|s| s.contains("dentist")),
        "another person's reminder never shows: {summaries:?}"
    );
    assert_eq!(
        was.keys().collect::<Vec<_>>(),
        now.keys().collect::<Vec<_>>(),
        "the moved date updates its event; nothing is added"
    );
    let (uid, essay) = now
        .iter()
        .find(|(_, e)| e["summary"].as_str().unwrap().starts_with("Essay 1"))
        .unwrap();
    assert_eq!(essay["start"], "2025-03-17T22:59:00+00:00");
    assert_eq!(was[uid]["start"], "2025-03-15T22:59:00+00:00");
    assert!(
        essay["modified"].as_str().unwrap() > was[uid]["modified"].as_str().unwrap(),
        "{essay} after {}",
        was[uid]
    );

    let radicale = &checked["radicale"];
    let put = radicale["put_status"].as_u64().unwrap();
    assert!((200..300).contains(&put), "{radicale:#}");
    let mut read: Vec<&str> = radicale["read"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["uid"].as_str().unwrap())
        .collect();
    read.sort();
    let mut ours: Vec<&str> = now.keys().map(String::as_str).collect();
    ours.sort();
    assert_eq!(read, ours, "a second client reads every event back");
}

#[tokio::test]
async fn the_gateway_serves_the_feed_at_its_secret_and_refuses_a_wrong_or_revoked_one() {
    let running = support::api_daemon::daemon_with("", "").await;
    let url_of = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    let url = url_of(running.cli(&["cal", "url"]));
    assert!(url.starts_with(&format!("{}/cal/", running.base)) && url.ends_with(".ics"));
    assert_eq!(
        url_of(running.cli(&["cal", "url"])),
        url,
        "the same address until revoked"
    );
    let client = reqwest::Client::new();
    let get = |u: String| {
        let client = client.clone();
        async move { client.get(u).send().await.unwrap() }
    };

    // Positive control: the secret reads the feed, without the gateway's token.
    let served = get(url.clone()).await;
    assert_eq!(served.status(), 200);
    assert_eq!(
        served.headers()["content-type"],
        "text/calendar; charset=utf-8"
    );
    let text = served.text().await.unwrap();
    assert!(text.starts_with("BEGIN:VCALENDAR\r\n"), "{text}");

    // Hostile: one character off, a path, nothing.
    let secret = url.rsplit('/').next().unwrap().trim_end_matches(".ics");
    let flipped = format!(
        "{}/cal/{}{}.ics",
        running.base,
        &secret[..secret.len() - 1],
        if secret.ends_with('0') { '1' } else { '0' }
    );
    for wrong in [
        flipped,
        format!("{}/cal/..%2Flms.sqlite3", running.base),
        format!("{}/cal/.ics", running.base),
    ] {
        let r = get(wrong.clone()).await;
        assert_eq!(r.status(), 401, "{wrong}");
        assert!(!r.text().await.unwrap().contains("VCALENDAR"));
    }

    // Revoked: the address stops at once; a new one works.
    let out = running.cli(&["cal", "revoke"]);
    assert!(out.status.success());
    assert_eq!(get(url.clone()).await.status(), 401);
    let renewed = url_of(running.cli(&["cal", "url"]));
    assert_ne!(renewed, url);
    assert_eq!(get(renewed).await.status(), 200);
}

/// What a second CalDAV client reads from `url`: (summary, start) by uid.
async fn read_back(url: &str) -> std::collections::BTreeMap<String, (String, String)> {
    use support::radicale::USER;
    let read = support::ways_in::python("caldav_read.py", &[url, USER.0, USER.1], "").await;
    read["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap().to_string();
            (s("uid"), (s("summary"), s("start")))
        })
        .collect()
}

#[tokio::test]
async fn the_deadlines_written_to_radicale_appear_for_a_second_client_and_follow_changes() {
    let radicale = support::radicale::Radicale::start().await;
    let empty = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nEND:VCALENDAR\r\n";
    let with_password = radicale.calendar("deadlines", empty).await;
    let plain = format!("{}/{}/deadlines/", radicale.base, support::radicale::USER.0);

    let Person {
        fake,
        dir,
        clock,
        cfg,
        jobs,
    } = polled(Some(with_password)).await;
    let kit = jobs
        .add(reminder(
            "42",
            at("2025-03-12T07:00:00Z"),
            "Bring the lab kit",
        ))
        .unwrap();
    let deadlines =
        hearth::daemon::deadlines::Deadlines::open(dir.path(), &cfg, Some(jobs.clone())).unwrap();

    let first = deadlines.publish(clock.now()).await.unwrap().unwrap();
    assert_eq!((first.put, first.deleted), (4, 0));
    let seen = read_back(&plain).await;
    let summaries: Vec<&str> = seen.values().map(|(s, _)| s.as_str()).collect();
    assert_eq!(seen.len(), 4, "{summaries:?}");
    assert!(summaries.contains(&"Reminder: Bring the lab kit"));

    // Nothing changed: nothing is written again.
    let again = deadlines.publish(clock.now()).await.unwrap().unwrap();
    assert_eq!((again.put, again.deleted, again.unchanged), (0, 0, 4));

    // The essay moves; the reminder is removed.
    move_the_essay_two_days(&fake);
    clock.advance(chrono::Duration::minutes(30));
    notifier(&cfg, dir.path(), &clock).poll().await;
    assert!(jobs.remove(kit.id).unwrap());
    let moved = deadlines.publish(clock.now()).await.unwrap().unwrap();
    assert_eq!((moved.put, moved.deleted), (1, 1));
    let now = read_back(&plain).await;
    assert_eq!(now.len(), 3, "{now:?}");
    let essay = now
        .values()
        .find(|(s, _)| s.starts_with("Essay 1"))
        .unwrap();
    assert_eq!(essay.1, "2025-03-17T22:59:00+00:00");
    assert_eq!(
        now.keys().collect::<Vec<_>>(),
        seen.keys()
            .filter(|k| seen[*k].0 != "Reminder: Bring the lab kit")
            .collect::<Vec<_>>(),
        "the same events by UID: updated, not added"
    );

    // Hostile: a calendar that is not there is an error, written nowhere,
    // and the error never shows the password in its address.
    let mut wrong = cfg.clone();
    wrong.caldav = Some(format!(
        "http://{}:wrong-secret@{}/{}/no-such-calendar/",
        support::radicale::USER.0,
        radicale.base.trim_start_matches("http://"),
        support::radicale::USER.0
    ));
    let other = tempfile::tempdir().unwrap();
    notifier(&wrong, other.path(), &clock).poll().await;
    let refused = hearth::daemon::deadlines::Deadlines::open(other.path(), &wrong, None)
        .unwrap()
        .publish(clock.now())
        .await;
    match refused {
        Err(e) => assert!(!e.to_string().contains("wrong-secret"), "{e}"),
        Ok(p) => panic!("another user wrote {p:?}"),
    }
    assert_eq!(
        read_back(&plain).await.len(),
        3,
        "nothing of theirs arrived"
    );
}
