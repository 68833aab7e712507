//! A saved KV state's V cache, turned between llama.cpp's two layouts.
//!
//! Without flash attention llama.cpp keeps V transposed (a row per
//! embedding element, a column per cell); with it, a row per cell, as K.
//! A sequence's saved state records which, and llama.cpp refuses to load
//! it into a context with the other layout. hearth turns flash attention on
//! with a GPU and off on the CPU, so a conversation saved on a GPU started
//! cold on the CPU, and the other way round.
//!
//! [`relayout`] reads a state as `llama_kv_cache::state_write` writes it
//! and turns its V layers around:
//!
//! ```text
//! u32 magic, i32 seq id
//! one KV cache state, or two (a sliding-window model's base, then window):
//!   u32 n_stream; per stream: u32 cells (0: nothing follows), then
//!   per cell: i32 pos, u32 n_seq, [12-byte cell extension], n_seq × i32
//!   u32 v_trans, u32 n_layer, u32 n_rot_k, u32 n_rot_v
//!   per layer, K: i32 type, u64 row bytes, cells × row
//!   per layer, V: v_trans = 0: i32 type, u64 row bytes, cells × row
//!                 v_trans = 1: i32 type, u32 element bytes, u32 n_embd,
//!                              n_embd × cells × element
//! ```
//!
//! A state is taken only when it reads to its last byte; anything else
//! (a recurrent model's state, a quantized V, another llama.cpp's layout)
//! is [`Relaid::Unreadable`] and goes to llama.cpp as it is, which then
//! refuses it or not, as before.

use std::ops::Range;

/// Bytes of `llama_kv_cell_ext` (x, y, token), written per cell by models
/// with 2-D positions.
const CELL_EXT: usize = 12;

/// What [`relayout`] made of a state.
#[derive(Debug, PartialEq, Eq)]
pub enum Relaid {
    /// Already in the asked layout.
    Already,
    /// Turned to the asked layout.
    Turned(Vec<u8>),
    /// Not a state this module reads, or a V type that has no transposed
    /// layout.
    Unreadable,
}

/// `state` with its V cache laid out transposed (`transposed`) or not.
pub fn relayout(state: &[u8], transposed: bool) -> Relaid {
    let Some(streams) = read(state, false).or_else(|| read(state, true)) else {
        return Relaid::Unreadable;
    };
    if streams.iter().all(|s| s.transposed == transposed) {
        return Relaid::Already;
    }
    let mut out = Vec::with_capacity(state.len());
    let mut copied = 0;
    for stream in &streams {
        out.extend_from_slice(&state[copied..stream.flag]);
        out.extend_from_slice(&u32::from(transposed).to_le_bytes());
        copied = stream.flag + 4;
        for layer in &stream.v {
            if stream.transposed == transposed {
                continue;
            }
            let Some(element) = element_bytes(layer.kind).filter(|e| layer.row % e == 0) else {
                return Relaid::Unreadable;
            };
            let n_embd = layer.row / element;
            out.extend_from_slice(&state[copied..layer.header]);
            out.extend_from_slice(&layer.kind.to_le_bytes());
            if transposed {
                out.extend_from_slice(&(element as u32).to_le_bytes());
                out.extend_from_slice(&(n_embd as u32).to_le_bytes());
            } else {
                out.extend_from_slice(&(layer.row as u64).to_le_bytes());
            }
            let data = &state[layer.data.clone()];
            let (rows, columns) = if transposed {
                (stream.cells, n_embd)
            } else {
                (n_embd, stream.cells)
            };
            transpose(data, rows, columns, element, &mut out);
            copied = layer.data.end;
        }
    }
    out.extend_from_slice(&state[copied..]);
    Relaid::Turned(out)
}

/// Appends `data`, `rows` × `columns` elements of `element` bytes in row
/// order, as `columns` × `rows`.
fn transpose(data: &[u8], rows: usize, columns: usize, element: usize, out: &mut Vec<u8>) {
    for c in 0..columns {
        for r in 0..rows {
            let at = (r * columns + c) * element;
            out.extend_from_slice(&data[at..at + element]);
        }
    }
}

/// Bytes per element of a ggml type with one element per block: F32, F16,
/// BF16. Quantized types have no transposed layout.
fn element_bytes(kind: i32) -> Option<usize> {
    match kind {
        0 => Some(4),
        1 | 30 => Some(2),
        _ => None,
    }
}

/// One stream of cells: where its `v_trans` flag and V layers lie.
struct Stream {
    cells: usize,
    transposed: bool,
    flag: usize,
    v: Vec<VLayer>,
}

struct VLayer {
    kind: i32,
    /// Bytes of one cell's values.
    row: usize,
    header: usize,
    data: Range<usize>,
}

/// The streams of `state`, when it reads to its end; `ext`: with cell
/// extensions.
fn read(state: &[u8], ext: bool) -> Option<Vec<Stream>> {
    let mut at = Cursor {
        bytes: state,
        at: 0,
    };
    at.skip(8)?;
    let mut streams = Vec::new();
    while at.at < state.len() {
        let n_stream = at.u32()?;
        if n_stream == 0 || n_stream > 1 << 16 {
            return None;
        }
        for _ in 0..n_stream {
            let cells = at.u32()? as usize;
            if cells > 0 {
                streams.push(stream(&mut at, cells, ext)?);
            }
        }
    }
    Some(streams)
}

fn stream(at: &mut Cursor<'_>, cells: usize, ext: bool) -> Option<Stream> {
    for _ in 0..cells {
        at.skip(4)?;
        let n_seq = at.u32()? as usize;
        if n_seq > 1 << 16 {
            return None;
        }
        at.skip(if ext { CELL_EXT } else { 0 } + 4 * n_seq)?;
    }
    let flag = at.at;
    let transposed = match at.u32()? {
        0 => false,
        1 => true,
        _ => return None,
    };
    let n_layer = at.u32()? as usize;
    at.skip(8)?;
    for _ in 0..n_layer {
        at.skip(4)?;
        let row = at.u64()?;
        at.skip(row.checked_mul(cells)?)?;
    }
    let mut v = Vec::with_capacity(n_layer);
    for _ in 0..n_layer {
        let header = at.at;
        let kind = at.u32()? as i32;
        let row = if transposed {
            let element = at.u32()? as usize;
            let n_embd = at.u32()? as usize;
            (element_bytes(kind) == Some(element)).then_some(element * n_embd)?
        } else {
            at.u64()?
        };
        let start = at.at;
        at.skip(row.checked_mul(cells)?)?;
        v.push(VLayer {
            kind,
            row,
            header,
            data: start..at.at,
        });
    }
    Some(Stream {
        cells,
        transposed,
        flag,
        v,
    })
}

/// Little-endian reads that stop at the end of the bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.at.checked_add(n)?;
        let taken = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(taken)
    }

    fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<usize> {
        usize::try_from(u64::from_le_bytes(self.take(8)?.try_into().ok()?)).ok()
    }
}

#[cfg(test)]
mod tests;
