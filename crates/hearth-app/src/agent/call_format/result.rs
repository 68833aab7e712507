//! Tool results on their way back to the model, in hearth's XML form.

use crate::agent::types::ToolResultMessage;

/// `<tool_result name="…" status="ok|error">…</tool_result>`.
pub fn xml(result: &ToolResultMessage) -> String {
    let status = if result.is_error { "error" } else { "ok" };
    let name: String = result
        .name
        .chars()
        .filter(|c| !matches!(c, '"' | '<' | '>'))
        .collect();
    format!(
        "<tool_result name=\"{name}\" status=\"{status}\">\n{}\n</tool_result>",
        result.content
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_result_format() {
        let r = ToolResultMessage {
            call_id: "call_1".into(),
            name: "file_read".into(),
            content: "hello".into(),
            is_error: false,
        };
        assert_eq!(
            xml(&r),
            "<tool_result name=\"file_read\" status=\"ok\">\nhello\n</tool_result>"
        );
        let e = ToolResultMessage {
            is_error: true,
            ..r
        };
        assert!(xml(&e).contains("status=\"error\""));
    }
}
