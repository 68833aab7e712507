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

use super::catalogue::{Model, Piece};
use super::hub::{Check, PullError, Remote};

/// A size from the hub may exceed the catalogue's estimate by this factor…
const SLACK: f64 = 1.5;
/// …plus this much (metadata, a tokenizer, rounding in small models).
const SLACK_BYTES: u64 = 256 << 20;
/// Free space left on the disk after the download.
const MARGIN_BYTES: u64 = 512 << 20;

#[derive(Debug, thiserror::Error)]
pub enum RoomError {
    #[error(
        "the hub announces {file} as {announced} bytes, but a file of a {params_b} B model at {quant} is at most about {estimate} bytes; nothing was downloaded. Fix: check [models] hub_url (a mirror or a proxy may be wrong)"
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

/// The checksum and size to check against: the catalogue's where it
/// records them (and the hub must agree), else the hub's, when plausible.
/// The hub gives a sha256 for a file in Git LFS and a Git blob hash for a
/// file kept in Git itself.
pub(super) fn expected(
    model: &Model,
    piece: &Piece,
    hub: &Remote,
) -> Result<(Check, u64), PullError> {
    let differs = |what, hub: String, catalogue: String| PullError::HubDiffers {
        file: piece.local.clone(),
        what,
        hub,
        catalogue,
    };
    let check = match (&piece.sha256, &hub.sha256, &hub.git_blob) {
        (Some(c), Some(h), _) if !c.eq_ignore_ascii_case(h) => {
            return Err(differs("sha256", h.clone(), c.clone()));
        }
        (Some(c), _, _) => Check::Sha256(c.to_ascii_lowercase()),
        (None, Some(h), _) => Check::Sha256(h.clone()),
        (None, None, Some(g)) => Check::GitBlob(g.clone()),
        (None, None, None) => {
            return Err(PullError::NoChecksum {
                file: piece.local.clone(),
            });
        }
    };
    let size = match (piece.size, hub.size) {
        (Some(c), Some(h)) if c != h => {
            return Err(differs("size", h.to_string(), c.to_string()));
        }
        (Some(c), _) => c,
        (None, Some(h)) => plausible(model, piece, h)?,
        (None, None) => {
            return Err(PullError::NoChecksum {
                file: piece.local.clone(),
            });
        }
    };
    Ok((check, size))
}

/// `announced` when the file can be that large.
fn plausible(model: &Model, piece: &Piece, announced: u64) -> Result<u64, RoomError> {
    let estimate = piece.estimate;
    let most = (estimate as f64 * SLACK) as u64 + SLACK_BYTES;
    if announced <= most {
        return Ok(announced);
    }
    Err(RoomError::Implausible {
        file: piece.local.clone(),
        announced,
        estimate,
        params_b: model.entry.params_b,
        quant: model.entry.quant.clone(),
    })
}

/// Refuses when `dir`'s disk cannot take `needed` more bytes and the margin.
pub fn room_for(dir: &Path, needed: u64) -> Result<(), RoomError> {
    let free = hearth_core::disk::free_bytes(dir).map_err(|source| RoomError::Statvfs {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::catalogue::{Entry, HubSource, Kind};

    fn model(sha256: Option<&str>, size: Option<u64>) -> Model {
        Model {
            name: "m".into(),
            entry: Entry {
                kind: Kind::Chat,
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
                mmproj: None,
                folder: None,
                also: Vec::new(),
            },
        }
    }

    fn check(
        m: &Model,
        sha256: Option<&str>,
        size: Option<u64>,
    ) -> Result<(Check, u64), PullError> {
        let hub = Remote {
            sha256: sha256.map(str::to_string),
            git_blob: None,
            size,
        };
        expected(m, &m.pieces()[0], &hub)
    }

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    const G: &str = "cccccccccccccccccccccccccccccccccccccccc";

    #[test]
    fn the_catalogue_pins_and_the_hub_fills_in() {
        let sha = |h: &str| Check::Sha256(h.to_string());
        assert_eq!(
            check(&model(None, None), Some(A), Some(10)).unwrap(),
            (sha(A), 10)
        );
        assert_eq!(
            check(&model(Some(A), Some(10)), Some(A), Some(10)).unwrap(),
            (sha(A), 10)
        );
        let e = check(&model(Some(B), Some(10)), Some(A), Some(10)).unwrap_err();
        assert!(
            matches!(e, PullError::HubDiffers { what: "sha256", .. }),
            "{e}"
        );
        let e = check(&model(Some(A), Some(11)), Some(A), Some(10)).unwrap_err();
        assert!(
            matches!(e, PullError::HubDiffers { what: "size", .. }),
            "{e}"
        );
        assert!(matches!(
            check(&model(None, None), None, Some(10)),
            Err(PullError::NoChecksum { .. })
        ));
    }

    #[test]
    fn a_file_kept_in_git_is_checked_by_its_blob_hash_unless_the_catalogue_pins_it() {
        let m = model(None, None);
        let hub = Remote {
            sha256: None,
            git_blob: Some(G.into()),
            size: Some(2300),
        };
        let piece = &m.pieces()[0];
        assert_eq!(
            expected(&m, piece, &hub).unwrap(),
            (Check::GitBlob(G.into()), 2300)
        );
        let pinned = model(Some(A), None);
        assert_eq!(
            expected(&pinned, &pinned.pieces()[0], &hub).unwrap().0,
            Check::Sha256(A.into())
        );
    }

    #[test]
    fn a_hub_announcing_10_tb_for_a_1b_model_is_not_believed() {
        let e = check(&model(None, None), Some(A), Some(10 << 40)).unwrap_err();
        assert!(
            matches!(e, PullError::Room(RoomError::Implausible { .. })),
            "{e}"
        );
        assert!(e.to_string().contains("hub_url"), "{e}");
        // Positive control: a 1 B Q4_K_M file of 0.7 GB is believed.
        let size = 700 << 20;
        assert_eq!(
            check(&model(None, None), Some(A), Some(size)).unwrap().1,
            size
        );
    }

    #[test]
    fn a_disk_without_room_is_refused_before_the_download() {
        let dir = tempfile::tempdir().unwrap();
        let free = hearth_core::disk::free_bytes(dir.path()).unwrap();
        let e = room_for(dir.path(), free).unwrap_err();
        assert!(matches!(e, RoomError::NoRoom { .. }), "{e}");
        assert!(e.to_string().contains("[data] dir"), "{e}");
        // Positive control: a small file fits.
        room_for(dir.path(), 1 << 20).unwrap();
    }
}
