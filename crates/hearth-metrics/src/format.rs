//! The two text formats a scraper may ask for: OpenMetrics (what
//! `prometheus-client` writes, and what Prometheus asks for first) and the
//! older Prometheus text format 0.0.4 (`text/plain; version=0.0.4`), which
//! many tools still send and parse alone.

/// OpenMetrics' content type.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The Prometheus text format's content type.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Which format an `Accept` header asks for: OpenMetrics when it names it,
/// else the Prometheus text format (what a client that names neither, or
/// `text/plain`, can read).
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.to_ascii_lowercase()
            .contains("application/openmetrics-text")
    })
}

/// OpenMetrics text as the Prometheus text format: counters' families are
/// named with their `_total` samples, `info` families become gauges named
/// `_info`, `unknown` becomes `untyped`, and the `# UNIT` and `# EOF` lines
/// (which 0.0.4 lacks) go.
pub fn to_prometheus_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let (new_name, new_kind) = match kind {
                "counter" => (format!("{name}_total"), "counter"),
                "info" => (format!("{name}_info"), "gauge"),
                "unknown" => (name.to_string(), "untyped"),
                other => (name.to_string(), other),
            };
            // The HELP line came first: name it the same way.
            if let Some(help) = out
                .rfind(&format!("# HELP {name} "))
                .filter(|_| new_name != name)
            {
                out.replace_range(help + 7..help + 7 + name.len(), &new_name);
            }
            out.push_str(&format!("# TYPE {new_name} {new_kind}\n"));
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_infos_are_named_as_the_older_format_wants() {
        let om = "# HELP hearth_messages Messages.\n# TYPE hearth_messages counter\nhearth_messages_total{channel=\"a\"} 1\n# HELP hearth_build The build.\n# TYPE hearth_build info\nhearth_build_info{version=\"1\"} 1\n# HELP q Depth.\n# TYPE q gauge\nq 2\n# EOF\n";
        let text = to_prometheus_text(om);
        assert_eq!(
            text,
            "# HELP hearth_messages_total Messages.\n# TYPE hearth_messages_total counter\nhearth_messages_total{channel=\"a\"} 1\n# HELP hearth_build_info The build.\n# TYPE hearth_build_info gauge\nhearth_build_info{version=\"1\"} 1\n# HELP q Depth.\n# TYPE q gauge\nq 2\n"
        );
        assert!(wants_openmetrics(Some(
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
        )));
        assert!(!wants_openmetrics(Some("text/plain;version=0.0.4")));
        assert!(!wants_openmetrics(None));
    }
}
