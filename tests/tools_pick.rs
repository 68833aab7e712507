//! `hearth tools pick`: the tools a turn on a message is offered by
//! relevance, from a file of OpenAI tools or the configured ones; a file
//! that is not a list of tools is named, never a panic.

use crate::common::{Sandbox, assert_no_panic};

fn tool(name: &str, description: &str) -> serde_json::Value {
    serde_json::json!({"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {}}}})
}

#[test]
fn picks_from_a_file_of_openai_tools_and_names_a_bad_file() {
    let s = Sandbox::new();
    let config = s.config("");
    let tools = s.path("tools.json");
    let list: Vec<_> = (0..40)
        .map(|i| {
            tool(
                &format!("gadget_{i}"),
                &format!("Operate gadget number {i}."),
            )
        })
        .chain([
            tool("weather_forecast", "The weather forecast for a city."),
            tool("flight_book", "Book a flight between two cities."),
        ])
        .collect();
    std::fs::write(&tools, serde_json::to_string(&list).unwrap()).unwrap();
    let picked = |message: &str| {
        let out = s
            .hearth()
            .arg("--config")
            .arg(&config)
            .args(["tools", "pick", message, "--most", "4", "--from"])
            .arg(&tools)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(picked("Book me a flight to Tokyo"), "flight_book\n");
    assert_eq!(
        picked("Will it rain? What is the weather?"),
        "weather_forecast\n"
    );
    // Control: a message about no tool is offered none.
    assert_eq!(picked("Tell me a joke"), "");

    std::fs::write(&tools, "{not json").unwrap();
    let out = s
        .hearth()
        .arg("--config")
        .arg(&config)
        .args(["tools", "pick", "hi", "--from"])
        .arg(&tools)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("is not a JSON array of tools"), "{err}");
    assert_no_panic(&err);
}
