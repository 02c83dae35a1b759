//! GGML tensor element types as stored in GGUF files, with the block geometry
//! needed to size tensors without asking llama.cpp.

use std::fmt;

/// A ggml tensor type id (`enum ggml_type`), kept as the raw number so that files
/// with types we do not know still parse; [`GgmlType::layout`] says whether we can
/// size it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GgmlType(pub u32);

/// How a type packs elements: `block_elems` elements take `block_bytes` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockLayout {
    /// Elements per block (1 for plain float/int types, 32 or 256 for quantized ones).
    pub block_elems: u64,
    /// Bytes per block.
    pub block_bytes: u64,
}

/// (id, name, elements per block, bytes per block), from ggml.h / ggml-common.h of
/// the vendored llama.cpp. `tests/gguf.rs` checks every entry against
/// `ggml_blck_size` / `ggml_type_size`.
const TABLE: &[(u32, &str, u64, u64)] = &[
    (0, "F32", 1, 4),
    (1, "F16", 1, 2),
    (2, "Q4_0", 32, 18),
    (3, "Q4_1", 32, 20),
    (6, "Q5_0", 32, 22),
    (7, "Q5_1", 32, 24),
    (8, "Q8_0", 32, 34),
    (9, "Q8_1", 32, 36),
    (10, "Q2_K", 256, 84),
    (11, "Q3_K", 256, 110),
    (12, "Q4_K", 256, 144),
    (13, "Q5_K", 256, 176),
    (14, "Q6_K", 256, 210),
    (15, "Q8_K", 256, 292),
    (16, "IQ2_XXS", 256, 66),
    (17, "IQ2_XS", 256, 74),
    (18, "IQ3_XXS", 256, 98),
    (19, "IQ1_S", 256, 50),
    (20, "IQ4_NL", 32, 18),
    (21, "IQ3_S", 256, 110),
    (22, "IQ2_S", 256, 82),
    (23, "IQ4_XS", 256, 136),
    (24, "I8", 1, 1),
    (25, "I16", 1, 2),
    (26, "I32", 1, 4),
    (27, "I64", 1, 8),
    (28, "F64", 1, 8),
    (29, "IQ1_M", 256, 56),
    (30, "BF16", 1, 2),
    (34, "TQ1_0", 256, 54),
    (35, "TQ2_0", 256, 66),
    (39, "MXFP4", 32, 17),
    (40, "NVFP4", 64, 36),
    (41, "Q1_0", 128, 18),
    (42, "Q2_0", 64, 18),
];

impl GgmlType {
    pub const F32: GgmlType = GgmlType(0);
    pub const F16: GgmlType = GgmlType(1);
    pub const Q4_0: GgmlType = GgmlType(2);
    pub const Q4_1: GgmlType = GgmlType(3);
    pub const Q5_0: GgmlType = GgmlType(6);
    pub const Q5_1: GgmlType = GgmlType(7);
    pub const Q8_0: GgmlType = GgmlType(8);
    pub const Q2_K: GgmlType = GgmlType(10);
    pub const Q3_K: GgmlType = GgmlType(11);
    pub const Q4_K: GgmlType = GgmlType(12);
    pub const Q5_K: GgmlType = GgmlType(13);
    pub const Q6_K: GgmlType = GgmlType(14);
    pub const IQ4_NL: GgmlType = GgmlType(20);
    pub const BF16: GgmlType = GgmlType(30);

    /// Every type id this module can size, in id order.
    pub fn known() -> impl Iterator<Item = GgmlType> {
        TABLE.iter().map(|&(id, ..)| GgmlType(id))
    }

    fn entry(self) -> Option<&'static (u32, &'static str, u64, u64)> {
        TABLE.iter().find(|e| e.0 == self.0)
    }

    /// Block geometry, or `None` for a type id this build does not know.
    pub fn layout(self) -> Option<BlockLayout> {
        self.entry().map(|&(_, _, block_elems, block_bytes)| BlockLayout { block_elems, block_bytes })
    }

    /// ggml's name for the type (`"Q4_K"`), or `"type<N>"` when unknown.
    pub fn name(self) -> String {
        match self.entry() {
            Some(e) => e.1.to_string(),
            None => format!("type{}", self.0),
        }
    }

    /// Looks a type up by ggml's name, case-insensitively.
    pub fn from_name(name: &str) -> Option<GgmlType> {
        TABLE.iter().find(|e| e.1.eq_ignore_ascii_case(name)).map(|e| GgmlType(e.0))
    }

    /// True for the block-quantized types (more than one element per block).
    pub fn is_quantized(self) -> bool {
        self.layout().is_some_and(|l| l.block_elems > 1)
    }

    /// Bytes taken by one row of `row_elems` elements, or `None` when the type is
    /// unknown or the row is not a whole number of blocks.
    pub fn row_bytes(self, row_elems: u64) -> Option<u64> {
        let l = self.layout()?;
        if row_elems % l.block_elems != 0 {
            return None;
        }
        Some(row_elems / l.block_elems * l.block_bytes)
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}
