//! States written here in llama.cpp's layout, turned and turned back.

use super::*;

const F16: i32 = 1;
const Q4_0: i32 = 2;

/// A state of one stream: `cells` cells, `layers` layers, K rows of 8
/// bytes, V of `n_embd` f16 values per cell, element bytes numbered.
fn state(
    cells: usize,
    layers: usize,
    n_embd: usize,
    transposed: bool,
    ext: bool,
    v_kind: i32,
) -> Vec<u8> {
    let mut s = Vec::new();
    s.extend_from_slice(&0x6767_7371u32.to_le_bytes());
    s.extend_from_slice(&0i32.to_le_bytes());
    s.extend_from_slice(&1u32.to_le_bytes());
    s.extend_from_slice(&(cells as u32).to_le_bytes());
    for pos in 0..cells {
        s.extend_from_slice(&(pos as i32).to_le_bytes());
        s.extend_from_slice(&1u32.to_le_bytes());
        if ext {
            s.extend_from_slice(&[0; CELL_EXT]);
        }
        s.extend_from_slice(&0i32.to_le_bytes());
    }
    s.extend_from_slice(&u32::from(transposed).to_le_bytes());
    s.extend_from_slice(&(layers as u32).to_le_bytes());
    s.extend_from_slice(&[0; 8]);
    for l in 0..layers {
        s.extend_from_slice(&F16.to_le_bytes());
        s.extend_from_slice(&8u64.to_le_bytes());
        s.extend((0..cells * 8).map(|i| (l * 7 + i) as u8));
    }
    for l in 0..layers {
        s.extend_from_slice(&v_kind.to_le_bytes());
        if transposed {
            s.extend_from_slice(&2u32.to_le_bytes());
            s.extend_from_slice(&(n_embd as u32).to_le_bytes());
        } else {
            s.extend_from_slice(&((2 * n_embd) as u64).to_le_bytes());
        }
        for i in 0..cells * n_embd {
            // Element (cell c, value j), numbered the same in both layouts.
            let (c, j) = if transposed {
                (i % cells, i / cells)
            } else {
                (i / n_embd, i % n_embd)
            };
            s.extend_from_slice(&[(100 * l + 10 * c + j) as u8, l as u8]);
        }
    }
    s
}

#[test]
fn v_turns_between_the_layouts_and_back() {
    for ext in [false, true] {
        let plain = state(3, 2, 4, false, ext, F16);
        let turned = state(3, 2, 4, true, ext, F16);
        assert_eq!(
            relayout(&plain, true),
            Relaid::Turned(turned.clone()),
            "ext {ext}"
        );
        assert_eq!(
            relayout(&turned, false),
            Relaid::Turned(plain.clone()),
            "ext {ext}"
        );
        assert_eq!(relayout(&plain, false), Relaid::Already);
        assert_eq!(relayout(&turned, true), Relaid::Already);
    }
}

#[test]
fn a_sliding_window_model_s_two_caches_both_turn() {
    let mut plain = state(3, 2, 4, false, false, F16);
    plain.extend_from_slice(&state(2, 1, 4, false, false, F16)[8..]);
    let mut turned = state(3, 2, 4, true, false, F16);
    turned.extend_from_slice(&state(2, 1, 4, true, false, F16)[8..]);
    assert_eq!(relayout(&plain, true), Relaid::Turned(turned));
}

#[test]
fn what_does_not_read_to_its_end_is_left_alone() {
    let plain = state(3, 2, 4, false, false, F16);
    for cut in [0, 7, 20, plain.len() - 1] {
        assert_eq!(
            relayout(&plain[..cut], true),
            Relaid::Unreadable,
            "cut at {cut}"
        );
    }
    let mut longer = plain.clone();
    longer.push(0);
    assert_eq!(relayout(&longer, true), Relaid::Unreadable);
    let mut flag = plain.clone();
    let at = 8 + 4 + 4 + 3 * 12;
    flag[at] = 2;
    assert_eq!(relayout(&flag, true), Relaid::Unreadable);
}

#[test]
fn a_quantized_v_has_no_transposed_layout() {
    let quantized = state(3, 2, 4, false, false, Q4_0);
    assert_eq!(relayout(&quantized, true), Relaid::Unreadable);
    assert_eq!(relayout(&quantized, false), Relaid::Already);
}
