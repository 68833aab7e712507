//! hearth's own markup never reaches a person: a model scripted to echo a
//! tool result block and the memory fence (what SmolLM2 and the Agents SDK
//! run showed) answers through the pipeline, and the person reads the
//! answer without them. The control: the same answer without the markup
//! arrives word for word.

use std::sync::Arc;

use hearth::channels::InMemoryChannel;
use hearth::providers::ScriptedProvider;

use crate::support::{builder, config, local, reports, start, texts};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echoed_results_and_fences_never_reach_the_person() {
    let home = tempfile::tempdir().unwrap();
    let echoing = [
        "<tool_result name=\"get_weather\" status=\"ok\">{\"temp\": 21}</tool_result>It is 21 °C in Paris.",
        "<untrusted source=\"memory\">\nYou prefer tea.\n</untrusted>\nYou prefer tea.",
        "Noted. <tool_result name=\"note\" status=\"ok",
        "It is 21 °C in Paris.",
    ];
    let model = Arc::new(ScriptedProvider::new(echoing));
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let (_daemon, mut rx) = start(builder(config(home.path()), local(model)), channel.clone());
    for (i, _) in echoing.iter().enumerate() {
        channel.inject_text("ada", &format!("question {i}"));
        reports(&mut rx, 1).await;
    }
    let said = texts(&channel, "ada");
    assert_eq!(said.len(), 4, "{said:?}");
    for text in &said {
        for tag in [
            "<tool_result",
            "</tool_result",
            "<untrusted",
            "</untrusted",
            "status=\"",
        ] {
            assert!(!text.contains(tag), "{tag} in {text:?}");
        }
    }
    assert_eq!(said[0], "It is 21 °C in Paris.");
    assert!(said[1].contains("You prefer tea."), "{:?}", said[1]);
    assert_eq!(said[2], "Noted.");
    // The control: the plain answer arrives as written.
    assert_eq!(said[3], "It is 21 °C in Paris.");
}
