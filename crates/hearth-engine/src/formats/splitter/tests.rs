use super::*;
use crate::formats::{ModelFamily, format};

fn hermes(in_reasoning: bool, stops: Vec<String>, tools: bool) -> Splitter {
    format(ModelFamily::Hermes).splitter(in_reasoning, stops, tools)
}

/// Feeds `chunks` one by one and joins neighbouring pieces of one kind.
fn run(filter: &mut Splitter, chunks: &[&str]) -> Vec<Piece> {
    let mut pieces: Vec<Piece> = chunks.iter().flat_map(|c| filter.push(c)).collect();
    pieces.extend(filter.finish());
    let mut merged: Vec<Piece> = Vec::new();
    for p in pieces {
        match (merged.last_mut(), p) {
            (Some(Piece::Content(a)), Piece::Content(b)) => a.push_str(&b),
            (Some(Piece::Reasoning(a)), Piece::Reasoning(b)) => a.push_str(&b),
            (_, p) => merged.push(p),
        }
    }
    merged
}

fn every_split(text: &str) -> Vec<Vec<&str>> {
    (0..=text.len())
        .filter(|&i| text.is_char_boundary(i))
        .map(|i| vec![&text[..i], &text[i..]])
        .collect()
}

#[test]
fn a_template_opened_think_block() {
    let mut f = hermes(true, vec![], false);
    assert_eq!(
        run(&mut f, &["weigh ", "options</th", "ink>\n\nDone"]),
        [
            Piece::Reasoning("weigh options".into()),
            Piece::Content("\n\nDone".into())
        ]
    );
}

#[test]
fn without_tools_a_call_marker_is_text() {
    let mut f = hermes(false, vec![], false);
    assert_eq!(
        run(&mut f, &["a <tool_call> b"]),
        [Piece::Content("a <tool_call> b".into())]
    );
}

#[test]
fn an_unfinished_call_is_reported_as_open() {
    let mut f = hermes(false, vec![], true);
    assert_eq!(
        run(&mut f, &["<tool_call>{\"name\": \"f\", \"argu"]),
        [Piece::Call {
            text: "<tool_call>{\"name\": \"f\", \"argu".into(),
            closed: false
        }]
    );
}

#[test]
fn an_unbalanced_quote_still_ends_at_the_first_closing_marker() {
    let mut f = hermes(false, vec![], true);
    assert_eq!(
        run(&mut f, &["<tool_call>{\"q\": \"it</tool_call>", " done"]),
        [
            Piece::Call {
                text: "<tool_call>{\"q\": \"it</tool_call>".into(),
                closed: true
            },
            Piece::Content(" done".into())
        ]
    );
}

#[test]
fn stop_strings_end_the_reply_before_them() {
    for chunks in every_split("Hello.\nUser: more") {
        let mut f = hermes(false, vec!["\nUser:".into()], false);
        assert_eq!(
            run(&mut f, &chunks),
            [Piece::Content("Hello.".into()), Piece::Stop],
            "{chunks:?}"
        );
    }
}

#[test]
fn held_back_text_is_released_when_it_is_not_a_marker() {
    let mut f = hermes(false, vec![], true);
    assert_eq!(f.push("a <"), [Piece::Content("a ".into())]);
    assert_eq!(f.push("b"), [Piece::Content("<b".into())]);
    assert_eq!(f.push("é<thi"), [Piece::Content("é".into())]);
    assert_eq!(f.finish(), [Piece::Content("<thi".into())]);
}

#[test]
fn a_start_only_marker_counts_only_before_the_answer() {
    let llama = |text: &str| {
        let mut f = format(ModelFamily::Llama3).splitter(false, vec![], true);
        run(&mut f, &[text])
    };
    assert!(matches!(
        &llama("  {\"name\": \"f\"}")[..],
        [.., Piece::Call { .. }]
    ));
    assert_eq!(
        llama("Here: {\"name\": \"f\"}"),
        [Piece::Content("Here: {\"name\": \"f\"}".into())]
    );
}

/// The forced call the outside run saw come back as `tool_calls: []`: the
/// model wrote the closing marker inside an argument's string and the
/// token limit cut the reply there. A cut reply's call stays unclosed (the
/// marker was the string's), where a reply that ended on its own still
/// closes at the first marker (the control).
#[test]
fn a_cut_reply_never_closes_its_call_at_a_marker_inside_a_string() {
    let text = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \");}\n</tool_call>\n more";
    let mut cut = hermes(false, vec![], true);
    let mut pieces = cut.push(text);
    pieces.extend(cut.finish_cut());
    assert_eq!(
        pieces,
        [Piece::Call {
            text: text.into(),
            closed: false
        }]
    );
    let mut ended = hermes(false, vec![], true);
    let mut pieces = ended.push(text);
    pieces.extend(ended.finish());
    assert!(
        matches!(&pieces[0], Piece::Call { closed: true, text } if text.ends_with("</tool_call>")),
        "{pieces:?}"
    );
    for family in [ModelFamily::Llama3, ModelFamily::Harmony] {
        let mut f = format(family).splitter(false, vec![], true);
        let opener = match family {
            ModelFamily::Harmony => {
                "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Par"
            }
            _ => "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Par",
        };
        let mut pieces = f.push(opener);
        pieces.extend(f.finish_cut());
        assert!(
            pieces
                .iter()
                .any(|p| matches!(p, Piece::Call { closed: false, .. })),
            "{family:?}: {pieces:?}"
        );
    }
}
