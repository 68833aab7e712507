//! The house rules the compiler cannot check. The floors are crates
//! (`hearth-core` <- `hearth-channel`, `hearth-metrics`, `hearth-sandbox`,
//! `hearth-engine` <- `hearth-app` <- `hearth`, with the channel crates on
//! `hearth-channel` alone and the gateway on `hearth-metrics` too), so an import the wrong way between them does not compile; these
//! tests keep what is left: which crate may depend on which (Cargo would
//! accept a lower crate naming an upper one that does not name it back),
//! which part of the assistant may import which (read from the `crate::`
//! paths of the production code in `crates/hearth-app/src/` and `src/`),
//! how long a production file may grow, and that waits double only through
//! the one retry policy.
//! Functions stay under 80 lines. `docs/ARCHITECTURE.md` draws the same
//! picture.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Longest production file, in lines.
const MAX_LINES: usize = 500;

/// Edges between the parts read by [`imports`] that must never appear,
/// beyond the rule against any circle. (The engine, the vocabularies, the
/// sandbox, the config, the tools, the providers, memory, the scheduler,
/// the LMS notifier, MCP and the channels are crates of their own: the
/// compiler holds their walls. The history shares `hearth-store` with the
/// inbox, which stores channels' messages, so its rule is kept here.)
const FORBIDDEN: &[(&str, &[&str])] = &[("history", &["pipeline", "channels", "agent"])];

/// The crates below `hearth` and the hearth crates each may depend on. A
/// channel crate stands on the channels' vocabulary and the core only:
/// never on the assistant (its pipeline, its stores) nor another channel.
const FLOORS: &[(&str, &[&str])] = &[
    ("hearth-core", &[]),
    ("hearth-channel", &["hearth-core"]),
    ("hearth-metrics", &["hearth-core"]),
    ("hearth-sandbox", &["hearth-core"]),
    ("hearth-engine", &["hearth-core"]),
    ("hearth-voice", &[]),
    (
        "hearth-config",
        &["hearth-channel", "hearth-core", "hearth-sandbox"],
    ),
    (
        "hearth-tools",
        &["hearth-config", "hearth-core", "hearth-sandbox"],
    ),
    (
        "hearth-providers",
        &["hearth-config", "hearth-core", "hearth-engine"],
    ),
    ("hearth-store", &["hearth-channel", "hearth-core"]),
    (
        "hearth-memory",
        &[
            "hearth-config",
            "hearth-core",
            "hearth-engine",
            "hearth-providers",
            "hearth-store",
            "hearth-tools",
        ],
    ),
    (
        "hearth-scheduler",
        &[
            "hearth-config",
            "hearth-core",
            "hearth-store",
            "hearth-tools",
        ],
    ),
    (
        "hearth-lms",
        &[
            "hearth-config",
            "hearth-core",
            "hearth-providers",
            "hearth-store",
            "hearth-tools",
        ],
    ),
    (
        "hearth-documents",
        &[
            "hearth-core",
            "hearth-sandbox",
            "hearth-store",
            "hearth-tools",
        ],
    ),
    (
        "hearth-mcp",
        &[
            "hearth-config",
            "hearth-core",
            "hearth-providers",
            "hearth-sandbox",
            "hearth-tools",
        ],
    ),
    (
        "hearth-app",
        &[
            "hearth-channel",
            "hearth-config",
            "hearth-core",
            "hearth-documents",
            "hearth-engine",
            "hearth-lms",
            "hearth-mcp",
            "hearth-memory",
            "hearth-metrics",
            "hearth-providers",
            "hearth-sandbox",
            "hearth-scheduler",
            "hearth-store",
            "hearth-tools",
            "hearth-voice",
        ],
    ),
    ("hearth-telegram", &["hearth-channel", "hearth-core"]),
    ("hearth-email", &["hearth-channel", "hearth-core"]),
    ("hearth-matrix", &["hearth-channel", "hearth-core"]),
    ("hearth-acp", &["hearth-channel", "hearth-core"]),
    (
        "hearth-gateway",
        &["hearth-channel", "hearth-core", "hearth-metrics"],
    ),
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every production source folder: the `hearth` crate's and the floors'.
fn all_sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    for (name, _) in FLOORS {
        rust_files(&root().join("crates").join(name).join("src"), &mut files);
    }
    files
}

/// The assistant's parts: `hearth-app`'s folders.
fn src() -> PathBuf {
    root().join("crates/hearth-app/src")
}

/// The folders whose parts import each other through `crate::`: the
/// assistant's, the binary's above it (whose `crate::x` names the
/// assistant's part `x`, re-exported), and the conversation stores' (whose
/// `crate::history` and `crate::inbox` are parts of their own).
fn part_roots() -> [PathBuf; 3] {
    [
        src(),
        root().join("src"),
        root().join("crates/hearth-store/src"),
    ]
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The production part of a file: test files left out, and in the others
/// every top-level `#[cfg(test)]` item (a `mod tests { … }` wherever it
/// stands, a test-only function or `mod x;`), so that production code after
/// a test module is still read. The code is rustfmt's: a top-level item ends
/// at a `}` or `;` in the first column. A `#[cfg(test)]` inside an item is
/// counted as production, which errs on the strict side.
fn production(path: &Path) -> Option<String> {
    if path.file_name().is_some_and(|n| n == "tests.rs")
        // Test modules in folders of their own (`#[cfg(test)] mod fixtures;`).
        || path
            .components()
            .any(|c| c.as_os_str() == "tests" || c.as_os_str() == "fixtures")
    {
        return None;
    }
    Some(without_tests(
        &std::fs::read_to_string(path).expect("a readable source file"),
    ))
}

fn without_tests(text: &str) -> String {
    let mut kept = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim_end() != "#[cfg(test)]" {
            kept.push_str(line);
            kept.push('\n');
            continue;
        }
        // Skip the item: its other attributes, then up to its end.
        for line in lines.by_ref() {
            let line = line.trim_end();
            if line.starts_with("#[") {
                continue;
            }
            if line == "}" || (line.ends_with(';') && !line.starts_with(' ')) {
                break;
            }
        }
    }
    kept
}

/// The top-level module a file under one of the [`part_roots`] belongs to.
fn part_of(path: &Path) -> String {
    let relative = part_roots()
        .iter()
        .find_map(|root| path.strip_prefix(root).ok())
        .expect("a file under src");
    let first = relative
        .components()
        .next()
        .expect("a path under src")
        .as_os_str()
        .to_string_lossy()
        .to_string();
    first.trim_end_matches(".rs").to_string()
}

/// Every part and the parts its production code names (`crate::x`), with
/// one file that does, for the message.
fn imports() -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let mut files = Vec::new();
    for root in part_roots() {
        rust_files(&root, &mut files);
    }
    let pattern = regex::Regex::new(r"crate::([a-z_]+)").expect("a valid pattern");
    let mut graph: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for path in files {
        let part = part_of(&path);
        if matches!(part.as_str(), "lib" | "main") {
            continue;
        }
        let Some(code) = production(&path) else {
            continue;
        };
        let edges = graph.entry(part.clone()).or_default();
        for found in pattern.captures_iter(&code) {
            let target = found[1].to_string();
            if target != part {
                edges.entry(target).or_insert_with(|| path.clone());
            }
        }
    }
    graph
}

/// A circle through `start`, if there is one.
fn circle(graph: &BTreeMap<String, BTreeMap<String, PathBuf>>, start: &str) -> Option<Vec<String>> {
    fn walk(
        graph: &BTreeMap<String, BTreeMap<String, PathBuf>>,
        at: &str,
        start: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in graph.get(at).into_iter().flat_map(|e| e.keys()) {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, next, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    walk(graph, start, start, &mut path, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn no_part_imports_a_part_that_depends_on_it() {
    let graph = imports();
    assert!(
        graph.contains_key("history") && graph.contains_key("pipeline"),
        "the parts were found: {:?}",
        graph.keys().collect::<Vec<_>>()
    );
    let circles: Vec<String> = graph
        .keys()
        .filter_map(|part| circle(&graph, part))
        .map(|c| {
            let steps: Vec<String> = c
                .windows(2)
                .map(|w| format!("{} → {} ({})", w[0], w[1], graph[&w[0]][&w[1]].display()))
                .collect();
            steps.join(", ")
        })
        .collect();
    assert!(
        circles.is_empty(),
        "imports go in a circle:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_lower_parts_do_not_import_the_upper_ones() {
    let graph = imports();
    let mut broken = Vec::new();
    for (part, banned) in FORBIDDEN {
        for target in *banned {
            if let Some(file) = graph.get(*part).and_then(|e| e.get(*target)) {
                broken.push(format!("{part} imports {target} ({})", file.display()));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_check_sees_an_import_where_there_is_one() {
    // A positive control: the pipeline does use the engine's neighbours,
    // so an empty graph cannot pass the tests above.
    let graph = imports();
    assert!(graph["pipeline"].contains_key("chat"));
    assert!(graph["agent"].contains_key("tools"));
    assert!(
        circle(
            &BTreeMap::from([
                (
                    "a".to_string(),
                    BTreeMap::from([("b".to_string(), PathBuf::new())])
                ),
                (
                    "b".to_string(),
                    BTreeMap::from([("a".to_string(), PathBuf::new())])
                ),
            ]),
            "a"
        )
        .is_some()
    );
}

#[test]
fn test_code_is_left_out_wherever_it_stands_and_nothing_else_is() {
    let text = "use crate::chat::ChatMessage;\n\
                #[cfg(test)]\n\
                mod tests {\n    use crate::pipeline::Hook;\n\n    fn f() {\n        g();\n    }\n}\n\
                #[cfg(test)]\n\
                #[allow(dead_code)]\n\
                fn helper() -> crate::agent::Agent {\n    todo!()\n}\n\
                #[cfg(test)]\n\
                mod fixtures;\n\
                pub fn after() -> crate::engine::Engine {\n    todo!()\n}\n";
    let kept = without_tests(text);
    assert!(kept.contains("crate::chat"), "{kept}");
    assert!(
        kept.contains("crate::engine"),
        "code after the tests: {kept}"
    );
    assert!(!kept.contains("crate::pipeline"), "{kept}");
    assert!(!kept.contains("crate::agent"), "{kept}");
    assert!(!kept.contains("mod fixtures"), "{kept}");
}

#[test]
fn no_production_file_is_over_the_limit() {
    let files = all_sources();
    assert!(
        files
            .iter()
            .any(|f| f.ends_with("hearth-engine/src/lib.rs"))
    );
    let long: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let lines = production(path)?.lines().count();
            (lines > MAX_LINES).then(|| format!("{} ({lines} lines)", path.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these by concern (at most {MAX_LINES} lines of production code): {}",
        long.join(", ")
    );
}

/// Ways a doubling wait gets written by hand.
const DOUBLING: &[&str] = &[
    "* 2).min(",
    "*= 2",
    "saturating_pow(",
    "2u32.pow(",
    "<< attempt",
];

fn hand_written_doubling(code: &str) -> Vec<&'static str> {
    DOUBLING
        .iter()
        .copied()
        .filter(|pattern| code.contains(pattern))
        .collect()
}

#[test]
fn waits_that_double_come_from_the_one_retry_policy() {
    // Positive controls: the two shapes the code had before `retry.rs`.
    assert_eq!(
        hand_written_doubling("self.next = (self.next * 2).min(BACKOFF_MAX);"),
        ["* 2).min("]
    );
    assert_eq!(
        hand_written_doubling("sleep(Duration::from_millis(500 << attempt.min(4)))"),
        ["<< attempt"]
    );
    let files = all_sources();
    let policy = root().join("crates/hearth-core/src/retry.rs");
    assert!(files.contains(&policy));
    let copies: Vec<String> = files
        .iter()
        .filter(|path| **path != policy)
        .filter_map(|path| {
            let found = hand_written_doubling(&production(path)?);
            (!found.is_empty()).then(|| format!("{} ({})", path.display(), found.join(", ")))
        })
        .collect();
    assert!(
        copies.is_empty(),
        "use hearth_core::retry::RetryPolicy instead of doubling by hand: {}",
        copies.join("; ")
    );
}

/// The hearth crates a manifest depends on (`[dependencies]` only).
fn hearth_dependencies(manifest: &str) -> Vec<String> {
    let value: toml::Table = toml::from_str(manifest).expect("a manifest in TOML");
    let mut found: Vec<String> = value
        .get("dependencies")
        .and_then(|d| d.as_table())
        .into_iter()
        .flat_map(|d| d.keys())
        .filter(|name| name.starts_with("hearth"))
        .cloned()
        .collect();
    found.sort();
    found
}

#[test]
fn each_floor_depends_only_on_the_floors_below_it() {
    // A positive control: a lower crate naming an upper one is seen.
    assert_eq!(
        hearth_dependencies(
            "[dependencies]\nhearth-core.workspace = true\nhearth = { path = \"../..\" }\n"
        ),
        ["hearth", "hearth-core"]
    );
    for (name, allowed) in FLOORS {
        let manifest = std::fs::read_to_string(root().join("crates").join(name).join("Cargo.toml"))
            .expect("the crate's manifest");
        let found = hearth_dependencies(&manifest);
        let beyond: Vec<&String> = found
            .iter()
            .filter(|dep| !allowed.contains(&dep.as_str()))
            .collect();
        assert!(
            beyond.is_empty(),
            "{name} may depend on {allowed:?} only, not {beyond:?}"
        );
    }
}

#[test]
fn only_the_engine_crate_speaks_to_llama_cpp() {
    // hearth names llama-cpp-sys-2 only so its build script learns where the
    // libraries were built; its code goes through hearth-engine.
    let mut files = Vec::new();
    for (name, _) in FLOORS.iter().filter(|(name, _)| *name != "hearth-engine") {
        rust_files(&root().join("crates").join(name).join("src"), &mut files);
    }
    rust_files(&root().join("src"), &mut files);
    let direct: Vec<String> = files
        .iter()
        .filter(|path| production(path).is_some_and(|code| code.contains("llama_cpp_")))
        .map(|path| path.display().to_string())
        .collect();
    assert!(direct.is_empty(), "use hearth::engine instead: {direct:?}");
    let mut engine = Vec::new();
    rust_files(&root().join("crates/hearth-engine/src"), &mut engine);
    assert!(
        engine
            .iter()
            .any(|path| production(path).is_some_and(|code| code.contains("llama_cpp_2"))),
        "the check would see a direct use"
    );
}

/// A channel's name as a string in code: how code that should ask a
/// channel what it can do would recognise it instead.
fn names_a_channel(code: &str) -> Vec<&'static str> {
    ["\"telegram\"", "\"cli\"", "\"gateway\"", "\"acp\""]
        .into_iter()
        .filter(|name| code.contains(name))
        .collect()
}

#[test]
fn no_part_above_the_channels_recognises_one_by_its_name() {
    // A positive control: the check that prompt.rs had before capabilities.
    assert_eq!(
        names_a_channel("match channel { \"telegram\" => MARKDOWN, _ => PLAIN }"),
        ["\"telegram\""]
    );
    let mut files = Vec::new();
    for part in ["pipeline", "dispatch", "agent"] {
        rust_files(&src().join(part), &mut files);
    }
    for folder in [
        "crates/hearth-memory/src",
        "crates/hearth-tools/src",
        "crates/hearth-store/src/inbox",
    ] {
        rust_files(&root().join(folder), &mut files);
    }
    assert!(files.len() > 20, "the parts were found");
    let found: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let names = names_a_channel(&production(path)?);
            (!names.is_empty()).then(|| format!("{} ({})", path.display(), names.join(", ")))
        })
        .collect();
    assert!(
        found.is_empty(),
        "ask the channel (Channel::shows, drafts, presence, stream) instead: {}",
        found.join("; ")
    );
}

/// Longest production function, in lines (its `fn` line to its closing
/// brace, as rustfmt writes it).
const MAX_FUNCTION_LINES: usize = 80;

/// The functions of `code` longer than [`MAX_FUNCTION_LINES`], with their
/// length. A function is a line that starts (after its indent and
/// qualifiers) with `fn NAME` and does not end in `;`; it ends at the
/// first line that is its indent and `}`.
fn long_functions(code: &str) -> Vec<(String, usize)> {
    let pattern = regex::Regex::new(
        r"^(\s*)(?:pub(?:\([a-z:]+\))? )?(?:const )?(?:async )?(?:unsafe )?fn ([a-z_0-9]+)",
    )
    .expect("a valid pattern");
    let lines: Vec<&str> = code.lines().collect();
    let mut long = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let Some(found) = pattern.captures(line) else {
            continue;
        };
        if line.trim_end().ends_with(';') {
            continue;
        }
        let end = format!("{}}}", &found[1]);
        if let Some(last) = lines[at..].iter().position(|l| *l == end) {
            let length = last + 1;
            if length > MAX_FUNCTION_LINES {
                long.push((found[2].to_string(), length));
            }
        }
    }
    long
}

#[test]
fn no_production_function_is_over_the_limit() {
    // Positive controls: a long function is seen, a short one and a
    // declaration are not.
    let body = "        x();\n".repeat(MAX_FUNCTION_LINES);
    let long = format!("    pub async fn big(&self) {{\n{body}    }}\n");
    assert_eq!(
        long_functions(&long),
        [("big".to_string(), MAX_FUNCTION_LINES + 2)]
    );
    assert!(long_functions("fn small() {\n    x();\n}\nfn declared(&self);\n").is_empty());
    let found: Vec<String> = all_sources()
        .iter()
        .flat_map(|path| {
            let code = production(path).unwrap_or_default();
            long_functions(&code)
                .into_iter()
                .map(move |(name, lines)| format!("{} `{name}` ({lines} lines)", path.display()))
        })
        .collect();
    assert!(
        found.is_empty(),
        "split these (at most {MAX_FUNCTION_LINES} lines a function): {}",
        found.join(", ")
    );
}
