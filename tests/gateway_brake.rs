//! Guessing the gateway's token: wrong tokens from one client address are
//! answered more slowly, then the address is refused (429) whatever it
//! sends, across connections (the gateway closes each one after its
//! answer). Another address, the owner's, goes on being served: the
//! control. The brake's timings and its expiry are unit tests of
//! `gateway::brake`.

use std::net::IpAddr;

use crate::support::ways_in::{TOKEN, gateway};

fn from(address: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(address.parse::<IpAddr>().unwrap())
        .build()
        .unwrap()
}

async fn models(client: &reqwest::Client, base: &str, token: &str) -> reqwest::Response {
    client
        .get(format!("{base}/v1/models"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_tokens_are_slowed_then_refused_per_address_and_the_owner_goes_on() {
    let run = gateway().await;
    let base = format!("http://{}", run.addr);
    let (owner, guesser) = (from("127.0.0.1"), from("127.0.0.9"));
    assert_eq!(models(&owner, &base, TOKEN).await.status(), 200);
    for i in 0..10 {
        let r = models(&guesser, &base, &format!("guess-{i:04}")).await;
        assert_eq!(r.status(), 401, "guess {i}");
    }
    // Locked: even the right token, and the page's sign-in, are refused.
    let r = models(&guesser, &base, TOKEN).await;
    assert_eq!(r.status(), 429);
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    let sign_in = guesser
        .post(format!("{base}/ui/login"))
        .json(&serde_json::json!({"token": TOKEN}))
        .send()
        .await
        .unwrap();
    assert_eq!(sign_in.status(), 429);
    // The owner's address is not held up.
    assert_eq!(models(&owner, &base, TOKEN).await.status(), 200);
    assert_eq!(
        owner
            .get(format!("{base}/health"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
}
