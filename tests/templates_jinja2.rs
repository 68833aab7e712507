//! Tools shown to the model as Hugging Face shows them: every published
//! template in `../shared/templates/` rendered by hearth and by jinja2 the
//! way transformers' `apply_chat_template` renders it
//! (`tests/clients/render_jinja2.py`), with a tool whose keys are out of
//! alphabetical order and whose text holds `'`, `<` and `&`: the bytes must
//! be the same. Skipped, with a message, where `../shared` is absent.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use hearth::chat::{ChatMessage, Reasoning, ToolSpec};
use hearth::engine::formats;
use hearth::engine::template::{ChatTemplate, Turn};
use serde_json::json;

fn tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Today's weather in a city & its <forecast>".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "units": {"type": "string", "enum": ["c", "f"], "description": "The degrees' unit"},
                "city": {"type": "string", "description": "Where, e.g. \"Paris\""}
            },
            "required": ["city"]
        }),
    }
}

#[test]
fn every_published_template_renders_the_tools_as_transformers_does() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("../shared/templates");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("skipped: {} is absent", dir.display());
        return;
    };
    let packages = root.join("target/pyclients");
    assert!(
        packages.join(".installed").exists(),
        "the Python packages are missing: run `make test-clients`"
    );
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .collect();
    paths.sort();
    let messages = vec![ChatMessage::user(
        "What's the weather in Paris & Rome? <now>",
    )];
    let tools = [tool()];
    let (mut ours, mut requests) = (Vec::new(), Vec::new());
    for path in &paths {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let source = std::fs::read_to_string(path).unwrap();
        let family = formats::detect::detect(&source);
        let format = formats::format(family);
        let template = ChatTemplate::new(source.clone(), name.clone(), "<s>", "</s>").unwrap();
        let rendered = template.render_turn(&Turn {
            format,
            messages: &messages,
            tools: &tools,
            reasoning: Reasoning::Auto,
            add_generation_prompt: true,
        });
        let vars = json!({
            "messages": format.messages(&messages),
            "tools": [{"type": "function", "function": tools[0]}],
            "add_generation_prompt": true,
            "bos_token": "<s>",
            "eos_token": "</s>",
            "tools_in_user_message": false,
            "date_string": chrono::Local::now().format("%d %b %Y").to_string(),
        });
        ours.push((name.clone(), rendered.map_err(|e| e.to_string())));
        requests.push(json!({"name": name, "source": source, "vars": vars}));
    }
    let theirs = render_with_jinja2(root, &packages, &requests);
    let mut differ = Vec::new();
    for (name, ours) in &ours {
        let theirs = &theirs[name.as_str()];
        match (ours, theirs.as_str()) {
            (Ok(a), Some(b)) if a == b => {}
            (Ok(a), Some(b)) => {
                let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
                let near = |s: &str| {
                    s.get(at.saturating_sub(40)..(at + 60).min(s.len()))
                        .unwrap_or("")
                        .to_string()
                };
                differ.push(format!(
                    "{name}: from byte {at}\n  hearth: {:?}\n  jinja2: {:?}",
                    near(a),
                    near(b)
                ));
            }
            (Err(e), _) => differ.push(format!("{name}: hearth failed: {e} (jinja2: {theirs})")),
            (Ok(_), None) => differ.push(format!("{name}: jinja2 failed: {theirs}")),
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} templates render otherwise than transformers:\n{}",
        differ.len(),
        ours.len(),
        differ.join("\n")
    );
    // Control: the tool's text is there, as written, in every template
    // that reads `tools` (three published ones do not).
    let mut shown = 0;
    for ((name, ours), request) in ours.iter().zip(&requests) {
        let reads_tools = request["source"].as_str().unwrap().contains("tools");
        let has = ours
            .as_ref()
            .unwrap()
            .contains("Today's weather in a city & its <forecast>");
        assert_eq!(has, reads_tools, "{name}");
        shown += usize::from(has);
    }
    assert!(shown >= 10, "only {shown} templates show tools");
}

/// Each request rendered by jinja2 as transformers does, by name.
fn render_with_jinja2(
    root: &Path,
    packages: &Path,
    requests: &[serde_json::Value],
) -> serde_json::Value {
    let mut child = Command::new("python3")
        .arg(root.join("tests/clients/render_jinja2.py"))
        .env("PYTHONPATH", packages)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let templates: Vec<_> = requests
        .iter()
        .map(|r| json!({"name": r["name"], "source": r["source"], "vars": r["vars"]}))
        .collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(json!({"templates": templates}).to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "render_jinja2.py failed");
    serde_json::from_slice(&out.stdout).unwrap()
}
