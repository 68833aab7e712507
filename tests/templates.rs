//! Chat templates rendered from the real models' metadata.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common;

use hearth::chat::ChatMessage;
use hearth::engine::gguf::GgufMetadata;
use hearth::engine::template::{self, ChatTemplate};

fn conversation() -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("Be brief."),
        ChatMessage::user("Hi"),
        ChatMessage::assistant("Hello!"),
        ChatMessage::user("Capital of France?"),
    ]
}

#[test]
fn smollm2_renders_its_own_chatml_template() {
    let meta = GgufMetadata::read(&common::model(common::SMOLLM2)).unwrap();
    assert_eq!(meta.architecture(), Some("llama"));
    assert_eq!(meta.context_length(), Some(8192));
    let (source, origin) = template::choose(None, meta.chat_template()).unwrap();
    assert_eq!(origin, "the model's metadata");
    let t = ChatTemplate::new(source, origin, "", "").unwrap();
    assert_eq!(
        t.render(&conversation(), true).unwrap(),
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nCapital of France?<|im_end|>\n<|im_start|>assistant\n"
    );
    // Without a system message, SmolLM2's template supplies its own.
    let out = t.render(&conversation()[1..2], false).unwrap();
    assert!(
        out.starts_with("<|im_start|>system\n")
            && out.ends_with("<|im_start|>user\nHi<|im_end|>\n"),
        "{out}"
    );
}

#[test]
fn gemma3_has_no_template_and_uses_the_builtin_gemma_one() {
    let meta = GgufMetadata::read(&common::model(common::GEMMA3)).unwrap();
    assert_eq!(meta.architecture(), Some("gemma3"));
    assert_eq!(
        meta.chat_template(),
        None,
        "the no-template path is what this model exercises"
    );
    assert!(template::choose(None, meta.chat_template()).is_err());
    let bos = meta.token_text("tokenizer.ggml.bos_token_id").unwrap();
    assert_eq!(bos, "<bos>");
    let (source, origin) = template::choose(Some("gemma"), meta.chat_template()).unwrap();
    let t = ChatTemplate::new(source, origin, bos, "").unwrap();
    assert_eq!(
        t.render(&conversation(), true).unwrap(),
        "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n<start_of_turn>user\nCapital of France?<end_of_turn>\n<start_of_turn>model\n"
    );
}
