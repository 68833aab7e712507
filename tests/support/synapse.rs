//! A real Matrix homeserver for the tests: Synapse (PyPI `matrix-synapse`,
//! installed into `target/synapse` by `make test-matrix`), one instance per
//! test with its own SQLite database, media and keys in a folder under
//! `/var/tmp`, on a free 127.0.0.1 port, rate limits lifted. Users are
//! registered with the shared secret, as an admin would. Stopped when
//! dropped; [`Synapse::stop`] and [`Synapse::start_again`] take it away and
//! bring it back on the same port with the same database.
//!
//! [`Person`] is the other side: the official Rust SDK (`matrix-sdk`, the
//! same library Element X builds on) as a person's client, with end-to-end
//! encryption and its keys in memory, syncing in the background and
//! keeping every room message it receives, decrypted.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use matrix_sdk::config::SyncSettings;
use matrix_sdk::ruma::api::client::room::create_room::v3::Request as CreateRoom;
use matrix_sdk::ruma::events::room::encryption::RoomEncryptionEventContent;
use matrix_sdk::ruma::events::room::message::{
    MessageType, OriginalSyncRoomMessageEvent, RoomMessageEventContent,
};
use matrix_sdk::ruma::events::{EmptyStateKey, InitialStateEvent};
use matrix_sdk::ruma::{OwnedEventId, OwnedRoomId, OwnedUserId};
use matrix_sdk::{Client, Room};

pub const SERVER_NAME: &str = "hearth.test";
pub const PASSWORD: &str = "correct horse battery staple";
const SHARED_SECRET: &str = "the-tests-registration-secret";

/// The Python that runs Synapse.
fn python() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/synapse/bin/python")
}

pub struct Synapse {
    dir: tempfile::TempDir,
    pub port: u16,
    child: Option<Child>,
}

impl Drop for Synapse {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Synapse {
    /// A homeserver answering on 127.0.0.1.
    pub fn start() -> Self {
        assert!(
            python().exists(),
            "Synapse is missing: run `make test-matrix` ({} not found)",
            python().display()
        );
        let dir = tempfile::Builder::new()
            .prefix("hearth-synapse-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let port = free_port();
        let mut synapse = Self {
            dir,
            port,
            child: None,
        };
        synapse.write_config();
        let out = Command::new(python())
            .args(["-m", "synapse.app.homeserver", "--generate-keys", "-c"])
            .arg(synapse.path("homeserver.yaml"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        synapse.start_again();
        synapse
    }

    /// The client-server API root.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn user_id(&self, name: &str) -> String {
        format!("@{name}:{SERVER_NAME}")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// What the homeserver logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.path("homeserver.log")).unwrap_or_default()
    }

    fn write_config(&self) {
        let d = self.dir.path().display();
        let limit = "{per_second: 1000, burst_count: 1000}";
        let config = format!(
            r#"server_name: "{SERVER_NAME}"
pid_file: {d}/homeserver.pid
listeners:
  - port: {port}
    tls: false
    type: http
    x_forwarded: false
    bind_addresses: ['127.0.0.1']
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: {d}/homeserver.db
log_config: {d}/log.yaml
media_store_path: {d}/media
signing_key_path: {d}/signing.key
registration_shared_secret: "{SHARED_SECRET}"
macaroon_secret_key: "the-tests-macaroon-secret"
form_secret: "the-tests-form-secret"
report_stats: false
trusted_key_servers: []
suppress_key_server_warning: true
enable_metrics: false
presence:
  enabled: false
rc_message: {limit}
rc_joins:
  local: {limit}
  remote: {limit}
rc_invites:
  per_room: {limit}
  per_user: {limit}
  per_issuer: {limit}
rc_login:
  address: {limit}
  account: {limit}
  failed_attempts: {limit}
rc_registration: {limit}
rc_admin_redaction: {limit}
rc_key_requests: {limit}
"#,
            port = self.port
        );
        std::fs::write(self.path("homeserver.yaml"), config).unwrap();
        let log = format!(
            "version: 1\nformatters:\n  plain:\n    format: '%(asctime)s %(levelname)s %(name)s %(message)s'\nhandlers:\n  file:\n    class: logging.FileHandler\n    formatter: plain\n    filename: {d}/homeserver.log\nroot:\n  level: WARNING\n  handlers: [file]\ndisable_existing_loggers: false\n"
        );
        std::fs::write(self.path("log.yaml"), log).unwrap();
    }

    /// Starts it (again), on the same port with the same database, and
    /// waits until its client API answers.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "already running");
        let child = Command::new(python())
            .args(["-m", "synapse.app.homeserver", "-c"])
            .arg(self.path("homeserver.yaml"))
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(self.path("stderr.log")).unwrap(),
            ))
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if get(self.port, "/_matrix/client/versions").is_some_and(|s| s.contains("versions")) {
                return;
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "Synapse exited ({status}):\n{}\n{}",
                    std::fs::read_to_string(self.path("stderr.log")).unwrap_or_default(),
                    self.log()
                );
            }
            assert!(Instant::now() < deadline, "Synapse did not answer in 120 s");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Takes it away: SIGTERM, then waits for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) with a pid we started.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(20);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Registers `names` with the shared secret (Synapse's admin API, as
    /// `register_new_matrix_user` does), each with [`PASSWORD`].
    pub fn register(&self, names: &[&str]) {
        let script = format!(
            r#"
import hashlib, hmac, json, sys, urllib.request
base = "{url}/_synapse/admin/v1/register"
for name in sys.argv[1:]:
    nonce = json.load(urllib.request.urlopen(base))["nonce"]
    mac = hmac.new(b"{SHARED_SECRET}", digestmod=hashlib.sha1)
    for part in (nonce, name, "{PASSWORD}", "notadmin"):
        mac.update(part.encode()); mac.update(b"\x00") if part != "notadmin" else None
    body = json.dumps({{"nonce": nonce, "username": name, "password": "{PASSWORD}", "admin": False, "mac": mac.hexdigest()}}).encode()
    req = urllib.request.Request(base, data=body, headers={{"Content-Type": "application/json"}})
    urllib.request.urlopen(req).read()
"#,
            url = self.url()
        );
        let out = Command::new("python3")
            .arg("-c")
            .arg(script)
            .args(names)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "registering {names:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// One room message a [`Person`] received.
#[derive(Debug, Clone)]
pub struct Received {
    pub room: OwnedRoomId,
    pub sender: OwnedUserId,
    pub event_id: OwnedEventId,
    pub body: String,
    /// Whether it came encrypted (and was decrypted on this side).
    pub encrypted: bool,
    /// A notice (what bots say about themselves), not a message.
    pub notice: bool,
}

/// A person on the homeserver, with the SDK as their client.
pub struct Person {
    pub client: Client,
    received: Arc<Mutex<Vec<Received>>>,
    sync: tokio::task::JoinHandle<()>,
}

impl Drop for Person {
    fn drop(&mut self) {
        self.sync.abort();
    }
}

impl Person {
    /// Logs `name` in on `synapse` and keeps syncing.
    pub async fn log_in(synapse: &Synapse, name: &str) -> Self {
        let client = Client::builder()
            .homeserver_url(synapse.url())
            .build()
            .await
            .unwrap();
        client
            .matrix_auth()
            .login_username(name, PASSWORD)
            .initial_device_display_name(&format!("{name}'s phone"))
            .send()
            .await
            .unwrap();
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let kept = received.clone();
        client.add_event_handler(
            move |event: OriginalSyncRoomMessageEvent,
                  room: Room,
                  info: Option<matrix_sdk::deserialized_responses::EncryptionInfo>| {
                let kept = kept.clone();
                async move {
                    let (body, notice) = match &event.content.msgtype {
                        MessageType::Text(t) => (t.body.clone(), false),
                        MessageType::Notice(n) => (n.body.clone(), true),
                        other => (other.body().to_string(), false),
                    };
                    kept.lock().unwrap().push(Received {
                        room: room.room_id().to_owned(),
                        sender: event.sender,
                        event_id: event.event_id,
                        body,
                        encrypted: info.is_some(),
                        notice,
                    });
                }
            },
        );
        // The first sync before the handler counts: what is there is old.
        client.sync_once(SyncSettings::default()).await.unwrap();
        let syncing = client.clone();
        let sync = tokio::spawn(async move {
            let settings = SyncSettings::default().timeout(Duration::from_secs(5));
            loop {
                // A homeserver taken away: try again until it is back.
                if syncing.sync_once(settings.clone()).await.is_err() {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        });
        Self {
            client,
            received,
            sync,
        }
    }

    pub fn user_id(&self) -> OwnedUserId {
        self.client.user_id().unwrap().to_owned()
    }

    /// Makes an encrypted private room and invites `others` to it.
    pub async fn encrypted_room(&self, others: &[&str]) -> Room {
        let mut request = CreateRoom::new();
        request.invite = others.iter().map(|o| o.parse().unwrap()).collect();
        request.is_direct = others.len() == 1;
        let encryption = InitialStateEvent::<RoomEncryptionEventContent>::new(
            EmptyStateKey,
            RoomEncryptionEventContent::with_recommended_defaults(),
        );
        request.initial_state = vec![encryption.to_raw_any()];
        self.client.create_room(request).await.unwrap()
    }

    /// Waits until `user` has joined `room`, as this person's client sees it.
    pub async fn wait_joined(&self, room: &Room, user: &str, within: Duration) {
        let deadline = Instant::now() + within;
        let user: OwnedUserId = user.parse().unwrap();
        loop {
            if let Ok(Some(member)) = room.get_member_no_sync(&user).await
                && *member.membership()
                    == matrix_sdk::ruma::events::room::member::MembershipState::Join
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{user} did not join {}",
                room.room_id()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Sends `text` to `room`; its event id.
    pub async fn say(&self, room: &Room, text: &str) -> OwnedEventId {
        room.send(RoomMessageEventContent::text_plain(text))
            .await
            .unwrap()
            .response
            .event_id
    }

    /// Reacts to `event` with `key`.
    pub async fn react(&self, room: &Room, event: &OwnedEventId, key: &str) {
        use matrix_sdk::ruma::events::reaction::ReactionEventContent;
        use matrix_sdk::ruma::events::relation::Annotation;
        room.send(ReactionEventContent::new(Annotation::new(
            event.clone(),
            key.to_string(),
        )))
        .await
        .unwrap();
    }

    /// Every message received so far from `sender` in `room`.
    pub fn from(&self, room: &Room, sender: &str) -> Vec<Received> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.room == room.room_id() && r.sender.as_str() == sender)
            .cloned()
            .collect()
    }

    /// Waits until a message from `sender` in `room` satisfies `wanted`.
    pub async fn wait_for(
        &self,
        room: &Room,
        sender: &str,
        within: Duration,
        wanted: impl Fn(&Received) -> bool,
    ) -> Received {
        let deadline = Instant::now() + within;
        loop {
            if let Some(r) = self.from(room, sender).into_iter().find(|r| wanted(r)) {
                return r;
            }
            assert!(
                Instant::now() < deadline,
                "no such message from {sender} in {} within {within:?}: {:#?}",
                room.room_id(),
                self.from(room, sender)
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Whether a room's encryption is on, as this client sees it.
pub async fn is_encrypted(room: &Room) -> bool {
    room.latest_encryption_state()
        .await
        .is_ok_and(|s| s.is_encrypted())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The body of a plain HTTP GET on 127.0.0.1, or `None` when nothing answers.
fn get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    stream.read_to_string(&mut out).ok()?;
    Some(out)
}
