//! Pure-Rust GGUF reading and writing.
//!
//! Sits under every stage that looks at a model file without running it: `inspect`
//! reads the header and tensor table, input validation runs here before a file is
//! handed to llama.cpp (which aborts on some malformed files instead of returning an
//! error), tests write tiny random-weight models, and the slicer rewrites files.
//!
//! Like candle's `gguf_file.rs`, [`GgufFile::read`] parses only the header, metadata
//! and tensor infos; tensor bytes are read on demand. [`GgufWriter`] lays out
//! tensors at the file's alignment and checks each one's size as it is written.

mod types;
pub mod validate;
mod value;
mod writer;

pub use types::{BlockLayout, GgmlType};
pub use value::{Value, ValueType};
pub use writer::{copy_with_metadata, GgufWriter, TensorSpec};

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// `"GGUF"` read as a little-endian u32.
pub const GGUF_MAGIC: u32 = 0x4655_4747;
/// Alignment used when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// Errors from reading or writing a GGUF file; each names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GgufError {
    /// The file could not be opened or read.
    #[error("cannot read {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The output file could not be created or written (a full disk, a missing
    /// or read-only folder).
    #[error("cannot write {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The file does not start with the GGUF magic.
    #[error("{path}: not a GGUF file (magic is {found:#010x}, expected \"GGUF\")")]
    NotGguf {
        /// The file.
        path: PathBuf,
        /// The first four bytes as a little-endian u32.
        found: u32,
    },
    /// The header or a tensor extends past the end of the file.
    #[error("{path}: truncated GGUF file: {what}")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// What could not be read.
        what: String,
    },
    /// The file parses but breaks a rule of the format.
    #[error("{path}: malformed GGUF file: {what}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The broken rule.
        what: String,
    },
}

/// One tensor's entry in the tensor table.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    /// GGUF name, e.g. `blk.3.ffn_up.weight`.
    pub name: String,
    /// Dimensions, fastest-varying first (ggml's `ne`): a `[n_embd, n_ff]` matrix
    /// has rows of `n_embd` elements.
    pub dims: Vec<u64>,
    /// Element type.
    pub ty: GgmlType,
    /// Offset of the data from the start of the data section.
    pub offset: u64,
}

impl TensorInfo {
    /// Number of elements (saturating; [`GgufFile::read`] refuses counts that overflow).
    pub fn n_elements(&self) -> u64 {
        self.dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).unwrap_or(u64::MAX)
    }

    /// Size of the data in bytes, or `None` for an unknown type, a row that is
    /// not a whole number of blocks, or a byte count that overflows.
    pub fn n_bytes(&self) -> Option<u64> {
        let row = *self.dims.first().unwrap_or(&1);
        let rows = self.dims.iter().skip(1).try_fold(1u64, |a, &d| a.checked_mul(d))?;
        self.ty.row_bytes(row)?.checked_mul(rows)
    }
}

/// The parsed header of a GGUF file.
#[derive(Debug, Clone)]
pub struct GgufFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Format version (2 or 3).
    pub version: u32,
    /// Metadata in file order.
    pub metadata: Vec<(String, Value)>,
    /// Tensor table in file order.
    pub tensors: Vec<TensorInfo>,
    /// Alignment of tensor data.
    pub alignment: u64,
    /// Absolute offset of the data section.
    pub data_offset: u64,
    /// File size in bytes.
    pub file_size: u64,
}

/// Limits that keep a corrupt length field from allocating the machine away.
const MAX_DIMS: u32 = 4;

impl GgufFile {
    /// Reads and validates the header of `path`: magic, version, metadata, tensor
    /// table, and that every tensor's data lies inside the file.
    pub fn read(path: impl AsRef<Path>) -> Result<GgufFile, GgufError> {
        let path = path.as_ref().to_path_buf();
        let io_err = |source| GgufError::Io { path: path.clone(), source };
        let file = File::open(&path).map_err(io_err)?;
        let file_size = file.metadata().map_err(io_err)?.len();
        let mut r = HeaderReader { inner: BufReader::new(file), path: &path, remaining: file_size };

        let magic = r.u32("magic")?;
        if magic != GGUF_MAGIC {
            return Err(GgufError::NotGguf { path: path.clone(), found: magic });
        }
        let version = r.u32("version")?;
        if !(2..=3).contains(&version) {
            return Err(r.malformed(format!("unsupported GGUF version {version}")));
        }
        let n_tensors = r.u64("tensor count")?;
        let n_kv = r.u64("metadata count")?;

        let mut metadata: Vec<(String, Value)> = Vec::new();
        let mut keys = std::collections::HashSet::new();
        for i in 0..n_kv {
            let key = r.string(&format!("metadata key {i}"))?;
            if !keys.insert(key.clone()) {
                return Err(r.malformed(format!("metadata key {key} appears twice")));
            }
            let ty = r.value_type(&key)?;
            let value = r.value(ty, &key)?;
            metadata.push((key, value));
        }

        let mut tensors = Vec::new();
        for i in 0..n_tensors {
            let name = r.string(&format!("tensor name {i}"))?;
            let n_dims = r.u32(&name)?;
            if n_dims == 0 || n_dims > MAX_DIMS {
                return Err(r.malformed(format!("tensor {name} has {n_dims} dimensions")));
            }
            let dims = (0..n_dims).map(|_| r.u64(&name)).collect::<Result<Vec<_>, _>>()?;
            let ty = GgmlType(r.u32(&name)?);
            let offset = r.u64(&name)?;
            tensors.push(TensorInfo { name, dims, ty, offset });
        }

        let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment") {
            None => DEFAULT_ALIGNMENT,
            Some((_, v)) => match v.as_u64() {
                Some(a) if a > 0 && a.is_power_of_two() => a,
                _ => return Err(r.malformed(format!("general.alignment is {v:?}"))),
            },
        };
        let header_end = file_size - r.remaining;
        let data_offset = header_end.div_ceil(alignment) * alignment;
        let gguf = GgufFile { path: path.clone(), version, metadata, tensors, alignment, data_offset, file_size };
        gguf.check_tensor_extents()?;
        validate::check_model(&gguf).map_err(|what| gguf.malformed(what))?;
        Ok(gguf)
    }

    fn check_tensor_extents(&self) -> Result<(), GgufError> {
        let mut seen = std::collections::HashSet::new();
        for t in &self.tensors {
            if !seen.insert(t.name.as_str()) {
                return Err(self.malformed(format!("tensor {} appears twice", t.name)));
            }
            let bytes = validate::tensor_size(t).map_err(|what| self.malformed(what))?;
            if t.offset % self.alignment != 0 {
                return Err(self.malformed(format!("tensor {} is not aligned", t.name)));
            }
            let end = self.data_offset.checked_add(t.offset).and_then(|s| s.checked_add(bytes));
            if end.is_none_or(|end| end > self.file_size) {
                return Err(GgufError::Truncated {
                    path: self.path.clone(),
                    what: format!(
                        "tensor {} needs bytes up to {} but the file has {}",
                        t.name,
                        end.map_or("overflow".into(), |e| e.to_string()),
                        self.file_size
                    ),
                });
            }
        }
        Ok(())
    }

    fn malformed(&self, what: String) -> GgufError {
        GgufError::Malformed { path: self.path.clone(), what }
    }

    /// The metadata value for `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// A string value.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    /// An integer value of any width.
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(Value::as_u64)
    }

    /// `general.architecture`.
    pub fn architecture(&self) -> Option<&str> {
        self.get_str("general.architecture")
    }

    /// The tensor called `name`.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// Reads one tensor's bytes from the file.
    pub fn read_tensor_data(&self, tensor: &TensorInfo) -> Result<Vec<u8>, GgufError> {
        let io_err = |source| GgufError::Io { path: self.path.clone(), source };
        let len = tensor.n_bytes().ok_or_else(|| self.malformed(format!("cannot size {}", tensor.name)))?;
        let mut f = File::open(&self.path).map_err(io_err)?;
        f.seek(SeekFrom::Start(self.data_offset + tensor.offset)).map_err(io_err)?;
        let mut buf = vec![0u8; len as usize];
        f.read_exact(&mut buf).map_err(io_err)?;
        Ok(buf)
    }
}

/// Reads header fields, turning a short read into [`GgufError::Truncated`] and
/// refusing lengths longer than what is left of the file.
struct HeaderReader<'a> {
    inner: BufReader<File>,
    path: &'a Path,
    remaining: u64,
}

impl HeaderReader<'_> {
    fn malformed(&self, what: String) -> GgufError {
        GgufError::Malformed { path: self.path.to_path_buf(), what }
    }

    fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>, GgufError> {
        if n > self.remaining {
            return Err(GgufError::Truncated {
                path: self.path.to_path_buf(),
                what: format!("{what}: needs {n} more bytes, {} left", self.remaining),
            });
        }
        let mut buf = vec![0u8; n as usize];
        self.inner.read_exact(&mut buf).map_err(|source| GgufError::Io { path: self.path.to_path_buf(), source })?;
        self.remaining -= n;
        Ok(buf)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], GgufError> {
        let v = self.bytes(N as u64, what)?;
        Ok(v.try_into().expect("length checked"))
    }

    fn u32(&mut self, what: &str) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn string(&mut self, what: &str) -> Result<String, GgufError> {
        let len = self.u64(what)?;
        let raw = self.bytes(len, what)?;
        String::from_utf8(raw).map_err(|_| self.malformed(format!("{what}: string is not UTF-8")))
    }

    fn value_type(&mut self, key: &str) -> Result<ValueType, GgufError> {
        let id = self.u32(key)?;
        ValueType::from_id(id).ok_or_else(|| self.malformed(format!("metadata {key}: unknown value type {id}")))
    }

    fn value(&mut self, ty: ValueType, key: &str) -> Result<Value, GgufError> {
        Ok(match ty {
            ValueType::U8 => Value::U8(self.array::<1>(key)?[0]),
            ValueType::I8 => Value::I8(self.array::<1>(key)?[0] as i8),
            ValueType::U16 => Value::U16(u16::from_le_bytes(self.array(key)?)),
            ValueType::I16 => Value::I16(i16::from_le_bytes(self.array(key)?)),
            ValueType::U32 => Value::U32(self.u32(key)?),
            ValueType::I32 => Value::I32(i32::from_le_bytes(self.array(key)?)),
            ValueType::F32 => Value::F32(f32::from_le_bytes(self.array(key)?)),
            ValueType::Bool => Value::Bool(self.array::<1>(key)?[0] != 0),
            ValueType::String => Value::String(self.string(key)?),
            ValueType::U64 => Value::U64(self.u64(key)?),
            ValueType::I64 => Value::I64(i64::from_le_bytes(self.array(key)?)),
            ValueType::F64 => Value::F64(f64::from_le_bytes(self.array(key)?)),
            ValueType::Array => {
                let elem = self.value_type(key)?;
                if elem == ValueType::Array {
                    return Err(self.malformed(format!("metadata {key}: nested arrays are not supported")));
                }
                let n = self.u64(key)?;
                // Every element takes at least one byte, so a count beyond the bytes
                // left is corrupt; checking first avoids a huge allocation.
                if n > self.remaining {
                    return Err(GgufError::Truncated {
                        path: self.path.to_path_buf(),
                        what: format!("metadata {key}: array of {n} elements, {} bytes left", self.remaining),
                    });
                }
                let items = (0..n).map(|_| self.value(elem, key)).collect::<Result<Vec<_>, _>>()?;
                Value::Array(elem, items)
            }
        })
    }
}

/// Parses `blk.<layer>.<rest>` into its layer and the rest (tensor names of
/// repeating blocks).
pub fn split_block_name(name: &str) -> Option<(usize, &str)> {
    let rest = name.strip_prefix("blk.")?;
    let (layer, rest) = rest.split_once('.')?;
    Some((layer.parse().ok()?, rest))
}

/// A one-line rendering of a metadata value; arrays longer than 8 show their first
/// entries and their length.
pub fn summarize_value(v: &Value) -> String {
    fn one(v: &Value) -> String {
        match v {
            Value::String(s) if s.chars().count() > 60 => format!("{:?}...", s.chars().take(60).collect::<String>()),
            Value::String(s) => format!("{s:?}"),
            Value::Array(_, items) => {
                let shown: Vec<String> = items.iter().take(8).map(one).collect();
                let more = if items.len() > 8 { format!(", ... ({} entries)", items.len()) } else { String::new() };
                format!("[{}{more}]", shown.join(", "))
            }
            other => format!("{other:?}").split('(').nth(1).map(|s| s.trim_end_matches(')').to_string()).unwrap_or_default(),
        }
    }
    one(v)
}
