//! io_uring under the sandboxes: its operations (a socket, a connect, a
//! sendmsg) are not system calls a seccomp filter sees, so both sandboxes
//! refuse the three calls that make and drive a ring (bubblewrap through
//! the filter it installs with `--seccomp`). Each call
//! is tried from a contained command; `sandbox = "off"` beside it shows
//! the probe reaches the kernel (a ring is made; a bad descriptor or
//! argument is EBADF or EINVAL, not EPERM).

use serde_json::json;

use super::sandbox::{SERIAL, call, world};
use hearth::sandbox::Containment;

/// Makes a ring (io_uring_setup), then drives and registers on
/// descriptor -1; prints each call's result and errno.
const PROBE: &str = r#"python3 -c "
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
for name, args in (('setup', (425, 4, params)), ('enter', (426, -1, 1, 0, 0, 0, 0)), ('register', (427, -1, 0, 0, 0))):
    ctypes.set_errno(0)
    r = libc.syscall(*args)
    print('URING', name, 'ok' if r >= 0 else 'errno=%d' % ctypes.get_errno())
""#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_sandboxes_refuse_every_io_uring_call_and_off_shows_the_probe_works() {
    let _serial = SERIAL.lock().await;
    let enabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .map_or(true, |v| v.trim() == "0");
    for (agent, contained) in [
        ("sandbox = \"landlock\"", Some(Containment::Landlock)),
        (
            "sandbox = \"landlock\"\nsandbox_network = true",
            Some(Containment::Landlock),
        ),
        ("sandbox = \"bubblewrap\"", Some(Containment::Bubblewrap)),
        (
            "sandbox = \"bubblewrap\"\nsandbox_network = true",
            Some(Containment::Bubblewrap),
        ),
        ("sandbox = \"off\"", None),
    ] {
        let w = world(&format!("autonomy = \"full\"\n{agent}"));
        if let Some(kind) = &contained {
            assert_eq!(w.ctx.sandbox.containment(), kind, "{agent}");
        }
        let contained = contained.is_some();
        let r = call(&w, "shell", json!({ "command": PROBE })).await;
        let out = &r.content;
        for name in ["setup", "enter", "register"] {
            let line = out
                .lines()
                .find(|l| l.starts_with(&format!("URING {name} ")))
                .unwrap_or_else(|| panic!("{agent}: no line for {name}: {out}"));
            if contained {
                assert!(line.ends_with("errno=1"), "{agent}: {line}");
            } else if name == "setup" {
                if enabled {
                    assert!(line.ends_with(" ok"), "{agent}: {line}");
                }
            } else {
                // A bad descriptor or argument, not a refusal: the call
                // reached io_uring.
                assert!(
                    line.ends_with("errno=9") || line.ends_with("errno=22"),
                    "{agent}: {line}"
                );
            }
        }
    }
}
