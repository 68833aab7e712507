//! A template that moves text between turns, on the real SmolLM2 model:
//! the engine moves the cached runs to where the template put them instead
//! of reading the prompt again, and the model still answers.
//!
//! The template is ChatML with the system text written into the last user
//! turn, as Mistral Nemo's template does with `[INST]`; SmolLM2's ChatML
//! markers are single tokens, as Mistral's are in its own tokenizer.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;

use std::path::Path;

use hearth::chat::{ChatMessage, ChatReply, ChatRequest, SamplingParams};
use hearth::engine::{Engine, EngineSettings};
use tokio_util::sync::CancellationToken;

const MOVING_CHATML: &str = "\
{%- set system = messages[0].content if messages[0].role == 'system' else '' -%}
{%- set turns = messages[1:] if messages[0].role == 'system' else messages -%}
{%- for m in turns -%}
<|im_start|>{{ m.role }}
{% if loop.last and m.role == 'user' and system %}{{ system }}

{% endif %}{{ m.content }}<|im_end|>
{% endfor -%}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif -%}";

const SYSTEM: &str = "You are the house assistant of a family in Lyon. Facts you know: \
the boiler is a Vaillant ecoTEC plus serviced every October; the router is in the hall \
cupboard and restarts with the red button; the bins go out on Tuesday evening (yellow \
lid for recycling, green for glass on the first Monday of the month); the cat is called \
Moustache and eats twice a day, at seven and at six; the spare keys are with the \
neighbour at number 12, Madame Roux; the car is a blue Zoe charged in the garage \
overnight; the children's school starts at half past eight and ends at half past four, \
except on Wednesday afternoons; the plants on the balcony are watered every second \
day in summer. Answer in one short sentence.";

/// Questions, the answers history records for them (fixed, so every run
/// renders the same prompts), and a word an answer on topic uses.
const TURNS: [(&str, &str, &str); 3] = [
    (
        "What is the cat called?",
        "The cat is called Moustache.",
        "cat",
    ),
    ("When do the bins go out?", "On Tuesday evening.", "bins"),
    (
        "Where are the spare keys?",
        "With Madame Roux at number 12.",
        "keys",
    ),
];

fn settings(kv_dir: &Path, template: &Path, prompt_cache: bool, min_chunk: u32) -> EngineSettings {
    EngineSettings {
        chat_template: Some(template.display().to_string()),
        context_size: 2048,
        kv_dir: Some(kv_dir.to_path_buf()),
        prompt_cache,
        reuse_min_chunk: min_chunk,
        ..common::engine_settings(common::SMOLLM2)
    }
}

/// Runs the three turns in one conversation, greedy.
fn conversation(settings: EngineSettings) -> Vec<ChatReply> {
    let _engine_turn = common::engine_lock();
    let engine = Engine::start(settings, None).expect("engine starts");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut history = vec![ChatMessage::system(SYSTEM)];
    let mut replies = Vec::new();
    for (question, answer, _) in TURNS {
        history.push(ChatMessage::user(question));
        let request = ChatRequest::new("house", history.clone(), SamplingParams::greedy(32));
        let reply = rt
            .block_on(
                engine
                    .submit(request, CancellationToken::new())
                    .collect_with(|_| {}),
            )
            .expect("reply");
        history.push(ChatMessage::assistant(answer));
        replies.push(reply);
    }
    engine.shutdown();
    replies
}

#[test]
fn runs_a_template_moved_are_kept_and_the_model_still_answers() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("moving-chatml.jinja");
    std::fs::write(&template, MOVING_CHATML).unwrap();

    let moved = conversation(settings(&dir.path().join("a"), &template, true, 16));
    let prefix = conversation(settings(&dir.path().join("b"), &template, true, 0));
    let fresh = conversation(settings(&dir.path().join("c"), &template, false, 16));

    for (turn, ((m, p), f)) in moved.iter().zip(&prefix).zip(&fresh).enumerate() {
        let u = |r: &ChatReply| (r.usage.cached_tokens, r.usage.prompt_tokens);
        eprintln!(
            "turn {}: kept/prompt moved {:?}, prefix only {:?}, fresh {:?}\n  moved: {:?}\n  fresh: {:?}",
            turn + 1,
            u(m),
            u(p),
            u(f),
            m.text,
            f.text
        );
        assert_eq!(m.usage.prompt_tokens, f.usage.prompt_tokens);
        assert!(!m.text.trim().is_empty(), "turn {} answered", turn + 1);
        assert_eq!(f.usage.cached_tokens, 0);
    }
    for turn in 1..TURNS.len() {
        let (m, p) = (&moved[turn].usage, &prefix[turn].usage);
        // The system text (about 170 tokens) moved behind the history: the
        // prefix alone keeps the first header and the exchanges before it.
        assert!(p.cached_tokens * 5 < p.prompt_tokens, "prefix only: {p:?}");
        assert!(m.cached_tokens * 5 > m.prompt_tokens * 4, "moved: {m:?}");
        // Moved keys at wrong positions would leave the model off topic.
        let topic = TURNS[turn].2;
        assert!(
            moved[turn].text.contains(topic),
            "turn {}: {:?}",
            turn + 1,
            moved[turn].text
        );
    }
}
