//! Recognising a model's family from its chat template: by the markers the
//! template teaches the model (how it writes a call), never by the model's
//! or the file's name. A template that teaches none of them, or does not
//! mention `tools` at all, gets hearth's XML protocol.

use super::ModelFamily;

/// The family whose markers `template` uses.
pub fn detect(template: &str) -> ModelFamily {
    let has = |marker: &str| template.contains(marker);
    if !has("tools") {
        return ModelFamily::Xml;
    }
    if has("<|channel|>") && has("<|message|>") {
        ModelFamily::Harmony
    } else if has("[TOOL_CALLS]") && has("[ARGS]") {
        ModelFamily::MistralV7
    } else if has("[TOOL_CALLS]") {
        ModelFamily::Mistral
    } else if has("tool▁calls▁begin") || has("tool▁call▁begin") {
        ModelFamily::DeepSeek
    } else if has("<|START_ACTION|>") {
        ModelFamily::CommandR
    } else if has("<|tool_call>") && has("<tool_call|>") {
        ModelFamily::Gemma4
    } else if has("<|tool_calls_section_begin|>") {
        ModelFamily::Kimi
    } else if has("<arg_key>") && has("<tool_call>") {
        ModelFamily::Glm
    } else if has("<TOOLCALL>") {
        ModelFamily::Nemotron
    } else if has("<|tool_call|>") && has("<|/tool_call|>") {
        ModelFamily::Phi4
    } else if has("<|tool_call|>") {
        ModelFamily::Granite
    } else if has("<tool_call>") {
        ModelFamily::Hermes
    } else if has("<|start_header_id|>") && (has("ipython") || has("<|python_tag|>")) {
        ModelFamily::Llama3
    } else {
        ModelFamily::Xml
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_decide_and_names_do_not() {
        assert_eq!(detect("{{ messages }}"), ModelFamily::Xml);
        // A template that never mentions tools keeps hearth's protocol,
        // whatever it is called.
        assert_eq!(detect("<tool_call> {{ messages }}"), ModelFamily::Xml);
        assert_eq!(
            detect("{% if tools %}<tool_call>{% endif %}"),
            ModelFamily::Hermes
        );
        assert_eq!(
            detect("{% if tools %}<tool_call>name<arg_key>{% endif %}"),
            ModelFamily::Glm
        );
        assert_eq!(
            detect("tools [TOOL_CALLS]name[ARGS]"),
            ModelFamily::MistralV7
        );
        assert_eq!(detect("tools [TOOL_CALLS]["), ModelFamily::Mistral);
        assert_eq!(
            detect("tools <|start_header_id|>ipython<|end_header_id|>"),
            ModelFamily::Llama3
        );
    }
}
