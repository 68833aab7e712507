//! Documents by meaning with the real embedding test model
//! (all-MiniLM-L6-v2): a question in other words finds the piece that
//! answers it, where the words alone find nothing (the control: the same
//! store without the model); a later turn carries it only when it means
//! what was asked; nobody's pieces are searched for another person; the
//! indexing loop embeds every piece once, and vectors go with their rows.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hearth::documents::{DocumentStore, Extracted, Kind, TurnLimits, context};
use hearth::embed::{Backlog, Embed};

const LATE: &str =
    "Work handed in after the deadline loses five points for each day it is overdue.";
const SAFETY: &str =
    "Goggles and closed shoes must be worn in the chemistry laboratory at all times.";
const EXAM: &str = "The final examination is a closed-book written paper of three hours in June.";
/// Paraphrases that share no word the search looks for with their pieces.
const ASKS: [(&str, &str); 3] = [
    ("What is the penalty if my homework comes in late?", LATE),
    ("What protective gear do I need for experiments?", SAFETY),
    ("Can I use my textbook during the end-of-year test?", EXAM),
];

/// Sentences about other things, as a syllabus page has around its rule.
const AROUND: [&str; 8] = [
    "Office hours are held on Mondays from two to four in room 2.14 of the main building.",
    "The course introduces descriptive statistics, probability and simple regression.",
    "Readings are posted on the course page a week before each seminar meets.",
    "Seminar groups are assigned in the first week and stay the same all term.",
    "The teaching assistants answer questions on the forum within two working days.",
    "Slides from each lecture are shared after the session, not before it.",
    "Students who miss a seminar should read the notes of a classmate.",
    "The reading list is long; nobody is expected to read every item on it.",
];

/// A page of about 1,000 characters with `sentence` in its middle.
/// The test model, counting the calls made of it.
struct Counting(Arc<hearth::engine::EmbeddingModel>, AtomicUsize);

impl Embed for Counting {
    fn model_id(&self) -> &str {
        Embed::model_id(&*self.0)
    }

    fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, hearth::embed::EmbedError> {
        self.1.fetch_add(1, Ordering::SeqCst);
        Embed::embed(&*self.0, texts)
    }
}

fn page(at: usize, sentence: &str) -> String {
    let mut lines: Vec<&str> = (0..8).map(|i| AROUND[(at + i) % AROUND.len()]).collect();
    lines.insert(4, sentence);
    lines.join(" ")
}

fn store(dir: &std::path::Path, meaning: Option<Arc<dyn Embed>>) -> DocumentStore {
    let mut store = DocumentStore::open(&dir.join("documents.sqlite3")).unwrap();
    if let Some(m) = meaning {
        store = store.with_meaning(m);
    }
    store
}

#[test]
fn a_question_in_other_words_finds_its_page_by_meaning_and_only_for_its_owner() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(Counting(
        crate::common::embedding_model(),
        AtomicUsize::new(0),
    ));
    let with = store(dir.path(), Some(model.clone()));
    let doc = Extracted {
        kind: Kind::Text,
        pages: vec![page(0, LATE), page(3, SAFETY), page(5, EXAM)],
        cut: false,
    };
    with.add("telegram:42", "syllabus.pdf", "sent", &doc, 1)
        .unwrap();
    // The indexing loop's step embeds every piece once.
    assert_eq!(Backlog::embed_missing(&with, 100).unwrap(), 3);
    assert_eq!(Backlog::embed_missing(&with, 100).unwrap(), 0);

    let without = store(dir.path(), None);
    for (question, answer) in ASKS {
        let found = with.search(&["telegram:42"], question, None, 3).unwrap();
        let sims: Vec<(usize, Option<f32>)> =
            found.iter().map(|f| (f.page, f.similarity)).collect();
        eprintln!("{question} -> {sims:?}");
        assert!(found[0].text.contains(answer), "{question}: {found:?}");
        // The control: by words alone, nothing answers.
        let by_words = without.search(&["telegram:42"], question, None, 3).unwrap();
        assert!(
            by_words.iter().all(|f| !f.text.contains(answer)),
            "{question}: {by_words:?}"
        );
        // A later turn carries the piece that means it, and no other.
        let later = context::for_turn(
            &with,
            &["telegram:42"],
            &[],
            question,
            TurnLimits::default(),
        )
        .unwrap();
        assert_eq!(later.len(), 1, "{question}: {later:?}");
        assert!(later[0].text.contains(answer), "{question}: {later:?}");
        // Another person's question never reaches them.
        assert!(
            with.search(&["telegram:43"], question, None, 3)
                .unwrap()
                .is_empty()
        );
    }
    // A person with nothing embedded costs no call to the model.
    let calls = model.1.load(Ordering::SeqCst);
    let none = context::for_turn(
        &with,
        &["telegram:43"],
        &[],
        ASKS[0].0,
        TurnLimits::default(),
    );
    assert!(none.unwrap().is_empty());
    assert_eq!(model.1.load(Ordering::SeqCst), calls);
    // A question about something else carries nothing.
    for other in [
        "What's the weather like tomorrow?",
        "Recommend me a good pizza place",
    ] {
        let found = with.search(&["telegram:42"], other, None, 3).unwrap();
        let sims: Vec<Option<f32>> = found.iter().map(|f| f.similarity).collect();
        eprintln!("{other} -> {sims:?}");
        let later =
            context::for_turn(&with, &["telegram:42"], &[], other, TurnLimits::default()).unwrap();
        assert!(later.is_empty(), "{other}: {later:?}");
    }
    // Vectors go with their rows.
    let id = with.list(&["telegram:42"]).unwrap()[0].id;
    assert!(with.forget(&["telegram:42"], id).unwrap());
    let dir_path = dir.path().join("documents.sqlite3");
    let c = rusqlite::Connection::open(dir_path).unwrap();
    let left: i64 = c
        .query_row("SELECT count(*) FROM chunk_vectors", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0);
}
