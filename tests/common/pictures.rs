//! Pictures for the image tests and bench: the test projector, and images
//! made on the spot (good, and hostile ones).

use std::path::PathBuf;

/// Tokens the test projector makes of any image (64×64 in 8×8 patches).
pub const IMAGE_TOKENS: u32 = 64;

/// The projector with random weights for SmolLM2 (`make test-projector`).
pub fn projector() -> PathBuf {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-models/mmproj-random-576.gguf");
    assert!(
        path.is_file(),
        "the test projector is missing: run `make test-projector`"
    );
    path
}

fn encoded(width: u32, height: u32, rgb: [u8; 3], format: image::ImageFormat) -> Vec<u8> {
    let pixels = image::RgbImage::from_pixel(width, height, image::Rgb(rgb));
    let mut out = Vec::new();
    pixels
        .write_to(&mut std::io::Cursor::new(&mut out), format)
        .expect("an image in memory encodes");
    out
}

/// A PNG of one colour.
pub fn png(width: u32, height: u32, rgb: [u8; 3]) -> Vec<u8> {
    encoded(width, height, rgb, image::ImageFormat::Png)
}

/// A JPEG of one colour, as a phone's photo would come.
pub fn jpeg(width: u32, height: u32, rgb: [u8; 3]) -> Vec<u8> {
    encoded(width, height, rgb, image::ImageFormat::Jpeg)
}

/// A PNG whose header declares `side` × `side` pixels, in a few hundred
/// bytes (its IHDR comes right after the signature, at bytes 16..24).
pub fn bomb(side: u32) -> Vec<u8> {
    let mut bomb = png(4, 4, [0, 0, 0]);
    bomb[16..20].copy_from_slice(&side.to_be_bytes());
    bomb[20..24].copy_from_slice(&side.to_be_bytes());
    bomb
}
