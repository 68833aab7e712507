//! Log filters that name hearth's parts as they were named before the
//! parts became crates (`RUST_LOG=hearth::pipeline=debug`), read as the
//! crates that hold them now (`hearth_app::pipeline=debug`).
//!
//! A log line's target is the module it comes from, so moving the
//! pipeline into `hearth-app` renamed its target; a person's filter, a
//! script's or a unit file's, keeps working because each directive that
//! names a moved part is given a second directive for the part's new home.
//! (`hearth` alone already covers every `hearth_*` crate: a directive's
//! target matches as a prefix.)

/// Where a part named `hearth::<part>` lives now, by its first segments.
const MOVED: &[(&str, &str)] = &[
    ("channels::telegram", "hearth_telegram"),
    ("channels::gateway", "hearth_gateway"),
    ("channels::acp", "hearth_acp"),
    ("channels", "hearth_channel"),
    ("metrics", "hearth_metrics"),
    ("config", "hearth_config"),
    ("tools", "hearth_tools"),
    ("security::policy", "hearth_sandbox::policy"),
    ("security", "hearth_tools::security"),
    ("providers", "hearth_providers"),
    ("history", "hearth_store::history"),
    ("inbox", "hearth_store::inbox"),
    ("storage", "hearth_store::storage"),
    ("lock", "hearth_store::lock"),
    ("memory", "hearth_memory"),
    ("scheduler", "hearth_scheduler"),
    ("lms", "hearth_lms"),
    ("mcp", "hearth_mcp"),
    ("paths", "hearth_core::paths"),
    ("workspace", "hearth_core::workspace"),
    ("daemon", "hearth_app::daemon"),
];

/// The parts that stayed in the `hearth` crate.
const STAYED: &[&str] = &["cli", "channels::cli"];

/// `spec` with every directive naming a moved part followed by the same
/// directive for its new home.
pub fn translate(spec: &str) -> String {
    spec.split(',')
        .flat_map(|directive| {
            let moved = new_home(directive.trim()).map(|target| {
                let rest = &directive.trim()[target.0.len()..];
                format!("{}{rest}", target.1)
            });
            std::iter::once(directive.to_string()).chain(moved)
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The old target at the start of `directive` and its new one.
fn new_home(directive: &str) -> Option<(String, String)> {
    let end = directive.find(['=', '[']).unwrap_or(directive.len());
    let target = &directive[..end];
    let part = target.strip_prefix("hearth::")?;
    let segments = |prefix: &str| part == prefix || part.starts_with(&format!("{prefix}::"));
    if STAYED.iter().any(|p| segments(p)) {
        return None;
    }
    let now = match MOVED.iter().find(|(p, _)| segments(p)) {
        Some((p, crate_path)) => format!("{crate_path}{}", &part[p.len()..]),
        None => format!("hearth_app::{part}"),
    };
    Some((target.to_string(), now))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moved_part_is_named_in_its_new_home_too() {
        assert_eq!(
            translate("hearth::pipeline=debug"),
            "hearth::pipeline=debug,hearth_app::pipeline=debug"
        );
        assert_eq!(
            translate("warn,hearth::channels::telegram::listen=trace"),
            "warn,hearth::channels::telegram::listen=trace,hearth_telegram::listen=trace"
        );
        assert_eq!(
            translate("hearth::channels[turn]=info"),
            "hearth::channels[turn]=info,hearth_channel[turn]=info"
        );
        assert_eq!(
            translate("hearth::metrics"),
            "hearth::metrics,hearth_metrics"
        );
        assert_eq!(
            translate("hearth::inbox::store=debug"),
            "hearth::inbox::store=debug,hearth_store::inbox::store=debug"
        );
        assert_eq!(
            translate("hearth::memory=trace"),
            "hearth::memory=trace,hearth_memory=trace"
        );
    }

    #[test]
    fn what_did_not_move_is_left_alone() {
        for spec in [
            "warn",
            "hearth=debug",
            "hearth::cli::ask=info",
            "hearth::channels::cli=debug",
            "llama.cpp=debug,hearth_engine=info",
            "hearth::pipelines_are_not_a_part_but_still_a_path=info",
        ] {
            let translated = translate(spec);
            assert!(translated.starts_with(spec), "{spec} → {translated}");
        }
        assert_eq!(translate("hearth::cli::ask=info"), "hearth::cli::ask=info");
        assert_eq!(translate("warn"), "warn");
    }
}
