//! Streaming GGUF writer: header first, then each tensor in table order.

use std::io::{BufWriter, Seek, Write};
use std::path::Path;

use super::value::write_string;
use super::{GgmlType, GgufError, TensorInfo, Value, DEFAULT_ALIGNMENT, GGUF_MAGIC};
use crate::fsutil::AtomicFile;

/// A tensor to be written: everything of [`TensorInfo`] but the offset, which the
/// writer assigns.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec {
    /// GGUF name.
    pub name: String,
    /// Dimensions, fastest-varying first.
    pub dims: Vec<u64>,
    /// Element type.
    pub ty: GgmlType,
}

impl From<&TensorInfo> for TensorSpec {
    fn from(t: &TensorInfo) -> Self {
        TensorSpec { name: t.name.clone(), dims: t.dims.clone(), ty: t.ty }
    }
}

/// Writes a GGUF v3 file to a temporary name next to the target and renames it on
/// [`GgufWriter::finish`]; dropped unfinished, it leaves nothing behind.
pub struct GgufWriter {
    out: BufWriter<AtomicFile>,
    tensors: Vec<(TensorSpec, u64)>,
    next: usize,
    alignment: u64,
    data_start: u64,
}

impl GgufWriter {
    /// Creates `path` (through a temporary file) and writes the header.
    /// `general.alignment` in `metadata`, if present, sets the alignment.
    pub fn create(path: &Path, metadata: &[(String, Value)], tensors: Vec<TensorSpec>) -> Result<GgufWriter, GgufError> {
        let io_err = |source| GgufError::Write { path: path.to_path_buf(), source };
        let malformed = |what: String| GgufError::Malformed { path: path.to_path_buf(), what };
        let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment") {
            Some((_, v)) => v.as_u64().filter(|a| *a > 0 && a.is_power_of_two()).ok_or_else(|| malformed(format!("general.alignment is {v:?}")))?,
            None => DEFAULT_ALIGNMENT,
        };
        let mut offset = 0u64;
        let mut laid_out = Vec::with_capacity(tensors.len());
        for spec in tensors {
            let info = TensorInfo { name: spec.name.clone(), dims: spec.dims.clone(), ty: spec.ty, offset };
            let bytes = info.n_bytes().ok_or_else(|| malformed(format!("cannot size tensor {} ({} {:?})", spec.name, spec.ty, spec.dims)))?;
            laid_out.push((spec, offset));
            offset = (offset + bytes).div_ceil(alignment) * alignment;
        }

        let mut out = BufWriter::new(AtomicFile::create(path).map_err(io_err)?);
        let header = (|| -> std::io::Result<()> {
            out.write_all(&GGUF_MAGIC.to_le_bytes())?;
            out.write_all(&3u32.to_le_bytes())?;
            out.write_all(&(laid_out.len() as u64).to_le_bytes())?;
            out.write_all(&(metadata.len() as u64).to_le_bytes())?;
            for (key, value) in metadata {
                write_string(&mut out, key)?;
                out.write_all(&(value.value_type() as u32).to_le_bytes())?;
                value.write_payload(&mut out)?;
            }
            for (spec, offset) in &laid_out {
                write_string(&mut out, &spec.name)?;
                out.write_all(&(spec.dims.len() as u32).to_le_bytes())?;
                for d in &spec.dims {
                    out.write_all(&d.to_le_bytes())?;
                }
                out.write_all(&spec.ty.0.to_le_bytes())?;
                out.write_all(&offset.to_le_bytes())?;
            }
            Ok(())
        })();
        header.map_err(io_err)?;
        let pos = out.stream_position().map_err(io_err)?;
        let data_start = pos.div_ceil(alignment) * alignment;
        pad(&mut out, data_start - pos).map_err(io_err)?;
        Ok(GgufWriter { out, tensors: laid_out, next: 0, alignment, data_start })
    }

    /// The name of the tensor the next [`write_tensor`](Self::write_tensor) call writes.
    pub fn next_tensor(&self) -> Option<&TensorSpec> {
        self.tensors.get(self.next).map(|(s, _)| s)
    }

    /// Writes the next tensor's data, which must have exactly its size.
    pub fn write_tensor(&mut self, data: &[u8]) -> Result<(), GgufError> {
        let path = self.out.get_ref().target().to_path_buf();
        let malformed = |what: String| GgufError::Malformed { path: path.clone(), what };
        let io_err = |source| GgufError::Write { path: path.clone(), source };
        let (spec, offset) = self.tensors.get(self.next).ok_or_else(|| malformed("more tensors written than declared".into()))?;
        let info = TensorInfo { name: spec.name.clone(), dims: spec.dims.clone(), ty: spec.ty, offset: *offset };
        let want = info.n_bytes().expect("sized in create");
        if data.len() as u64 != want {
            return Err(malformed(format!("tensor {}: {} bytes given, {} expected", spec.name, data.len(), want)));
        }
        let pos = self.out.stream_position().map_err(io_err)?;
        if pos != self.data_start + offset {
            return Err(malformed(format!("tensor {} would start at {pos}, not {}", spec.name, self.data_start + offset)));
        }
        self.out.write_all(data).map_err(io_err)?;
        let end = pos + want;
        pad(&mut self.out, end.div_ceil(self.alignment) * self.alignment - end).map_err(io_err)?;
        self.next += 1;
        Ok(())
    }

    /// Checks that every declared tensor was written, then renames the file into place.
    pub fn finish(self) -> Result<(), GgufError> {
        let path = self.out.get_ref().target().to_path_buf();
        if self.next != self.tensors.len() {
            return Err(GgufError::Malformed {
                path,
                what: format!("{} of {} tensors written", self.next, self.tensors.len()),
            });
        }
        let file = self.out.into_inner().map_err(|e| GgufError::Write { path: path.clone(), source: e.into_error() })?;
        file.commit().map_err(|source| GgufError::Write { path, source })
    }
}

fn pad(w: &mut impl Write, n: u64) -> std::io::Result<()> {
    const ZEROS: [u8; 256] = [0; 256];
    let mut left = n;
    while left > 0 {
        let k = left.min(ZEROS.len() as u64) as usize;
        w.write_all(&ZEROS[..k])?;
        left -= k as u64;
    }
    Ok(())
}

/// Writes `src` to `out` with its metadata plus `extra` (replacing keys of the same
/// name) and every tensor copied unchanged.
pub fn copy_with_metadata(src: &super::GgufFile, out: &Path, extra: &[(String, Value)]) -> Result<(), GgufError> {
    let mut metadata: Vec<(String, Value)> = src.metadata.iter().filter(|(k, _)| !extra.iter().any(|(e, _)| e == k)).cloned().collect();
    metadata.extend(extra.iter().cloned());
    let mut w = GgufWriter::create(out, &metadata, src.tensors.iter().map(TensorSpec::from).collect())?;
    for t in &src.tensors {
        w.write_tensor(&src.read_tensor_data(t)?)?;
    }
    w.finish()
}
