//! A real CalDAV server for the tests: Radicale from `target/pyclients`
//! (`make test-clients`), on a free 127.0.0.1 port, its storage in a
//! temporary folder, any password accepted, each user owning their own
//! collections. Stopped when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Radicale {
    child: Child,
    _storage: tempfile::TempDir,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

/// The user whose calendar the tests keep, and the password sent.
pub const USER: (&str, &str) = ("student", "p@ss word");

impl Radicale {
    pub async fn start() -> Self {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let clients = root.join("target/pyclients");
        assert!(
            clients.join("radicale").exists(),
            "Radicale is missing: run `make test-clients`"
        );
        let storage = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("python3")
            .args(["-m", "radicale", "--storage-filesystem-folder"])
            .arg(storage.path())
            .args(["--server-hosts", &format!("127.0.0.1:{port}")])
            .args(["--auth-type", "none", "--rights-type", "owner_only"])
            .env("PYTHONPATH", &clients)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Owned at once, so that every way out of here stops it.
        let radicale = Self {
            child,
            _storage: storage,
            base: format!("http://127.0.0.1:{port}"),
        };
        let client = reqwest::Client::new();
        for _ in 0..300 {
            if client.get(&radicale.base).send().await.is_ok() {
                return radicale;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("Radicale did not start on {}", radicale.base);
    }

    /// Uploads `ics` as the whole calendar `name` of [`USER`] (Radicale's
    /// import); its address with the credentials in it, as a config names it.
    pub async fn calendar(&self, name: &str, ics: &str) -> String {
        let url = format!("{}/{}/{name}/", self.base, USER.0);
        let put = reqwest::Client::new()
            .put(&url)
            .basic_auth(USER.0, Some(USER.1))
            .header("content-type", "text/calendar")
            .body(ics.to_string())
            .send()
            .await
            .unwrap();
        assert!(put.status().is_success(), "{}", put.status());
        let port = self.base.rsplit(':').next().unwrap();
        format!(
            "http://{}:p%40ss%20word@127.0.0.1:{port}/{}/{name}/",
            USER.0, USER.0
        )
    }
}

impl Drop for Radicale {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
