//! F32, F16 and BF16 tensor data as little-endian bytes.

use crate::gguf::GgmlType;

/// Encodes f32 values as a tensor of `ty` (F32, F16 or BF16).
pub fn encode_floats(values: &[f32], ty: GgmlType) -> Option<Vec<u8>> {
    Some(match ty {
        GgmlType::F32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        GgmlType::F16 => values.iter().flat_map(|v| half::f16::from_f32(*v).to_le_bytes()).collect(),
        GgmlType::BF16 => values.iter().flat_map(|v| half::bf16::from_f32(*v).to_le_bytes()).collect(),
        _ => return None,
    })
}

/// Adds `delta` element by element to F32, F16 or BF16 data (`None` for other
/// types or a length that does not match).
pub fn add_floats(bytes: &mut [u8], ty: GgmlType, delta: &[f32]) -> Option<()> {
    let mut v = decode_floats(bytes, ty)?;
    if v.len() != delta.len() {
        return None;
    }
    v.iter_mut().zip(delta).for_each(|(v, d)| *v += d);
    bytes.copy_from_slice(&encode_floats(&v, ty)?);
    Some(())
}

/// Decodes an F32, F16 or BF16 tensor to f32 values.
pub fn decode_floats(bytes: &[u8], ty: GgmlType) -> Option<Vec<f32>> {
    Some(match ty {
        GgmlType::F32 => bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect(),
        GgmlType::F16 => {
            // The slice conversion uses the CPU's F16C instructions where it has them
            // (exact either way: every f16 is an f32).
            use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
            let bits: Vec<u16> = bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
            let mut out = vec![0f32; bits.len()];
            bits.reinterpret_cast::<half::f16>().convert_to_f32_slice(&mut out);
            out
        }
        GgmlType::BF16 => bytes.chunks_exact(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
        _ => return None,
    })
}
