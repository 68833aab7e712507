//! A contained process that stays (`Sandbox::spawn`, for tool servers
//! spoken to over stdin and stdout), under bubblewrap and under Landlock: it
//! reads its own folder and the code paths it was given, nothing else; it
//! reaches the network only when allowed; when dropped, it dies with what
//! it started. Each hostile case has its positive control beside it.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::io::Read;
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::Duration;

use hearth::sandbox::{Containment, Limits, Sandbox, SandboxChoice, Serving};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A line server: `read PATH`, `connect PORT`, `spawn` (a background
/// sleeper, whose pid it prints); one answer line each.
const SERVER: &str = r#"
import os, socket, subprocess, sys
for line in sys.stdin:
    verb, _, arg = line.strip().partition(" ")
    try:
        if verb == "read":
            out = "read " + open(arg).read().strip()
        elif verb == "connect":
            socket.create_connection(("127.0.0.1", int(arg)), timeout=3).close()
            out = "connected"
        elif verb == "spawn":
            out = "pid %d" % subprocess.Popen(["sleep", "300"]).pid
        else:
            out = "unknown"
    except Exception as e:
        out = "refused " + type(e).__name__
    print(out, flush=True)
"#;

struct Place {
    _dir: tempfile::TempDir,
    folder: PathBuf,
    code: PathBuf,
    secret: PathBuf,
}

fn place() -> Place {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (folder, code, outside) = (root.join("own"), root.join("code"), root.join("outside"));
    for d in [&folder, &code, &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(folder.join("own.txt"), "mine").unwrap();
    std::fs::write(code.join("server.py"), SERVER).unwrap();
    std::fs::write(outside.join("secret.txt"), "CANARY-5e11").unwrap();
    Place {
        _dir: dir,
        folder,
        code,
        secret: outside.join("secret.txt"),
    }
}

fn sandbox(choice: SandboxChoice, p: &Place, network: bool) -> Sandbox {
    let base = Sandbox::resolve(choice, &p.folder, false, Limits::default());
    // As the tool sandbox's tests: the containment asked for must run here.
    if let Containment::Unavailable(why) = base.containment() {
        panic!("{choice:?} cannot run here: {why}");
    }
    base.for_server(&p.folder, network, vec![p.code.clone()], Limits::default())
}

struct Talk {
    serving: Serving,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Talk {
    fn start(sandbox: &Sandbox, p: &Place) -> Self {
        let mut serving = sandbox
            .spawn(
                "/usr/bin/python3",
                &[p.code.join("server.py").display().to_string()],
                &[("PYTHONUNBUFFERED".into(), "1".into())],
            )
            .unwrap();
        let (stdin, stdout, _) = serving.take_io();
        Self {
            serving,
            stdin: stdin.unwrap(),
            lines: BufReader::new(stdout.unwrap()).lines(),
        }
    }

    async fn ask(&mut self, line: &str) -> String {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .unwrap_or_else(|| "(ended)".into())
    }
}

fn alive(pid: u32) -> bool {
    // A zombie is dead for this purpose.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

/// A listener on 127.0.0.1 that counts the connections it accepts.
fn listener() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in l.incoming().flatten() {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _ = (&stream).read(&mut [0; 1]);
        }
    });
    (port, count)
}

async fn contained(choice: SandboxChoice) {
    let _serial = crate::sandbox::SERIAL.lock().await;
    let p = place();
    let closed = sandbox(choice, &p, false);
    let (port, connections) = listener();
    let mut talk = Talk::start(&closed, &p);
    // Controls: its code ran (it answers), its own folder is readable.
    assert_eq!(
        talk.ask(&format!("read {}", p.folder.join("own.txt").display()))
            .await,
        "read mine"
    );
    // Hostile: a file outside, the host's passwd, the network.
    let secret = talk.ask(&format!("read {}", p.secret.display())).await;
    assert!(secret.starts_with("refused"), "{choice:?}: {secret}");
    let connect = talk.ask(&format!("connect {port}")).await;
    assert!(connect.starts_with("refused"), "{choice:?}: {connect}");
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 0);

    // Dropped: it and the sleeper it started are gone.
    let sleeper: u32 = talk.ask("spawn").await["pid ".len()..].parse().unwrap();
    let server = talk.serving.id().unwrap();
    assert!(matches!(choice, SandboxChoice::Bubblewrap) || alive(sleeper));
    drop(talk);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!alive(server), "{choice:?}: the server outlived its handle");
    if !matches!(choice, SandboxChoice::Bubblewrap) {
        // Under bubblewrap the pid is the namespace's own; the namespace
        // ends with its first process anyway.
        assert!(!alive(sleeper), "{choice:?}: its child outlived it");
    }

    // The allowed case: with `network`, the same connection goes through.
    let open = sandbox(choice, &p, true);
    let mut talk = Talk::start(&open, &p);
    assert_eq!(talk.ask(&format!("connect {port}")).await, "connected");
    // The listener counts the connection when its accept runs, which may
    // be just after the server has said "connected".
    for _ in 0..100 {
        if connections.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1);
    let status = {
        drop(talk.stdin);
        talk.serving.wait().await.unwrap()
    };
    assert!(status.success(), "it ends when its stdin closes: {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_under_bubblewrap_reads_only_its_own_and_dies_with_its_handle() {
    contained(SandboxChoice::Bubblewrap).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_under_landlock_reads_only_its_own_and_dies_with_its_handle() {
    contained(SandboxChoice::Landlock).await;
}

/// The control that shows the suite can fail: with the sandbox off, the
/// same server reads the secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_sandbox_off_the_server_reads_the_secret() {
    let _serial = crate::sandbox::SERIAL.lock().await;
    let p = place();
    let off = sandbox(SandboxChoice::Off, &p, false);
    let mut talk = Talk::start(&off, &p);
    let secret = talk.ask(&format!("read {}", p.secret.display())).await;
    assert_eq!(secret, "read CANARY-5e11");
}
