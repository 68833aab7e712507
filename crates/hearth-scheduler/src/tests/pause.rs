//! Pausing and resuming jobs (the web page's buttons, `hearth cron pause`).

use super::*;

#[tokio::test(start_paused = true)]
async fn a_paused_job_never_runs_and_resumes_without_its_missed_runs() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(TestClock::new(utc(6, 8, 30)));
    let s = open(&dir, &clock);
    let hourly = s
        .add(prompt_job(Schedule::cron("0 * * * *").unwrap()))
        .unwrap();
    let control = s
        .add(prompt_job(Schedule::cron("30 * * * *").unwrap()))
        .unwrap();
    let once = s.add(prompt_job(Schedule::At(utc(6, 10, 0)))).unwrap();
    assert!(s.pause(hourly.id).unwrap().unwrap().paused);
    assert!(s.pause(once.id).unwrap().unwrap().paused);
    assert!(s.pause(9_999).unwrap().is_none(), "no such job");
    let sink = Recorder::new(&clock);
    run_for(&s, &sink, Duration::from_secs(170 * 60)).await;
    assert!(sink.times_of(hourly.id).is_empty(), "paused: never ran");
    assert!(sink.times_of(once.id).is_empty());
    assert_eq!(
        sink.times_of(control.id),
        [utc(6, 9, 30), utc(6, 10, 30)],
        "control: the job beside it ran"
    );
    // Paused survives a restart, and listings say so.
    let reopened = open(&dir, &clock);
    let listed = reopened.get(hourly.id).unwrap().unwrap();
    assert!(listed.paused && listed.describe().contains("(paused)"));
    // Resumed at 11:20: the recurring job next runs at 12:00 (not once
    // for each run it missed), the one-shot whose time passed runs now.
    let resumed = s.resume(hourly.id).unwrap().unwrap();
    assert!(!resumed.paused);
    assert_eq!(resumed.next_run, utc(6, 12, 0));
    s.resume(once.id).unwrap().unwrap();
    run_for(&s, &sink, Duration::from_secs(50 * 60)).await;
    assert_eq!(sink.times_of(hourly.id), [utc(6, 12, 0)]);
    assert_eq!(sink.times_of(once.id), [utc(6, 11, 20)]);
}
