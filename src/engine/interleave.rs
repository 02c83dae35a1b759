//! Rows of llama.cpp's repacked CPU weights (CPU_REPACK), swapped in place.
//!
//! Where the CPU has kernels for them (Q4_0, Q4_K and IQ4_NL on AVX2 / AVX-512, and
//! on ARM), llama.cpp repacks a weight of rows in multiples of 8 into blocks that
//! interleave 8 rows: one "x8" block per group of 8 rows and per quantization block
//! of the row (ggml-cpu/repack.cpp, `make_block_q4_Kx8`, `make_block_q4_0x8`,
//! `make_block_iq4_nlx8`). Each row is one *lane* of its group's blocks: its scale
//! (and Q4_K's min scale) sit at index `lane` of the block's `d` (`dmin`) arrays, its
//! quants in every 8th chunk of `interleave` bytes, and Q4_K's 6-bit sub-block scales
//! and mins are packed across lanes (lanes `j` and `j + 4` share bytes).
//!
//! Swapping two neurons of a repacked `ffn_gate` / `ffn_up` is swapping two lanes in
//! every block of their rows: exact, like swapping two plain rows, so selective
//! computation reorders repacked weights in place ([`super::inplace`]) and decode
//! multiplies a prefix view of whole groups with llama.cpp's repacked kernels.
//!
//! The layout is not read from llama.cpp (its traits are C++ objects): it is
//! [`detect`]ed by packing the file's first 8 rows here and comparing the bytes with
//! the ones llama.cpp holds, so a layout this module does not know is refused, never
//! guessed.

use crate::gguf::GgmlType;

/// Rows per interleaved group.
pub(crate) const GROUP: usize = 8;

/// Whether rows of `ty` can be swapped in a repacked layout (Q4_0, Q4_K, IQ4_NL):
/// the types llama.cpp's CPU backend repacks for its kernels where the CPU has
/// them (exported as [`super::repackable`]).
pub fn swappable(ty: GgmlType) -> bool {
    Kind::of(ty).is_some()
}

/// A repacked weight's layout: its type, and how many quant bytes a lane's chunk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Interleaved {
    kind: Kind,
    /// Bytes of one lane's quants taken at a time (8 on x86, 4 or 8 on ARM).
    interleave: usize,
    /// XOR applied to the quants (Q4_0's 8-byte interleave flips their sign bits).
    xor: u8,
    /// Quantization blocks per row.
    blocks_per_row: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `block_q4_0` / `block_iq4_nl`: a scale and 16 quant bytes per 32 values.
    Q4Small,
    /// `block_q4_K`: d, dmin, 12 bytes of 6-bit scales and mins, 128 quant bytes per 256.
    Q4K,
}

impl Kind {
    fn of(ty: GgmlType) -> Option<(Kind, usize)> {
        match ty {
            GgmlType::Q4_0 | GgmlType::IQ4_NL => Some((Kind::Q4Small, 32)),
            GgmlType::Q4_K => Some((Kind::Q4K, 256)),
            _ => None,
        }
    }
    /// Bytes of one plain block.
    fn block(self) -> usize {
        match self {
            Kind::Q4Small => 18,
            Kind::Q4K => 144,
        }
    }
    /// Quant bytes of one plain block (one lane of an x8 block).
    fn quants(self) -> usize {
        match self {
            Kind::Q4Small => 16,
            Kind::Q4K => 128,
        }
    }
    /// Where the quants start in an x8 block.
    fn x8_quants_at(self) -> usize {
        match self {
            Kind::Q4Small => 16,
            Kind::Q4K => 128,
        }
    }
}

/// One row's share of an x8 block, in plain terms.
struct Lane {
    d: [u8; 2],
    dmin: [u8; 2],
    /// Q4_K: the 6-bit scale and min of each of the 8 sub-blocks.
    scale_min: [(u8, u8); 8],
    quants: [u8; 128],
}

impl Interleaved {
    /// Bytes of one x8 block.
    pub(crate) fn x8_block(&self) -> usize {
        GROUP * self.kind.block()
    }

    /// Bytes of one row (as in the file: repacking keeps a tensor's size).
    pub(crate) fn row_bytes(&self) -> usize {
        self.blocks_per_row * self.kind.block()
    }

    /// The layout of `mem`, the first group of 8 rows of a weight of type `ty` with
    /// rows of `ne0` values as llama.cpp holds it, given `file`, the same 8 rows in
    /// the GGUF file; `None` when no known packing of `file` gives `mem`.
    pub(crate) fn detect(ty: GgmlType, ne0: usize, file: &[u8], mem: &[u8]) -> Option<Interleaved> {
        let (kind, per_block) = Kind::of(ty)?;
        if ne0 == 0 || ne0 % per_block != 0 {
            return None;
        }
        let blocks_per_row = ne0 / per_block;
        let len = GROUP * blocks_per_row * kind.block();
        if file.len() != len || mem.len() != len || file == mem {
            return None;
        }
        for interleave in [8, 4] {
            for xor in [0u8, 0x88] {
                let il = Interleaved { kind, interleave, xor, blocks_per_row };
                let rows: Vec<&[u8]> = file.chunks_exact(il.row_bytes()).collect();
                let packed = (0..blocks_per_row).all(|x| {
                    let plain: Vec<&[u8]> = rows.iter().map(|r| &r[x * kind.block()..(x + 1) * kind.block()]).collect();
                    il.pack(&plain) == mem[x * il.x8_block()..(x + 1) * il.x8_block()]
                });
                if packed {
                    return Some(il);
                }
            }
        }
        None
    }

    /// The x8 block of 8 plain blocks, as llama.cpp packs it.
    fn pack(&self, plain: &[&[u8]]) -> Vec<u8> {
        let mut out = vec![0u8; self.x8_block()];
        for (lane, b) in plain.iter().enumerate() {
            let mut l = Lane { d: [b[0], b[1]], dmin: [0; 2], scale_min: [(0, 0); 8], quants: [0; 128] };
            let q = self.kind.quants();
            match self.kind {
                Kind::Q4Small => l.quants[..q].copy_from_slice(&b[2..2 + q]),
                Kind::Q4K => {
                    l.dmin = [b[2], b[3]];
                    let sc = &b[4..16];
                    for j in 0..4 {
                        l.scale_min[j] = (sc[j] & 63, sc[j + 4] & 63);
                        l.scale_min[j + 4] = (((sc[j] & 192) >> 2) | (sc[j + 8] & 15), ((sc[j + 4] & 192) >> 2) | ((sc[j + 8] & 240) >> 4));
                    }
                    l.quants.copy_from_slice(&b[16..16 + q]);
                }
            }
            l.quants[..q].iter_mut().for_each(|v| *v ^= self.xor);
            self.write_lane(&mut out, lane, &l);
        }
        out
    }

    #[cfg(test)]
    fn read_lane(&self, block: &[u8], lane: usize) -> Lane {
        let mut l = Lane { d: [block[2 * lane], block[2 * lane + 1]], dmin: [0; 2], scale_min: [(0, 0); 8], quants: [0; 128] };
        if self.kind == Kind::Q4K {
            l.dmin = [block[16 + 2 * lane], block[16 + 2 * lane + 1]];
            for (sub, sm) in l.scale_min.iter_mut().enumerate() {
                *sm = scale_min_of(&block[32 + 12 * sub..32 + 12 * (sub + 1)], lane);
            }
        }
        let base = self.kind.x8_quants_at();
        let b = self.interleave;
        for c in 0..self.kind.quants() / b {
            let at = base + (c * GROUP + lane) * b;
            l.quants[c * b..(c + 1) * b].copy_from_slice(&block[at..at + b]);
        }
        l
    }

    fn write_lane(&self, block: &mut [u8], lane: usize, l: &Lane) {
        block[2 * lane..2 * lane + 2].copy_from_slice(&l.d);
        if self.kind == Kind::Q4K {
            block[16 + 2 * lane..16 + 2 * lane + 2].copy_from_slice(&l.dmin);
            for (sub, &sm) in l.scale_min.iter().enumerate() {
                set_scale_min(&mut block[32 + 12 * sub..32 + 12 * (sub + 1)], lane, sm);
            }
        }
        let base = self.kind.x8_quants_at();
        let b = self.interleave;
        for c in 0..self.kind.quants() / b {
            let at = base + (c * GROUP + lane) * b;
            block[at..at + b].copy_from_slice(&l.quants[c * b..(c + 1) * b]);
        }
    }

    /// Swaps rows `r` and `s` of a repacked weight held in `data` (every group's x8
    /// blocks, groups in row order): in each of their blocks, lane `r % 8` of row
    /// `r`'s group with lane `s % 8` of row `s`'s (the same block when both rows are
    /// in one group).
    pub(crate) fn swap_rows(&self, data: &mut [u8], r: usize, s: usize) {
        if r == s {
            return;
        }
        let n = self.x8_block();
        let (lr, ls) = (r % GROUP, s % GROUP);
        let (base, b) = (self.kind.x8_quants_at(), self.interleave);
        for x in 0..self.blocks_per_row {
            let (br, bs) = ((r / GROUP * self.blocks_per_row + x) * n, (s / GROUP * self.blocks_per_row + x) * n);
            swap_ranges(data, br + 2 * lr, bs + 2 * ls, 2);
            if self.kind == Kind::Q4K {
                swap_ranges(data, br + 16 + 2 * lr, bs + 16 + 2 * ls, 2);
                for sub in 0..8 {
                    let (gr, gs) = (br + 32 + 12 * sub, bs + 32 + 12 * sub);
                    let (a, c) = (scale_min_of(&data[gr..gr + 12], lr), scale_min_of(&data[gs..gs + 12], ls));
                    // Each lane's bits are its own: setting one keeps the other's.
                    set_scale_min(&mut data[gr..gr + 12], lr, c);
                    set_scale_min(&mut data[gs..gs + 12], ls, a);
                }
            }
            for chunk in 0..self.kind.quants() / b {
                swap_ranges(data, br + base + (chunk * GROUP + lr) * b, bs + base + (chunk * GROUP + ls) * b, b);
            }
        }
    }
}

/// Swaps `data[a..a + n]` with `data[b..b + n]` (ranges that do not overlap, or the same).
fn swap_ranges(data: &mut [u8], a: usize, b: usize, n: usize) {
    if a == b {
        return;
    }
    let (lo, hi) = (a.min(b), a.max(b));
    let (head, tail) = data.split_at_mut(hi);
    head[lo..lo + n].swap_with_slice(&mut tail[..n]);
}

/// Lane `j`'s 6-bit (scale, min) in one 12-byte group of a Q4_K x8 block
/// (`make_block_q4_Kx8`: bytes 0-3 scales of lanes 0-3 with the top bits of lanes
/// 4-7's in bits 6-7, bytes 4-7 the same for mins, bytes 8-11 the low 4 bits of
/// lanes 4-7's scale and min).
fn scale_min_of(g: &[u8], j: usize) -> (u8, u8) {
    if j < 4 {
        (g[j] & 63, g[j + 4] & 63)
    } else {
        let i = j - 4;
        ((g[8 + i] & 15) | ((g[i] >> 6) << 4), (g[8 + i] >> 4) | ((g[i + 4] >> 6) << 4))
    }
}

fn set_scale_min(g: &mut [u8], j: usize, (s, m): (u8, u8)) {
    if j < 4 {
        g[j] = (g[j] & 192) | (s & 63);
        g[j + 4] = (g[j + 4] & 192) | (m & 63);
    } else {
        let i = j - 4;
        g[i] = (g[i] & 63) | ((s & 48) << 2);
        g[i + 4] = (g[i + 4] & 63) | ((m & 48) << 2);
        g[8 + i] = (s & 15) | ((m & 15) << 4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic byte stream (xorshift).
    fn bytes(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// `rows` rows of `ty` (any bytes: packing moves bits, it does not read them as numbers).
    fn plain(ty: GgmlType, ne0: usize, rows: usize, seed: u64) -> (Interleaved, Vec<u8>) {
        let (kind, per) = Kind::of(ty).unwrap();
        let il = Interleaved { kind, interleave: 8, xor: if ty == GgmlType::Q4_0 { 0x88 } else { 0 }, blocks_per_row: ne0 / per };
        (il, bytes(rows * il.row_bytes(), seed))
    }

    /// The whole weight packed as llama.cpp's repack_*_to_*_8_bl does.
    fn repack(il: &Interleaved, file: &[u8]) -> Vec<u8> {
        let rows: Vec<&[u8]> = file.chunks_exact(il.row_bytes()).collect();
        let kb = il.kind.block();
        let mut out = Vec::with_capacity(file.len());
        for g in rows.chunks_exact(GROUP) {
            for x in 0..il.blocks_per_row {
                let plain: Vec<&[u8]> = g.iter().map(|r| &r[x * kb..(x + 1) * kb]).collect();
                out.extend(il.pack(&plain));
            }
        }
        out
    }

    #[test]
    fn a_lane_read_and_written_back_leaves_the_block_unchanged() {
        for ty in [GgmlType::Q4_K, GgmlType::Q4_0, GgmlType::IQ4_NL] {
            let (il, file) = plain(ty, 512, 8, 3);
            let mut mem = repack(&il, &file);
            let before = mem.clone();
            for lane in 0..GROUP {
                let l = il.read_lane(&mem[..il.x8_block()], lane);
                il.write_lane(&mut mem[..il.x8_block()], lane, &l);
            }
            assert_eq!(mem, before, "{ty}");
        }
    }

    #[test]
    fn swapping_repacked_rows_equals_repacking_swapped_rows() {
        for ty in [GgmlType::Q4_K, GgmlType::Q4_0, GgmlType::IQ4_NL] {
            let (il, mut file) = plain(ty, 512, 32, 11);
            let mut mem = repack(&il, &file);
            // Within a group, across groups, lane 0 with lane 7, and a row with itself.
            for (r, s) in [(1, 6), (3, 27), (0, 31), (12, 12), (9, 8), (30, 4)] {
                il.swap_rows(&mut mem, r, s);
                let rb = il.row_bytes();
                let (a, b) = (file[r * rb..(r + 1) * rb].to_vec(), file[s * rb..(s + 1) * rb].to_vec());
                file[r * rb..(r + 1) * rb].copy_from_slice(&b);
                file[s * rb..(s + 1) * rb].copy_from_slice(&a);
                assert_eq!(mem, repack(&il, &file), "{ty}: rows {r} and {s}");
            }
        }
    }

    #[test]
    fn detect_finds_the_packing_and_refuses_unknown_bytes() {
        let (il, file) = plain(GgmlType::Q4_K, 512, 8, 5);
        let mem = repack(&il, &file);
        assert_eq!(Interleaved::detect(GgmlType::Q4_K, 512, &file, &mem), Some(il));
        let il4 = Interleaved { interleave: 4, ..il };
        assert_eq!(Interleaved::detect(GgmlType::Q4_K, 512, &file, &repack(&il4, &file)), Some(il4));
        let (q0, f0) = plain(GgmlType::Q4_0, 512, 8, 7);
        assert_eq!(Interleaved::detect(GgmlType::Q4_0, 512, &f0, &repack(&q0, &f0)), Some(q0));
        // The file layout itself, another type, or other bytes: not a known packing.
        assert_eq!(Interleaved::detect(GgmlType::Q4_K, 512, &file, &file), None);
        assert_eq!(Interleaved::detect(GgmlType::Q6_K, 512, &file, &mem), None);
        let mut other = mem.clone();
        other[200] ^= 1;
        assert_eq!(Interleaved::detect(GgmlType::Q4_K, 512, &file, &other), None);
    }

    /// The 12-byte scale groups hold exactly what make_block_q4_Kx8 writes: checked
    /// against its formulas written out for lane 5, sub-block 1.
    #[test]
    fn q4_k_scales_follow_llama_cpps_packing() {
        let (il, file) = plain(GgmlType::Q4_K, 256, 8, 9);
        let mem = repack(&il, &file);
        let sc = |j: usize| &file[j * 144 + 4..j * 144 + 16];
        let (s, m) = (|j: usize| sc(j)[1] & 63, |j: usize| sc(j)[5] & 63);
        let g = &mem[32 + 12..32 + 24];
        assert_eq!(g[1], (s(1) & 63) + ((s(5) & 48) << 2));
        assert_eq!(g[5], (m(1) & 63) + ((m(5) & 48) << 2));
        assert_eq!(g[9], (s(5) & 15) + ((m(5) & 15) << 4));
        assert_eq!(scale_min_of(g, 5), (s(5), m(5)));
    }
}
