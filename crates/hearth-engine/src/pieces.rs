//! A token's text, read only for ids the vocabulary has.
//!
//! llama.cpp looks a token up with `std::vector::at`, which throws a C++
//! exception for an id outside the vocabulary (a model without a BOS token
//! answers -1 for it; hearth's pictures are runs of negative stand-in ids).
//! No C++ exception may reach a Rust frame, so every piece hearth reads
//! goes through [`piece`], which checks the id first.

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

/// Whether `token` is an id of `model`'s vocabulary.
pub fn known(model: &LlamaModel, token: LlamaToken) -> bool {
    (0..model.n_vocab()).contains(&token.0)
}

/// The bytes of `token` (control tokens written out with `special`);
/// empty for an id the vocabulary does not have.
pub fn piece(model: &LlamaModel, token: LlamaToken, special: bool) -> Vec<u8> {
    if !known(model, token) {
        return Vec::new();
    }
    model.vocab().token_to_piece(token, special, None)
}

/// [`piece`] as text, with invalid UTF-8 replaced.
pub fn text(model: &LlamaModel, token: LlamaToken) -> String {
    String::from_utf8_lossy(&piece(model, token, true)).into_owned()
}
