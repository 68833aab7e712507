//! Each model family's call grammar, on the real default model's
//! tokenizer (SmolLM2-135M): it takes the family's calls and refuses a call
//! to a tool that is not offered; and with a family's format forced on
//! SmolLM2 and a call required, the calls it writes parse.
//!
//! llama.cpp allows one backend per process, so these tests take turns
//! through a lock.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;
use crate::common::engine_lock as lock;

use hearth::chat::{ChatMessage, ChatRequest, SamplingParams, ToolChoice, ToolSpec};
use hearth::config::ModelFamily;
use hearth::engine::{Engine, EngineSettings};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn settings_for(tool_format: Option<ModelFamily>) -> EngineSettings {
    EngineSettings {
        tool_format,
        ..common::engine_settings(common::SMOLLM2)
    }
}

fn start(tool_format: Option<ModelFamily>) -> Engine {
    Engine::start(settings_for(tool_format), None).expect("engine starts")
}

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "get_weather".into(),
            description: "The weather in a city".into(),
            parameters: json!({"type": "object", "properties": {
                "city": {"type": "string"}, "days": {"type": "integer"}
            }, "required": ["city"]}),
        },
        ToolSpec {
            name: "note".into(),
            description: "Keeps a note".into(),
            parameters: json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        },
    ]
}

/// A call to `get_weather` as each family's models write it.
fn call(family: ModelFamily) -> &'static str {
    match family {
        ModelFamily::Xml | ModelFamily::Hermes => {
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>"
        }
        ModelFamily::Llama3 => "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
        ModelFamily::Mistral => {
            "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abc123DEF\"}]"
        }
        ModelFamily::MistralV7 => "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}",
        ModelFamily::Harmony => {
            "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}"
        }
        ModelFamily::DeepSeek => {
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        }
        ModelFamily::CommandR => {
            "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n]<|END_ACTION|>"
        }
        ModelFamily::Phi4 => {
            "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]<|/tool_call|>"
        }
        ModelFamily::Granite => {
            "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]"
        }
        ModelFamily::Nemotron => {
            "<TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]</TOOLCALL>"
        }
        ModelFamily::Gemma4 => {
            "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:2}<tool_call|>"
        }
        ModelFamily::Glm => {
            "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
        }
        ModelFamily::Kimi => {
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_calls_section_end|>"
        }
    }
}

#[test]
fn each_family_grammar_takes_its_calls_and_refuses_an_unknown_tool() {
    let _guard = lock();
    let engine = start(None);
    let tools = tools();
    let mut failed = Vec::new();
    for family in ModelFamily::ALL {
        let good = call(family);
        if !engine.grammar_accepts(family, &tools, 1, good).unwrap() {
            failed.push(format!("{family:?} refuses its own call: {good}"));
        }
        let unknown = good.replace("get_weather", "delete_all");
        if engine.grammar_accepts(family, &tools, 1, &unknown).unwrap() {
            failed.push(format!("{family:?} takes a call to an unknown tool"));
        }
        // A call cut short is not a whole call.
        let cut: String = good.chars().take(good.chars().count() - 3).collect();
        if engine.grammar_accepts(family, &tools, 1, &cut).unwrap() {
            failed.push(format!("{family:?} takes a call cut short: {cut}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// `n` calls in one reply (to Paris, Oslo, Lima…), as the families whose
/// templates write several write them; `None` for the one-call families.
fn several(family: ModelFamily, n: usize) -> Option<String> {
    let one = call(family);
    let calls: Vec<String> = ["Paris", "Oslo", "Lima", "Rome"][..n]
        .iter()
        .map(|city| one.replace("Paris", city))
        .collect();
    let listed = |open: &str, close: &str| {
        let body = |c: &String| {
            c.trim_start_matches(open)
                .trim_end_matches(close)
                .trim_start_matches('[')
                .trim_end_matches(']')
                .trim()
                .to_string()
        };
        let bodies: Vec<String> = calls.iter().map(body).collect();
        format!("{open}[{}]{close}", bodies.join(", "))
    };
    match family {
        ModelFamily::Xml | ModelFamily::Hermes => Some(calls.join("\n")),
        ModelFamily::MistralV7 => Some(calls.concat()),
        ModelFamily::Mistral => Some(listed("[TOOL_CALLS]", "")),
        ModelFamily::Phi4 => Some(listed("<|tool_call|>", "<|/tool_call|>")),
        ModelFamily::Granite => Some(listed("<|tool_call|>", "")),
        ModelFamily::Nemotron => Some(listed("<TOOLCALL>", "</TOOLCALL>")),
        ModelFamily::CommandR => Some(listed("<|START_ACTION|>", "<|END_ACTION|>")),
        _ => None,
    }
}

/// With several calls allowed (`parallel_tool_calls`), a family whose
/// template writes several in one reply takes them, up to the limit and no
/// further; with one allowed, it refuses the second. The one-call
/// families (Llama 3's templates refuse two) refuse two either way.
#[test]
fn families_that_write_several_calls_take_several_when_allowed() {
    let _guard = lock();
    let engine = start(None);
    let tools = tools();
    let most = hearth::chat::MOST_CALLS;
    let accepts =
        |family, limit, text: &str| engine.grammar_accepts(family, &tools, limit, text).unwrap();
    let mut failed = Vec::new();
    for family in ModelFamily::ALL {
        let (Some(two), Some(three)) = (several(family, 2), several(family, 3)) else {
            if accepts(family, most, &format!("{}{}", call(family), call(family))) {
                failed.push(format!("{family:?} (one call per reply) takes two"));
            }
            if !accepts(family, most, call(family)) {
                failed.push(format!(
                    "{family:?} refuses one call when several are allowed"
                ));
            }
            continue;
        };
        if !accepts(family, most, &three) {
            failed.push(format!(
                "{family:?} refuses three calls when {most} are allowed: {three}"
            ));
        }
        if !accepts(family, 2, &two) {
            failed.push(format!(
                "{family:?} refuses two calls when two are allowed: {two}"
            ));
        }
        if accepts(family, 2, &three) {
            failed.push(format!("{family:?} takes three calls when two are allowed"));
        }
        if accepts(family, 1, &two) {
            failed.push(format!("{family:?} takes two calls when one is allowed"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// `n` replies with a call required, in `family`'s format forced on
/// SmolLM2; returns how many parsed into exactly one valid call.
fn forced_calls(family: ModelFamily, n: usize) -> (usize, Vec<String>) {
    // Room for the longest call the grammar allows (see below).
    let engine = Engine::start(
        EngineSettings {
            context_size: 2048,
            ..settings_for(Some(family))
        },
        None,
    )
    .expect("engine starts");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cities = ["Paris", "Oslo", "Lima", "Rome", "Cairo"];
    let mut parsed = 0;
    let mut problems = Vec::new();
    for i in 0..n {
        let mut request = ChatRequest::new(
            format!("forced-{i}"),
            vec![ChatMessage::user(format!(
                "What's the weather like in {}?",
                cities[i % cities.len()]
            ))],
            SamplingParams {
                temperature: 0.8,
                seed: Some(i as u32),
                // Room for the longest call the grammar allows: strings
                // are bounded at 256 characters, and a character the
                // tokenizer lacks (an emoji) takes up to four byte tokens.
                ..SamplingParams::greedy(1100)
            },
        );
        request.tools = tools();
        request.tool_choice = ToolChoice::Required;
        let reply = runtime
            .block_on(
                engine
                    .submit(request, CancellationToken::new())
                    .collect_with(|_| {}),
            )
            .expect("reply");
        if reply.tool_calls.len() == 1 && reply.malformed.is_empty() {
            parsed += 1;
        } else {
            problems.push(format!("{reply:?}"));
        }
    }
    (parsed, problems)
}

#[test]
fn smollm2_forced_to_llama3_format_writes_20_of_20_calls_that_parse() {
    let _guard = lock();
    let (parsed, problems) = forced_calls(ModelFamily::Llama3, 20);
    assert_eq!(parsed, 20, "{}", problems.join("\n"));
}

#[test]
fn smollm2_forced_to_every_family_format_writes_calls_that_parse() {
    let _guard = lock();
    let mut failed = Vec::new();
    for family in ModelFamily::ALL {
        let (parsed, problems) = forced_calls(family, 3);
        if parsed != 3 {
            failed.push(format!("{family:?}: {parsed}/3 {}", problems.join("\n")));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// A template that opens `<think>` for the model, as QwQ and R1 do: with a
/// reasoning budget of 3 tokens the engine closes the reasoning itself and
/// the model answers within `max_tokens`, instead of reasoning to the end.
#[test]
fn a_reasoning_budget_closes_the_reasoning_so_the_model_answers() {
    let _guard = lock();
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("thinks.jinja");
    std::fs::write(
        &template,
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}",
    )
    .unwrap();
    let engine = Engine::start(
        EngineSettings {
            chat_template: Some(template.display().to_string()),
            tool_format: Some(ModelFamily::Hermes),
            ..settings_for(None)
        },
        None,
    )
    .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut request = ChatRequest::new(
        "thinks",
        vec![ChatMessage::user("What is the capital of France?")],
        SamplingParams {
            max_reasoning_tokens: 3,
            ..SamplingParams::greedy(80)
        },
    );
    request.tools = Vec::new();
    let reply = runtime
        .block_on(
            engine
                .submit(request, CancellationToken::new())
                .collect_with(|_| {}),
        )
        .unwrap();
    assert!(!reply.reasoning.trim().is_empty(), "{reply:?}");
    assert!(
        !reply.text.trim().is_empty(),
        "no answer after the reasoning: {reply:?}"
    );
    assert!(!reply.text.contains("<think>") && !reply.text.contains("</think>"));
    assert!(reply.usage.completion_tokens <= 80, "{reply:?}");
    // The control: left to itself (a budget past where it stops), this
    // model ends its reply inside the block, and there is no answer.
    let mut request = ChatRequest::new(
        "thinks-unbounded",
        vec![ChatMessage::user("What is the capital of France?")],
        SamplingParams {
            max_reasoning_tokens: 50,
            ..SamplingParams::greedy(80)
        },
    );
    request.tools = Vec::new();
    let unbounded = runtime
        .block_on(
            engine
                .submit(request, CancellationToken::new())
                .collect_with(|_| {}),
        )
        .unwrap();
    assert!(unbounded.text.trim().is_empty(), "{unbounded:?}");
    assert!(!unbounded.reasoning.trim().is_empty(), "{unbounded:?}");
}
