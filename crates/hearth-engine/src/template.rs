//! Chat templates: turning a list of messages into the model's prompt text.
//!
//! Templates are Jinja, rendered with minijinja (plus its Python-compatibility
//! methods such as `.strip()`, and `{% break %}`/`{% continue %}`, which HF
//! templates use). The template comes from `[model] chat_template` when set
//! — a built-in name or a file — and otherwise from the model's own
//! `tokenizer.chat_template` metadata.
//!
//! Templates are rendered as published, with the variables real ones read
//! set as Hugging Face's `apply_chat_template` sets them (`tools` is none
//! when no tool is offered), plus `date_string` (today, for Llama 3.x, which
//! otherwise prints a date of its own) and `tools_in_user_message = false`
//! (tools stay in the system turn, which does not move). A template that
//! rejects the system role (Gemma 2) gets the system text at the head of the
//! first user message instead: found once, when the template is loaded, by
//! rendering a system turn.

use std::path::Path;

use minijinja::{Environment, ErrorKind, Value, context};

use super::formats::{self, Format, ModelFamily};
use hearth_core::chat::{ChatMessage, Reasoning, Role, ToolSpec};

/// Built-in templates, shipped in `prompts/templates/` and compiled in.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "chatml",
        include_str!("../../../prompts/templates/chatml.jinja"),
    ),
    (
        "gemma",
        include_str!("../../../prompts/templates/gemma.jinja"),
    ),
    (
        "llama3",
        include_str!("../../../prompts/templates/llama3.jinja"),
    ),
];

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error(
        "the model has no chat template in its metadata; set `[model] chat_template` to one of chatml, gemma, llama3 or a .jinja file"
    )]
    Missing,
    #[error(
        "`[model] chat_template = \"{0}\"` is neither a built-in (chatml, gemma, llama3) nor a readable file"
    )]
    Unknown(String),
    #[error("chat template ({origin}) does not compile: {message}")]
    Compile { origin: String, message: String },
    #[error("chat template ({origin}) failed to render: {message}")]
    Render { origin: String, message: String },
}

/// Instructions one render may execute; real templates use well under a
/// million for a long conversation.
const TEMPLATE_FUEL: u64 = 20_000_000;

/// A compiled chat template with the special tokens it may refer to.
pub struct ChatTemplate {
    env: Environment<'static>,
    origin: String,
    bos_token: String,
    eos_token: String,
    /// The template raises on a system turn: its text goes to the first
    /// user turn.
    folds_system: bool,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("origin", &self.origin)
            .finish()
    }
}

/// Picks the template source: the configured one, else the model's own.
/// Returns the source text and a description of where it came from.
pub fn choose(
    configured: Option<&str>,
    from_model: Option<&str>,
) -> Result<(String, String), TemplateError> {
    match configured {
        Some(name) => {
            if let Some((_, src)) = BUILTIN.iter().find(|(n, _)| *n == name) {
                return Ok((src.to_string(), format!("built-in {name}")));
            }
            std::fs::read_to_string(Path::new(name))
                .map(|src| (src, format!("file {name}")))
                .map_err(|_| TemplateError::Unknown(name.to_string()))
        }
        None => from_model
            .map(|src| (src.to_string(), "the model's metadata".to_string()))
            .ok_or(TemplateError::Missing),
    }
}

impl ChatTemplate {
    pub fn new(
        source: String,
        origin: String,
        bos_token: &str,
        eos_token: &str,
    ) -> Result<Self, TemplateError> {
        let mut env = Environment::new();
        // A template is code from the model file: bound its work, so a
        // looping one fails with an error instead of hanging the engine.
        env.set_fuel(Some(TEMPLATE_FUEL));
        // As transformers (and llama.cpp) read templates: a block tag's
        // newline and the indentation before it are not output.
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |message: String| -> Result<Value, minijinja::Error> {
                Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
            },
        );
        env.add_function("strftime_now", |format: String| strftime_now(&format));
        // Tools as `transformers` writes them, not minijinja's HTML-safe JSON.
        env.add_filter("tojson", crate::tojson::tojson);
        env.add_template_owned("chat", source)
            .map_err(|e| TemplateError::Compile {
                origin: origin.clone(),
                message: e.to_string(),
            })?;
        let mut template = Self {
            env,
            origin,
            bos_token: bos_token.to_string(),
            eos_token: eos_token.to_string(),
            folds_system: false,
        };
        let probe = |t: &Self, messages: &[ChatMessage]| t.render(messages, true).is_ok();
        template.folds_system = !probe(
            &template,
            &[ChatMessage::system("s"), ChatMessage::user("u")],
        ) && probe(&template, &[ChatMessage::user("u")]);
        Ok(template)
    }

    /// Whether the system text goes to the first user turn (the template
    /// rejects a system turn).
    pub fn folds_system(&self) -> bool {
        self.folds_system
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Renders `messages` without tools; with `add_generation_prompt` the
    /// text ends where the assistant's reply should begin.
    pub fn render(
        &self,
        messages: &[ChatMessage],
        add_generation_prompt: bool,
    ) -> Result<String, TemplateError> {
        self.render_turn(&Turn {
            format: formats::format(ModelFamily::Xml),
            messages,
            tools: &[],
            reasoning: Reasoning::Auto,
            add_generation_prompt,
        })
    }

    /// Renders with tools offered in the form HF templates expect
    /// (`[{"type": "function", "function": {...}}]`) and messages in HF's
    /// shape; templates that do not mention `tools` ignore them.
    pub fn render_with_tools(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
        add_generation_prompt: bool,
    ) -> Result<String, TemplateError> {
        self.render_turn(&Turn {
            format: formats::format(ModelFamily::Hermes),
            messages,
            tools,
            reasoning: Reasoning::Auto,
            add_generation_prompt,
        })
    }

    /// Renders one turn: the messages in the family's shape, the tools (none
    /// when the slice is empty) and the reasoning variables.
    pub fn render_turn(&self, turn: &Turn<'_>) -> Result<String, TemplateError> {
        let render_err = |e: minijinja::Error| TemplateError::Render {
            origin: self.origin.clone(),
            message: if e.kind() == ErrorKind::OutOfFuel {
                format!(
                    "it ran past {TEMPLATE_FUEL} steps without finishing (does it loop?); set `[model] chat_template` to a working template"
                )
            } else {
                e.to_string()
            },
        };
        let template = self.env.get_template("chat").map_err(render_err)?;
        let folded;
        let messages = if self.folds_system {
            folded = fold_system(turn.messages);
            &folded[..]
        } else {
            turn.messages
        };
        let tools = if turn.tools.is_empty() {
            Value::from(())
        } else {
            Value::from_serialize(turn.tools.iter().map(Offered::new).collect::<Vec<_>>())
        };
        let mut vars = serde_json::Map::new();
        vars.insert(
            "messages".into(),
            serde_json::Value::Array(turn.format.messages(messages)),
        );
        vars.insert(
            "add_generation_prompt".into(),
            turn.add_generation_prompt.into(),
        );
        vars.insert("bos_token".into(), self.bos_token.clone().into());
        vars.insert("eos_token".into(), self.eos_token.clone().into());
        vars.insert("tools_in_user_message".into(), false.into());
        vars.insert(
            "date_string".into(),
            chrono::Local::now().format("%d %b %Y").to_string().into(),
        );
        reasoning_vars(turn.reasoning, &mut vars);
        let mut context = Value::from_serialize(&vars);
        // `tools` is none (not absent) without tools, as HF passes it.
        context = context! { tools => tools, ..context };
        template.render(context).map_err(render_err)
    }
}

/// What one render needs.
pub struct Turn<'a> {
    pub format: &'a dyn Format,
    pub messages: &'a [ChatMessage],
    pub tools: &'a [ToolSpec],
    pub reasoning: Reasoning,
    pub add_generation_prompt: bool,
}

/// The variables templates read for reasoning: `enable_thinking` (Qwen3,
/// GLM, Gemma 4, Nemotron), `thinking` (DeepSeek V3.1, Granite) and
/// `reasoning_effort` (gpt-oss, which cannot turn it off: "low"). `Auto`
/// sets none, leaving each template's default.
fn reasoning_vars(reasoning: Reasoning, vars: &mut serde_json::Map<String, serde_json::Value>) {
    let (on, effort) = match reasoning {
        Reasoning::Auto => return,
        Reasoning::Off => (false, "low"),
        Reasoning::Low => (true, "low"),
        Reasoning::Medium => (true, "medium"),
        Reasoning::High => (true, "high"),
    };
    vars.insert("enable_thinking".into(), on.into());
    vars.insert("thinking".into(), on.into());
    vars.insert("reasoning_effort".into(), effort.into());
}

/// A tool as templates expect it, keys in the order models were trained
/// on: `{"type": "function", "function": {"name", "description",
/// "parameters"}}`.
#[derive(serde::Serialize)]
struct Offered<'a> {
    r#type: &'static str,
    function: &'a ToolSpec,
}

impl<'a> Offered<'a> {
    fn new(function: &'a ToolSpec) -> Self {
        Self {
            r#type: "function",
            function,
        }
    }
}

/// `messages` with the system turns' text moved to the head of the first
/// user turn (one is made when there is none).
fn fold_system(messages: &[ChatMessage]) -> Vec<ChatMessage> {
    let system: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    let mut rest: Vec<ChatMessage> = messages
        .iter()
        .filter(|m| m.role != Role::System)
        .cloned()
        .collect();
    if system.is_empty() {
        return rest;
    }
    let system = system.join("\n\n");
    match rest.iter_mut().find(|m| m.role == Role::User) {
        Some(first) => first.content = format!("{system}\n\n{}", first.content),
        None => rest.insert(0, ChatMessage::user(system)),
    }
    rest
}

/// `strftime_now(format)` as HF templates call it: the local time in
/// `format` (chrono's strftime); a format chrono cannot read comes back
/// as it is rather than failing the render.
fn strftime_now(format: &str) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    match write!(out, "{}", chrono::Local::now().format(format)) {
        Ok(()) => out,
        Err(_) => format.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation() -> Vec<ChatMessage> {
        vec![
            ChatMessage::system("Be brief."),
            ChatMessage::user("Hi"),
            ChatMessage::assistant("Hello!"),
            ChatMessage::user("Capital of France?"),
        ]
    }

    fn builtin(name: &str, bos: &str) -> ChatTemplate {
        let (src, origin) = choose(Some(name), None).unwrap();
        ChatTemplate::new(src, origin, bos, "").unwrap()
    }

    #[test]
    fn a_looping_template_fails_with_a_clear_error() {
        let source = "{% for a in range(100000) %}{% for b in range(100000) %}{{ b }}{% endfor %}{% endfor %}";
        let t = ChatTemplate::new(source.to_string(), "test".into(), "", "").unwrap();
        let e = t.render(&[], true).unwrap_err().to_string();
        assert!(e.contains("does it loop?"), "{e}");
    }

    #[test]
    fn chatml() {
        let out = builtin("chatml", "").render(&conversation(), true).unwrap();
        assert_eq!(
            out,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nCapital of France?<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn gemma_folds_the_system_message_into_the_first_user_turn() {
        let out = builtin("gemma", "<bos>")
            .render(&conversation(), true)
            .unwrap();
        assert_eq!(
            out,
            "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n<start_of_turn>user\nCapital of France?<end_of_turn>\n<start_of_turn>model\n"
        );
    }

    #[test]
    fn llama3() {
        let out = builtin("llama3", "<|begin_of_text|>")
            .render(&conversation()[..2], true)
            .unwrap();
        assert_eq!(
            out,
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
        );
    }

    #[test]
    fn missing_and_unknown_templates_name_the_key() {
        assert!(
            choose(None, None)
                .unwrap_err()
                .to_string()
                .contains("[model] chat_template")
        );
        assert!(
            choose(Some("nope"), Some("x"))
                .unwrap_err()
                .to_string()
                .contains("chat_template = \"nope\"")
        );
        assert_eq!(choose(None, Some("{{x}}")).unwrap().0, "{{x}}");
    }

    #[test]
    fn hf_features_work_and_raise_exception_is_an_error() {
        let t = ChatTemplate::new(
            "{% if messages[0]['role'] == 'assistant' %}{{ raise_exception('first must not be the assistant') }}{% endif %}{% for m in messages %}{% if loop.index > 1 %}{% break %}{% endif %}{{ m['content'].strip() }}{% endfor %}".into(),
            "test".into(),
            "",
            "",
        )
        .unwrap();
        assert!(!t.folds_system());
        assert_eq!(
            t.render(
                &[ChatMessage::user("  hi  "), ChatMessage::assistant("no")],
                false
            )
            .unwrap(),
            "hi"
        );
        let e = t.render(&[ChatMessage::assistant("x")], false).unwrap_err();
        assert!(e.to_string().contains("first must not be"), "{e}");
    }

    #[test]
    fn a_template_that_rejects_the_system_role_gets_it_in_the_first_user_turn() {
        let t = ChatTemplate::new(
            "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}".into(),
            "test".into(),
            "",
            "",
        )
        .unwrap();
        assert!(t.folds_system());
        assert_eq!(
            t.render(&conversation(), false).unwrap(),
            "[user] Be brief.\n\nHi\n[assistant] Hello!\n[user] Capital of France?\n"
        );
        assert_eq!(
            t.render(&[ChatMessage::system("Only this.")], false)
                .unwrap(),
            "[user] Only this.\n"
        );
    }

    #[test]
    fn tools_are_none_when_none_are_offered_and_keep_their_key_order() {
        let t = ChatTemplate::new(
            "{% if tools is none %}none{% else %}{{ tools | tojson }}{% endif %}|{{ tools_in_user_message }}|{{ date_string }}".into(),
            "test".into(),
            "",
            "",
        )
        .unwrap();
        let today = chrono::Local::now().format("%d %b %Y").to_string();
        assert_eq!(t.render(&[], false).unwrap(), format!("none|False|{today}"));
        let tool = ToolSpec {
            name: "get_weather".into(),
            description: "The weather".into(),
            parameters: serde_json::json!({"type": "object"}),
        };
        let out = t.render_with_tools(&[], &[tool], false).unwrap();
        assert!(
            out.starts_with(r#"[{"type": "function", "function": {"name": "get_weather", "description": "The weather", "parameters": "#),
            "{out}"
        );
    }

    #[test]
    fn strftime_now_formats_the_local_date() {
        let s = strftime_now("%d %b %Y");
        assert_eq!(s, chrono::Local::now().format("%d %b %Y").to_string());
        assert_eq!(s.len(), 11, "{s}");
        // A directive chrono does not know leaves the text as it was.
        assert_eq!(strftime_now("%Q"), "%Q");
    }
}
