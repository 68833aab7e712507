//! An image's width and height from its header, read before anything
//! decodes it: a 1 KB file may declare a billion pixels.

/// `(width, height)` of a PNG, JPEG, GIF, BMP or WebP file, or `None` for
/// anything else (or a header cut short).
pub(super) fn dimensions(b: &[u8]) -> Option<(u32, u32)> {
    let be16 = |i: usize| Some(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?]) as u32);
    let le16 = |i: usize| Some(u16::from_le_bytes([*b.get(i)?, *b.get(i + 1)?]) as u32);
    let be32 = |i: usize| Some(u32::from_be_bytes(b.get(i..i + 4)?.try_into().ok()?));
    let le32 = |i: usize| Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?));
    if b.starts_with(b"\x89PNG\r\n\x1a\n") && b.get(12..16)? == b"IHDR" {
        return Some((be32(16)?, be32(20)?));
    }
    if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        return Some((le16(6)?, le16(8)?));
    }
    if b.starts_with(b"BM") {
        let h = le32(22)? as i32;
        return Some((le32(18)?, h.unsigned_abs()));
    }
    if b.starts_with(b"RIFF") && b.get(8..12)? == b"WEBP" {
        return match b.get(12..16)? {
            b"VP8 " => Some((le16(26)? & 0x3fff, le16(28)? & 0x3fff)),
            b"VP8L" => {
                let v = le32(21)?;
                Some(((v & 0x3fff) + 1, ((v >> 14) & 0x3fff) + 1))
            }
            b"VP8X" => {
                let w = le32(24)? & 0xff_ffff;
                let h = le32(27)? & 0xff_ffff;
                Some((w + 1, h + 1))
            }
            _ => None,
        };
    }
    if b.starts_with(&[0xff, 0xd8]) {
        return jpeg(b, be16);
    }
    None
}

/// Walks a JPEG's segments to its start-of-frame.
fn jpeg(b: &[u8], be16: impl Fn(usize) -> Option<u32>) -> Option<(u32, u32)> {
    let mut i = 2;
    loop {
        while *b.get(i)? != 0xff {
            i += 1;
        }
        while *b.get(i)? == 0xff {
            i += 1;
        }
        let marker = *b.get(i)?;
        i += 1;
        match marker {
            0xd8 | 0x01 | 0xd0..=0xd7 => continue,
            0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                return Some((be16(i + 5)?, be16(i + 3)?));
            }
            _ => i += be16(i)? as usize,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::dimensions;

    #[test]
    fn headers_give_their_sizes_and_anything_else_none() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend(100_000u32.to_be_bytes());
        png.extend(3u32.to_be_bytes());
        assert_eq!(dimensions(&png), Some((100_000, 3)));
        assert_eq!(dimensions(&png[..18]), None, "cut short");
        let gif = b"GIF89a\x40\x01\xf0\x00".to_vec();
        assert_eq!(dimensions(&gif), Some((320, 240)));
        // SOI, an APP0 of 4 bytes, then SOF0: height 480, width 640.
        let jpeg = [
            0xff, 0xd8, 0xff, 0xe0, 0, 4, 0, 0, 0xff, 0xc0, 0, 11, 8, 0x01, 0xe0, 0x02, 0x80,
        ];
        assert_eq!(dimensions(&jpeg), Some((640, 480)));
        assert_eq!(dimensions(&jpeg[..12]), None, "no frame header");
        assert_eq!(dimensions(b"OggS\0\x02 not an image"), None);
        assert_eq!(dimensions(b""), None);
    }
}
