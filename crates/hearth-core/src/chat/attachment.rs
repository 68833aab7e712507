//! A document a person sent with a message (a PDF, a Word file, a page of
//! text), as the platform delivered it, waiting to be read in the
//! document cage. Nothing here trusts it: not its name, not its bytes.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// The name its sender gave it (shown and cited; never a path).
    pub name: String,
    #[serde(
        serialize_with = "super::audio::encode",
        deserialize_with = "super::audio::decode"
    )]
    pub bytes: Arc<[u8]>,
}

impl Attachment {
    pub fn new(name: &str, bytes: impl Into<Arc<[u8]>>) -> Self {
        // A name is a name: no folders, no control characters.
        let name: String = name
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or("")
            .chars()
            .filter(|c| !c.is_control())
            .take(200)
            .collect();
        Self {
            name: if name.trim().is_empty() {
                "document".into()
            } else {
                name
            },
            bytes: bytes.into(),
        }
    }
}

impl std::fmt::Debug for Attachment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Attachment({:?}, {} bytes)", self.name, self.bytes.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_survives_a_record_and_its_name_is_only_a_name() {
        let doc = Attachment::new("../../etc/syllabus\n.pdf", b"%PDF-1.7".to_vec());
        assert_eq!(doc.name, "syllabus.pdf");
        let text = serde_json::to_string(&doc).unwrap_or_default();
        assert_eq!(serde_json::from_str::<Attachment>(&text).ok(), Some(doc));
        assert_eq!(Attachment::new("C:\\x\\", Vec::new()).name, "document");
    }
}
