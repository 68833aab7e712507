//! A `file` content part (Chat Completions: `{"type": "file", "file":
//! {"filename", "file_data"}}`; Responses: `{"type": "input_file",
//! "filename", "file_data"}`): the document itself, base64, as a `data:`
//! URL or bare. hearth keeps no uploaded files and fetches nothing, so a
//! `file_id` or `file_url` is refused by name. The assistant reads it in
//! the document cage; the served model is refused it.

use base64::Engine as _;
use serde_json::Value;

use super::error::ApiError;
use hearth_core::chat::Attachment;

pub fn read(part: &Value, param: &str) -> Result<Attachment, ApiError> {
    // Chat Completions nests it under `file`; Responses does not.
    let file = part.get("file").unwrap_or(part);
    let field = |key: &str| file.get(key).and_then(Value::as_str);
    if field("file_id").is_some() {
        return Err(ApiError::field(
            param,
            "hearth keeps no uploaded files, so a `file_id` names nothing here; send the file itself as `file_data`",
        )
        .with_code("file_id_not_kept"));
    }
    if field("file_url").is_some() {
        return Err(ApiError::field(
            param,
            "hearth does not fetch files from URLs; send the file itself as `file_data`",
        )
        .with_code("file_url_not_fetched"));
    }
    let Some(data) = field("file_data") else {
        return Err(ApiError::field(
            param,
            "a file part needs `file_data`: the file as base64 (`data:application/pdf;base64,...`)",
        ));
    };
    let encoded = match data.strip_prefix("data:") {
        Some(url) => match url.split_once(";base64,") {
            Some((_, encoded)) => encoded,
            None => {
                return Err(ApiError::field(
                    param,
                    "a file's data URL must be base64 (`data:application/pdf;base64,...`)",
                ));
            }
        },
        None => data,
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|e| ApiError::field(param, format!("the file's base64 is damaged: {e}")))?;
    if bytes.is_empty() {
        return Err(ApiError::field(param, "the file is empty"));
    }
    Ok(Attachment::new(
        field("filename").unwrap_or("document"),
        bytes,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_shapes_are_read_and_what_hearth_cannot_have_is_refused_by_name() {
        let chat = json!({"type": "file", "file": {"filename": "syllabus.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjc="}});
        let doc = read(&chat, "messages[0].content").unwrap();
        assert_eq!(
            (doc.name.as_str(), &doc.bytes[..]),
            ("syllabus.pdf", &b"%PDF-1.7"[..])
        );
        let responses =
            json!({"type": "input_file", "filename": "../notes.txt", "file_data": "aGk="});
        assert_eq!(read(&responses, "input[0]").unwrap().name, "notes.txt");
        for (part, says) in [
            (
                json!({"type": "file", "file": {"file_id": "file-abc"}}),
                "file_id_not_kept",
            ),
            (
                json!({"type": "input_file", "file_url": "https://x/y.pdf"}),
                "file_url_not_fetched",
            ),
            (
                json!({"type": "file", "file": {"file_data": "data:application/pdf,raw"}}),
                "must be base64",
            ),
            (
                json!({"type": "file", "file": {"file_data": "@@@"}}),
                "damaged",
            ),
            (json!({"type": "file", "file": {}}), "needs `file_data`"),
        ] {
            let e = format!("{:?}", read(&part, "p").unwrap_err());
            assert!(e.contains(says), "{part}: {e}");
        }
    }
}
