//! The grammar handoff on the real SmolLM2 vocabulary: llama.cpp's own
//! grammar sampler, driven by made-up logits so that every token the
//! model "wants" is chosen by the test.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::path::Path;
use std::sync::OnceLock;

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use serde_json::json;

use crate::formats::{self, ModelFamily};
use crate::pieces;
use crate::sampling::Picker;
use hearth_core::chat::{ProviderError, SamplingParams, ToolChoice, ToolSpec};

struct Loaded {
    _backend: LlamaBackend,
    model: LlamaModel,
}

fn model() -> &'static LlamaModel {
    static LOADED: OnceLock<Loaded> = OnceLock::new();
    &LOADED
        .get_or_init(|| {
            crate::backends::load(None, &[]).unwrap();
            let backend = LlamaBackend::init().unwrap();
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../models/SmolLM2-135M-Instruct.Q4_1.gguf");
            assert!(
                path.is_file(),
                "{} is missing: run `make test-models`",
                path.display()
            );
            let model =
                LlamaModel::load_from_file(&backend, &path, &LlamaModelParams::default()).unwrap();
            Loaded {
                _backend: backend,
                model,
            }
        })
        .model
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "book_flight".into(),
        description: "Books a flight".into(),
        parameters: json!({"type": "object", "properties": {
            "departure_city": {"type": "string"},
            "destination_city": {"type": "string"},
            "date": {"type": "string"}
        }, "required": ["departure_city", "destination_city", "date"]}),
    }]
}

fn picker(family: ModelFamily, choice: ToolChoice) -> Picker {
    Picker::new(
        model(),
        &SamplingParams::greedy(512),
        &tools(),
        (choice, 1),
        formats::format(family),
    )
    .unwrap()
}

fn tokens(text: &str) -> Vec<LlamaToken> {
    model().vocab().tokenize(text.as_bytes(), false, true)
}

/// A row of logits whose best entries are `wanted`, in order, above a
/// floor of noise.
fn row(wanted: &[LlamaToken], noise: &mut Noise) -> Vec<f32> {
    let n = model().n_vocab() as usize;
    let mut logits: Vec<f32> = (0..n).map(|_| noise.next_f32() * 4.0 - 8.0).collect();
    for (rank, t) in wanted.iter().enumerate() {
        logits[t.0 as usize] = 20.0 - rank as f32;
    }
    logits
}

/// xorshift64*: the fuzz's seeded randomness.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn next_f32(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The BFCL case that killed the daemon: after `<tool_call`, the model's
/// best token is `></`, which completes the marker and carries `</`.
#[test]
fn a_token_carrying_text_past_the_marker_is_refused_and_the_call_goes_on() {
    let straddler = tokens("></");
    assert_eq!(straddler.len(), 1, "SmolLM2 has `></` as one token");
    let straddler = straddler[0];
    let close = tokens(">");
    let mut noise = Noise(7);
    let mut p = picker(ModelFamily::Hermes, ToolChoice::Auto);
    for t in tokens("Sure. <tool_call") {
        assert_eq!(p.pick_from(model(), &row(&[t], &mut noise)).unwrap(), t);
    }
    // `></` first, `>` second: the straddler is refused, `>` taken.
    let picked = p
        .pick_from(model(), &row(&[straddler, close[0]], &mut noise))
        .unwrap();
    assert_eq!(picked, close[0], "{:?}", pieces::text(model(), picked));
    // The grammar is awake and takes a whole call, then lets the reply end.
    let call = "\n{\"name\": \"book_flight\", \"arguments\": {\"departure_city\": \"San Francisco\", \"destination_city\": \"Tokyo\", \"date\": \"2022-05-03\"}}\n</tool_call>";
    for t in tokens(call) {
        assert_eq!(p.pick_from(model(), &row(&[t], &mut noise)).unwrap(), t);
    }
    let eos = model().vocab().eos();
    assert_eq!(p.pick_from(model(), &row(&[eos], &mut noise)).unwrap(), eos);
}

/// The positive control: the same marker written without a straddler is
/// taken as it comes, and the awake grammar then refuses text that is not
/// a call by masking it (the best allowed token wins).
#[test]
fn the_marker_written_plainly_wakes_the_grammar_which_then_constrains() {
    let mut noise = Noise(11);
    let mut p = picker(ModelFamily::Hermes, ToolChoice::Auto);
    for t in tokens("<tool_call>") {
        assert_eq!(p.pick_from(model(), &row(&[t], &mut noise)).unwrap(), t);
    }
    let prose = tokens(" hello")[0];
    let picked = p.pick_from(model(), &row(&[prose], &mut noise)).unwrap();
    assert_ne!(picked, prose);
}

/// llama.cpp throws from a grammar that cannot take a token; the throw
/// comes back as this reply's error, and a new grammar works.
#[test]
fn a_throw_inside_llama_cpp_is_an_error_for_the_reply() {
    let (a, b) = (tokens("a")[0], tokens("b")[0]);
    let mut grammar = LlamaSampler::grammar(model(), "root ::= \"a\"", "root").unwrap();
    match super::accept(&mut grammar, model(), b) {
        Err(ProviderError::Failed(e)) => assert!(e.contains("refused token"), "{e}"),
        other => panic!("expected the grammar's refusal, got {other:?}"),
    }
    let mut fresh = LlamaSampler::grammar(model(), "root ::= \"a\"", "root").unwrap();
    super::accept(&mut fresh, model(), a).unwrap();
}

/// Accepting an end token the grammar does not allow aborts llama.cpp
/// (`GGML_ABORT`), so a row where nothing is allowed is an error before
/// anything is accepted.
#[test]
fn a_row_with_nothing_allowed_is_an_error_not_an_abort() {
    let mut p = picker(ModelFamily::Hermes, ToolChoice::Required);
    let nothing = vec![f32::NEG_INFINITY; model().n_vocab() as usize];
    let e = p.pick_from(model(), &nothing).unwrap_err();
    assert!(e.to_string().contains("allows"), "{e}");
    // Control: the same picker goes on with a row that has a call in it.
    let mut noise = Noise(3);
    let t = tokens("<tool_call>")[0];
    assert_eq!(p.pick_from(model(), &row(&[t], &mut noise)).unwrap(), t);
}

/// Ids the vocabulary lacks (a model without BOS answers -1) have no text
/// rather than a C++ `std::out_of_range`.
#[test]
fn ids_outside_the_vocabulary_have_no_text() {
    let n = model().n_vocab();
    for bad in [-1, -7_000_000, n, i32::MAX] {
        assert!(
            pieces::piece(model(), LlamaToken(bad), true).is_empty(),
            "{bad}"
        );
    }
    assert_eq!(pieces::text(model(), tokens("hello")[0]), "hello");
}

/// Tokens whose text is the end of `marker` followed by more text.
fn straddlers(marker: &str) -> Vec<LlamaToken> {
    let model = model();
    (0..model.n_vocab())
        .map(LlamaToken)
        .filter(|&t| {
            let piece = pieces::text(model, t);
            (1..=marker.len()).any(|k| {
                marker.is_char_boundary(marker.len() - k)
                    && piece.len() > k
                    && piece.starts_with(&marker[marker.len() - k..])
            })
        })
        .collect()
}

/// Every family's trigger, reached by random text, the marker split at
/// random with a token that straddles its end, then random tokens: no
/// pick ends the process or the reply, and the straddlers that the
/// grammar cannot take are refused.
#[test]
fn fuzz_the_handoff_around_every_family_s_trigger() {
    let mut noise = Noise(0x5eed_1234);
    let words = tokens(" I will book the flight now, then tell you. ");
    let (mut refused, mut woken, mut trials) = (0, 0, 0);
    for family in ModelFamily::ALL {
        let syntax = formats::format(family).syntax();
        for marker in syntax.calls.iter().chain(syntax.calls_at_start) {
            let candidates = straddlers(marker);
            for _ in 0..12 {
                trials += 1;
                let mut script: Vec<Vec<LlamaToken>> = Vec::new();
                if syntax.calls.contains(marker) {
                    script
                        .extend((0..noise.below(6)).map(|_| vec![words[noise.below(words.len())]]));
                }
                let straddler = candidates.get(noise.below(candidates.len())).copied();
                let k = straddler.map_or(0, |s| {
                    let piece = pieces::text(model(), s);
                    (1..=marker.len())
                        .rev()
                        .find(|&k| {
                            marker.is_char_boundary(marker.len() - k)
                                && piece.starts_with(&marker[marker.len() - k..])
                        })
                        .unwrap_or(0)
                });
                script.extend(
                    tokens(&marker[..marker.len() - k])
                        .into_iter()
                        .map(|t| vec![t]),
                );
                // The straddler first, the marker's plain end second.
                let plain = tokens(&marker[marker.len() - k..]);
                if let Some(s) = straddler {
                    script.push(std::iter::once(s).chain(plain.first().copied()).collect());
                }
                let n = model().n_vocab() as usize;
                let tail: Vec<Vec<LlamaToken>> = (0..noise.below(8))
                    .map(|_| vec![LlamaToken(noise.below(n) as i32)])
                    .collect();
                let mut p = picker(family, ToolChoice::Auto);
                let mut steps: std::collections::VecDeque<Vec<LlamaToken>> = script.into();
                steps.extend(tail);
                let mut i = 0;
                while let Some(wanted) = steps.pop_front() {
                    i += 1;
                    let picked = p
                        .pick_from(model(), &row(&wanted, &mut noise))
                        .unwrap_or_else(|e| {
                            panic!("{family:?} {marker:?} step {i}, wanting {wanted:?}: {e}")
                        });
                    if straddler.is_some_and(|s| wanted[0] == s) && picked != wanted[0] {
                        refused += 1;
                        // The marker's plain end, as the model would go on.
                        for (j, t) in plain.iter().skip(1).enumerate() {
                            steps.insert(j, vec![*t]);
                        }
                    }
                    if model().vocab().is_eog(picked) {
                        break;
                    }
                }
                if let Picker::Chain {
                    grammar: Some(g), ..
                } = &p
                {
                    woken += usize::from(g.is_awake());
                }
            }
        }
    }
    eprintln!("{trials} trials: {woken} woke the grammar, {refused} straddlers refused");
    assert!(woken > trials / 4, "{woken} of {trials} woke the grammar");
    assert!(refused > 0, "no straddler was ever refused");
}
