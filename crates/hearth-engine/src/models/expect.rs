//! What a download must be before a byte of it is written: the sha256 and
//! size to check it against, a size the model can plausibly have, and room
//! for it on the disk.
//!
//! The catalogue pins the checksum and size where it records them, and the
//! hub must agree; elsewhere the hub's word is taken, but only for a size
//! near what the model's weights and quantisation give (a hub, or a proxy,
//! announcing 10 TB is not believed), and only when the folder's disk has
//! that much free beside a margin.

use std::path::{Path, PathBuf};

use super::catalogue::Model;
use super::hub::PullError;

/// A size from the hub may exceed the catalogue's estimate by this factor…
const SLACK: f64 = 1.5;
/// …plus this much (metadata, a tokenizer, rounding in small models).
const SLACK_BYTES: u64 = 256 << 20;
/// Free space left on the disk after the download.
const MARGIN_BYTES: u64 = 512 << 20;

#[derive(Debug, thiserror::Error)]
pub enum RoomError {
    #[error(
        "the hub announces {file} as {announced} bytes, but a {params_b} B model at {quant} is about {estimate} bytes; nothing was downloaded. Fix: check [models] hub_url (a mirror or a proxy may be wrong)"
    )]
    Implausible {
        file: String,
        announced: u64,
        estimate: u64,
        params_b: f64,
        quant: String,
    },
    #[error(
        "{needed} more bytes are needed in {} but only {free} are free (keeping {margin} spare); nothing more was downloaded. Fix: free some space, or set [data] dir on a larger disk",
        .dir.display(),
        margin = MARGIN_BYTES
    )]
    NoRoom {
        dir: PathBuf,
        needed: u64,
        free: u64,
    },
    #[error("cannot tell how much space {} has: {source}", .dir.display())]
    Statvfs {
        dir: PathBuf,
        source: std::io::Error,
    },
}

/// The sha256 and size to check against: the catalogue's where it records
/// them (and the hub must agree), else the hub's, when plausible.
pub fn expected(
    model: &Model,
    hub_sha256: Option<&str>,
    hub_size: Option<u64>,
) -> Result<(String, u64), PullError> {
    let entry = &model.entry;
    let differs = |what, hub: String, catalogue: String| PullError::HubDiffers {
        file: entry.file.clone(),
        what,
        hub,
        catalogue,
    };
    let sha256 = match (&entry.sha256, hub_sha256) {
        (Some(c), Some(h)) if !c.eq_ignore_ascii_case(h) => {
            return Err(differs("sha256", h.to_string(), c.clone()));
        }
        (Some(c), _) => c.to_ascii_lowercase(),
        (None, Some(h)) => h.to_string(),
        (None, None) => {
            return Err(PullError::NoChecksum {
                file: entry.file.clone(),
            });
        }
    };
    let size = match (entry.size, hub_size) {
        (Some(c), Some(h)) if c != h => {
            return Err(differs("size", h.to_string(), c.to_string()));
        }
        (Some(c), _) => c,
        (None, Some(h)) => plausible(model, h)?,
        (None, None) => {
            return Err(PullError::NoChecksum {
                file: entry.file.clone(),
            });
        }
    };
    Ok((sha256, size))
}

/// `announced` when the model can be that large.
fn plausible(model: &Model, announced: u64) -> Result<u64, RoomError> {
    let estimate = model.file_bytes();
    let most = (estimate as f64 * SLACK) as u64 + SLACK_BYTES;
    if announced <= most {
        return Ok(announced);
    }
    Err(RoomError::Implausible {
        file: model.entry.file.clone(),
        announced,
        estimate,
        params_b: model.entry.params_b,
        quant: model.entry.quant.clone(),
    })
}

/// Refuses when `dir`'s disk cannot take `needed` more bytes and the margin.
pub fn room_for(dir: &Path, needed: u64) -> Result<(), RoomError> {
    let free = free_bytes(dir).map_err(|source| RoomError::Statvfs {
        dir: dir.to_path_buf(),
        source,
    })?;
    if needed.saturating_add(MARGIN_BYTES) <= free {
        return Ok(());
    }
    Err(RoomError::NoRoom {
        dir: dir.to_path_buf(),
        needed,
        free,
    })
}

/// Bytes an unprivileged user may still write on `dir`'s filesystem.
fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a NUL in the path"))?;
    // SAFETY: statvfs fills a zeroed plain struct through a valid pointer.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::catalogue::{Entry, HubSource};

    fn model(sha256: Option<&str>, size: Option<u64>) -> Model {
        Model {
            name: "m".into(),
            entry: Entry {
                description: String::new(),
                file: "m.gguf".into(),
                size,
                sha256: sha256.map(str::to_string),
                params_b: 1.0,
                quant: "Q4_K_M".into(),
                hub: Some(HubSource {
                    repo: "o/r".into(),
                    revision: "main".into(),
                }),
                chat_template: None,
            },
        }
    }

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    #[test]
    fn the_catalogue_pins_and_the_hub_fills_in() {
        let hub = (Some(A), Some(10));
        assert_eq!(
            expected(&model(None, None), hub.0, hub.1).unwrap(),
            (A.into(), 10)
        );
        assert_eq!(
            expected(&model(Some(A), Some(10)), hub.0, hub.1).unwrap(),
            (A.into(), 10)
        );
        let e = expected(&model(Some(B), Some(10)), hub.0, hub.1).unwrap_err();
        assert!(
            matches!(e, PullError::HubDiffers { what: "sha256", .. }),
            "{e}"
        );
        let e = expected(&model(Some(A), Some(11)), hub.0, hub.1).unwrap_err();
        assert!(
            matches!(e, PullError::HubDiffers { what: "size", .. }),
            "{e}"
        );
        assert!(matches!(
            expected(&model(None, None), None, Some(10)),
            Err(PullError::NoChecksum { .. })
        ));
    }

    #[test]
    fn a_hub_announcing_10_tb_for_a_1b_model_is_not_believed() {
        let e = expected(&model(None, None), Some(A), Some(10 << 40)).unwrap_err();
        assert!(
            matches!(e, PullError::Room(RoomError::Implausible { .. })),
            "{e}"
        );
        assert!(e.to_string().contains("hub_url"), "{e}");
        // Positive control: a 1 B Q4_K_M file of 0.7 GB is believed.
        let size = 700 << 20;
        assert_eq!(
            expected(&model(None, None), Some(A), Some(size)).unwrap().1,
            size
        );
    }

    #[test]
    fn a_disk_without_room_is_refused_before_the_download() {
        let dir = tempfile::tempdir().unwrap();
        let free = free_bytes(dir.path()).unwrap();
        let e = room_for(dir.path(), free).unwrap_err();
        assert!(matches!(e, RoomError::NoRoom { .. }), "{e}");
        assert!(e.to_string().contains("[data] dir"), "{e}");
        // Positive control: a small file fits.
        room_for(dir.path(), 1 << 20).unwrap();
    }
}
