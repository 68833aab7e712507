//! A picture in a user's message: the file as it was sent, shared cheaply
//! between the history, the engine and a cloud provider.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// An image file (PNG, JPEG, GIF, BMP, WebP...), as the user sent it. The
/// engine decodes it; nothing here trusts its header beyond naming its kind.
#[derive(Clone, PartialEq, Eq)]
pub struct Image {
    pub bytes: Arc<[u8]>,
}

impl Image {
    pub fn new(bytes: impl Into<Arc<[u8]>>) -> Self {
        Self {
            bytes: bytes.into(),
        }
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The SHA-256 of the bytes, in hex: the picture's name in the history.
    pub fn digest(&self) -> String {
        use sha2::Digest as _;
        crate::hex::hex(&sha2::Sha256::digest(&self.bytes))
    }

    /// The media type its first bytes announce (for cloud image parts);
    /// `None` for a format no provider takes.
    pub fn media_type(&self) -> Option<&'static str> {
        let b = &self.bytes[..];
        if b.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some("image/png")
        } else if b.starts_with(&[0xff, 0xd8, 0xff]) {
            Some("image/jpeg")
        } else if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
            Some("image/gif")
        } else if b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP" {
            Some("image/webp")
        } else {
            None
        }
    }

    /// A `data:` URL of the picture (`image/png` when its kind is unknown).
    pub fn data_url(&self) -> String {
        format!(
            "data:{};base64,{}",
            self.media_type().unwrap_or("image/png"),
            self.base64()
        )
    }

    pub fn base64(&self) -> String {
        STANDARD.encode(&self.bytes)
    }
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Image({} bytes)", self.bytes.len())
    }
}

/// Serialises pictures as base64 text, for records that must carry the
/// bytes themselves (a received message waiting in the durable inbox).
pub mod as_base64 {
    use super::{Image, STANDARD};
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(images: &[Image], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(images.iter().map(Image::base64))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Image>, D::Error> {
        Vec::<String>::deserialize(d)?
            .into_iter()
            .map(|text| {
                STANDARD
                    .decode(text)
                    .map(Image::new)
                    .map_err(serde::de::Error::custom)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct Carrier {
        #[serde(with = "as_base64")]
        images: Vec<Image>,
    }

    #[test]
    fn pictures_survive_a_record_and_name_their_kind() {
        let png = Image::new(b"\x89PNG\r\n\x1a\nrest".to_vec());
        let other = Image::new(b"not a picture".to_vec());
        let c = Carrier {
            images: vec![png.clone(), other.clone()],
        };
        let text = serde_json::to_string(&c).unwrap_or_default();
        assert_eq!(serde_json::from_str::<Carrier>(&text).ok(), Some(c));
        assert_eq!(png.media_type(), Some("image/png"));
        assert_eq!(other.media_type(), None);
        assert!(png.data_url().starts_with("data:image/png;base64,iVBOR"));
        assert_eq!(png.digest().len(), 64);
        assert_ne!(png.digest(), other.digest());
        let broken = serde_json::from_str::<Carrier>(r#"{"images":["@@"]}"#);
        assert!(
            broken.is_err(),
            "bad base64 is an error, not an empty picture"
        );
    }
}
