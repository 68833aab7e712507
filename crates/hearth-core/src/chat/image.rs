//! A picture in a user's message: the file as it was sent, shared cheaply
//! between the history, the engine and a cloud provider.

use std::sync::Arc;

/// An image file (PNG, JPEG, GIF, BMP, WebP...), as the user sent it. The
/// engine decodes it; nothing here trusts its header.
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
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Image({} bytes)", self.bytes.len())
    }
}
