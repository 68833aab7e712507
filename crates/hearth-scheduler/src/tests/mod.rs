//! The scheduler under paused tokio time and a test clock: jobs fire at
//! their times, missed ones once, and reminders go back to their chat.
//! The agent's cron tools are in [`tools`], pausing in [`pause`].

mod pause;
mod tools;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::config::SchedulerConfig;
use futures::future::BoxFuture;

/// Records every fire with the (test) wall-clock time it happened.
struct Recorder {
    clock: Arc<TestClock>,
    fired: Mutex<Vec<(Job, DateTime<Utc>)>>,
}

impl Recorder {
    fn new(clock: &Arc<TestClock>) -> Arc<Self> {
        Arc::new(Self {
            clock: Arc::clone(clock),
            fired: Mutex::default(),
        })
    }

    fn times_of(&self, id: i64) -> Vec<DateTime<Utc>> {
        self.fired
            .lock()
            .unwrap()
            .iter()
            .filter(|(j, _)| j.id == id)
            .map(|(_, t)| *t)
            .collect()
    }

    fn jobs(&self) -> Vec<Job> {
        self.fired
            .lock()
            .unwrap()
            .iter()
            .map(|(j, _)| j.clone())
            .collect()
    }
}

impl JobSink for Recorder {
    fn fire<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Result<(), FireError>> {
        Box::pin(async move {
            self.fired
                .lock()
                .unwrap()
                .push((job.clone(), self.clock.now()));
            Ok(())
        })
    }
}

fn utc(d: u32, h: u32, m: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 1, d, h, m, 0).unwrap()
}

fn to(chat: &str) -> Delivery {
    Delivery {
        channel: "telegram".into(),
        to: chat.into(),
        thread: None,
        owner: None,
    }
}

fn prompt(p: &str) -> Payload {
    Payload::AgentPrompt { prompt: p.into() }
}

/// A prompt job in UTC delivered to chat 1.
fn prompt_job(schedule: Schedule) -> NewJob {
    NewJob {
        name: None,
        schedule,
        timezone: chrono_tz::UTC,
        payload: prompt("x"),
        delivery: to("1"),
    }
}

fn open(dir: &tempfile::TempDir, clock: &Arc<TestClock>) -> Arc<Scheduler> {
    Arc::new(
        Scheduler::open(
            &JobStore::path_in(dir.path()),
            SchedulerConfig::default(),
            Arc::clone(clock) as Arc<dyn Clock>,
        )
        .unwrap(),
    )
}

/// Runs `scheduler` for `span` of paused time.
async fn run_for(scheduler: &Arc<Scheduler>, sink: &Arc<impl JobSink + 'static>, span: Duration) {
    let stop = CancellationToken::new();
    let task = {
        let s = Arc::clone(scheduler);
        let sink = Arc::clone(sink) as Arc<dyn JobSink>;
        let stop = stop.clone();
        tokio::spawn(async move { s.run(sink, stop).await })
    };
    tokio::time::sleep(span).await;
    stop.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_cron_job_fires_at_its_times_and_a_one_shot_once() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(TestClock::new(utc(6, 7, 0)));
    let s = open(&dir, &clock);
    let berlin = chrono_tz::Europe::Berlin;
    // 09:00 in Berlin is 08:00 UTC in January.
    let daily = s
        .add(NewJob {
            name: Some("morning".into()),
            schedule: Schedule::cron("0 9 * * *").unwrap(),
            timezone: berlin,
            payload: prompt("good morning"),
            delivery: to("1"),
        })
        .unwrap();
    assert_eq!(daily.next_run, utc(6, 8, 0));
    let once = s
        .add(NewJob {
            name: None,
            schedule: Schedule::At(utc(6, 8, 30)),
            timezone: berlin,
            payload: prompt("once"),
            delivery: to("1"),
        })
        .unwrap();
    let every = s
        .add(NewJob {
            name: None,
            schedule: Schedule::Every(Duration::from_secs(6 * 3600)),
            timezone: berlin,
            payload: Payload::LmsPoll { source: None },
            delivery: to("1"),
        })
        .unwrap();
    let sink = Recorder::new(&clock);
    run_for(&s, &sink, Duration::from_secs(3 * 86_400 + 60)).await;

    assert_eq!(
        sink.times_of(daily.id),
        [utc(6, 8, 0), utc(7, 8, 0), utc(8, 8, 0)]
    );
    assert_eq!(sink.times_of(once.id), [utc(6, 8, 30)]);
    let polls = sink.times_of(every.id);
    assert_eq!(polls.len(), 12, "{polls:?}");
    assert_eq!(polls[0], utc(6, 13, 0));
    assert_eq!(polls[11], utc(9, 7, 0));
    let left: Vec<i64> = s.list().unwrap().iter().map(|j| j.id).collect();
    assert_eq!(left, [daily.id, every.id], "the one-shot is gone");
}

#[tokio::test(start_paused = true)]
async fn after_a_downtime_a_missed_job_runs_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(TestClock::new(utc(6, 8, 30)));
    let (hourly, once) = {
        let before = open(&dir, &clock);
        let hourly = before
            .add(NewJob {
                name: None,
                schedule: Schedule::cron("0 * * * *").unwrap(),
                timezone: chrono_tz::UTC,
                payload: prompt("hourly"),
                delivery: to("1"),
            })
            .unwrap();
        let once = before
            .add(NewJob {
                name: None,
                schedule: Schedule::At(utc(6, 10, 0)),
                timezone: chrono_tz::UTC,
                payload: prompt("once"),
                delivery: to("1"),
            })
            .unwrap();
        (hourly.id, once.id)
        // The daemon stops here.
    };
    // Down for five hours: five hourly ticks and the one-shot are missed.
    clock.jump(chrono::Duration::hours(5));
    let after = open(&dir, &clock);
    let sink = Recorder::new(&clock);
    run_for(&after, &sink, Duration::from_secs(20 * 60)).await;
    assert_eq!(sink.times_of(hourly), [utc(6, 13, 30)], "once at start");
    assert_eq!(sink.times_of(once), [utc(6, 13, 30)]);
    assert_eq!(after.get(hourly).unwrap().unwrap().next_run, utc(6, 14, 0));
    run_for(&after, &sink, Duration::from_secs(60 * 60)).await;
    assert_eq!(sink.times_of(hourly), [utc(6, 13, 30), utc(6, 14, 0)]);
    assert_eq!(sink.times_of(once).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn bad_jobs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(TestClock::new(utc(6, 8, 0)));
    let s = open(&dir, &clock);
    let job = |schedule| NewJob {
        name: None,
        schedule,
        timezone: chrono_tz::UTC,
        payload: prompt("x"),
        delivery: to("1"),
    };
    assert!(matches!(
        s.add(job(Schedule::At(utc(6, 7, 0)))),
        Err(SchedulerError::Schedule(ScheduleError::InThePast(_)))
    ));
    assert!(matches!(
        s.add(job(Schedule::Every(Duration::from_secs(5)))),
        Err(SchedulerError::Schedule(ScheduleError::TooShort))
    ));
    let mut nowhere = job(Schedule::At(utc(6, 9, 0)));
    nowhere.delivery.to = " ".into();
    assert!(s.add(nowhere).is_err());
    let small = Scheduler::open(
        &dir.path().join("small.sqlite3"),
        SchedulerConfig {
            max_jobs: 1,
            ..SchedulerConfig::default()
        },
        Arc::clone(&clock) as Arc<dyn Clock>,
    )
    .unwrap();
    small.add(job(Schedule::At(utc(6, 9, 0)))).unwrap();
    assert!(matches!(
        small.add(job(Schedule::At(utc(6, 9, 0)))),
        Err(SchedulerError::Full(1))
    ));
}

#[tokio::test(start_paused = true)]
async fn one_person_cannot_use_up_everyones_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(TestClock::new(utc(6, 8, 0)));
    let s = Scheduler::open(
        &dir.path().join("jobs.sqlite3"),
        SchedulerConfig {
            max_jobs: 10,
            max_jobs_per_person: 3,
            ..SchedulerConfig::default()
        },
        Arc::clone(&clock) as Arc<dyn Clock>,
    )
    .unwrap();
    let by = |chat: &str, owner: Option<&str>| NewJob {
        name: None,
        schedule: Schedule::At(utc(6, 9, 0)),
        timezone: chrono_tz::UTC,
        payload: prompt("remind me"),
        delivery: Delivery {
            owner: owner.map(str::to_string),
            ..to(chat)
        },
    };
    // Mallory fills her share, in her chat and in a group.
    s.add(by("666", None)).unwrap();
    s.add(by("group", Some("666"))).unwrap();
    s.add(by("666", Some("666"))).unwrap();
    let refused = s.add(by("666", None)).unwrap_err();
    assert!(
        matches!(refused, SchedulerError::FullForPerson(3)),
        "{refused}"
    );
    assert!(refused.to_string().contains("max_jobs_per_person"));
    // Positive control: the others still add theirs, in the same group too.
    s.add(by("ada", None)).unwrap();
    s.add(by("group", Some("ada"))).unwrap();
    // The same sender id in another channel is another person.
    let mut elsewhere = by("666", None);
    elsewhere.delivery.channel = "cli".into();
    s.add(elsewhere).unwrap();
}

/// Fails its first `failures` fires, then succeeds; records each attempt.
struct Flaky {
    clock: Arc<TestClock>,
    failures: usize,
    attempts: Mutex<Vec<DateTime<Utc>>>,
}

impl Flaky {
    fn new(clock: &Arc<TestClock>, failures: usize) -> Arc<Self> {
        Arc::new(Self {
            clock: Arc::clone(clock),
            failures,
            attempts: Mutex::default(),
        })
    }

    fn attempts(&self) -> Vec<DateTime<Utc>> {
        self.attempts.lock().unwrap().clone()
    }
}

impl JobSink for Flaky {
    fn fire<'a>(&'a self, _: &'a Job) -> BoxFuture<'a, Result<(), FireError>> {
        Box::pin(async move {
            let mut attempts = self.attempts.lock().unwrap();
            attempts.push(self.clock.now());
            if attempts.len() <= self.failures {
                Err(FireError::Delivery("telegram is down".into()))
            } else {
                Ok(())
            }
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_failing_prompt_is_retried_then_recorded_and_keeps_its_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(TestClock::new(utc(6, 8, 59)));
    let s = open(&dir, &clock);
    let job = s
        .add(prompt_job(Schedule::cron("0 * * * *").unwrap()))
        .unwrap();
    let sink = Flaky::new(&clock, usize::MAX);
    run_for(&s, &sink, Duration::from_secs(20 * 60)).await;
    // At 9:00, then after 1, 2, 4 and 8 more minutes; then given up.
    let minutes: Vec<u32> = sink
        .attempts()
        .iter()
        .map(chrono::Timelike::minute)
        .collect();
    assert_eq!(minutes, [0, 1, 3, 7, 15]);
    let after = s.get(job.id).unwrap().unwrap();
    assert_eq!(after.last_error.as_deref(), Some("telegram is down"));
    assert_eq!(after.next_run, utc(6, 10, 0));
}

#[tokio::test(start_paused = true)]
async fn a_reminder_whose_delivery_failed_arrives_late_not_never() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(TestClock::new(utc(6, 8, 59)));
    let s = open(&dir, &clock);
    s.add(prompt_job(Schedule::At(utc(6, 9, 0)))).unwrap();
    let sink = Flaky::new(&clock, 2);
    run_for(&s, &sink, Duration::from_secs(10 * 60)).await;
    assert_eq!(sink.attempts().len(), 3, "two failures, then delivered");
    assert!(s.list().unwrap().is_empty(), "the one-shot is gone");
}

#[tokio::test(start_paused = true)]
async fn retries_stop_before_the_next_regular_run() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(TestClock::new(utc(6, 8, 59)));
    let s = open(&dir, &clock);
    let job = s
        .add(prompt_job(Schedule::Every(Duration::from_secs(150))))
        .unwrap();
    let sink = Flaky::new(&clock, usize::MAX);
    // Until 9:04:30: runs at 9:01:30 and 9:04:00.
    run_for(&s, &sink, Duration::from_secs(330)).await;
    // The 9:01:30 run gets one retry a minute later; the next (two minutes
    // on) would pass the following regular run at 9:04:00.
    let gaps: Vec<i64> = sink
        .attempts()
        .windows(2)
        .map(|w| (w[1] - w[0]).num_seconds())
        .collect();
    assert_eq!(gaps, [60, 90], "{:?}", sink.attempts());
    assert!(s.get(job.id).unwrap().is_some());
}

#[test]
fn a_job_file_from_before_owners_opens_and_keeps_its_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let path = JobStore::path_in(dir.path());
    let old = rusqlite::Connection::open(&path).unwrap();
    old.execute_batch(
        "CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, kind TEXT NOT NULL,
             spec TEXT NOT NULL, timezone TEXT NOT NULL, payload TEXT NOT NULL, channel TEXT NOT NULL,
             recipient TEXT NOT NULL, thread TEXT, next_run INTEGER NOT NULL, last_run INTEGER,
             last_error TEXT, created INTEGER NOT NULL);
         INSERT INTO jobs (kind, spec, timezone, payload, channel, recipient, next_run, created)
             VALUES ('every', '3600', 'UTC', '{\"kind\":\"agent_prompt\",\"prompt\":\"water the plants\"}',
                     'telegram', '42', 1736000000, 1736000000);",
    )
    .unwrap();
    drop(old);
    let store = JobStore::open(&path).unwrap();
    let jobs = store.list().unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].delivery.owner, None);
    assert_eq!(jobs[0].delivery.owner(), "42", "the chat's own person");
    drop(store);
    // Opening again does not try to add the column twice.
    assert_eq!(JobStore::open(&path).unwrap().list().unwrap().len(), 1);
}
