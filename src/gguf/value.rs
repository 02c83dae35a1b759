//! GGUF metadata values.

use std::io::{self, Write};

/// The type tag of a metadata value (`enum gguf_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
}

impl ValueType {
    /// The tag for a GGUF type id.
    pub fn from_id(id: u32) -> Option<ValueType> {
        use ValueType::*;
        Some(match id {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }
}

/// A metadata value. Arrays keep their element type so that empty arrays write back
/// unchanged.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(ValueType, Vec<Value>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value {
    /// The value's type tag.
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::U8(_) => ValueType::U8,
            Value::I8(_) => ValueType::I8,
            Value::U16(_) => ValueType::U16,
            Value::I16(_) => ValueType::I16,
            Value::U32(_) => ValueType::U32,
            Value::I32(_) => ValueType::I32,
            Value::F32(_) => ValueType::F32,
            Value::Bool(_) => ValueType::Bool,
            Value::String(_) => ValueType::String,
            Value::Array(..) => ValueType::Array,
            Value::U64(_) => ValueType::U64,
            Value::I64(_) => ValueType::I64,
            Value::F64(_) => ValueType::F64,
        }
    }

    /// Any non-negative integer as u64.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v.into()),
            Value::U16(v) => Some(v.into()),
            Value::U32(v) => Some(v.into()),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// Any number as f64.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => Some(v.into()),
            Value::F64(v) => Some(v),
            _ => self.as_u64().map(|v| v as f64),
        }
    }

    /// A string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// An array's elements.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(_, items) => Some(items),
            _ => None,
        }
    }

    /// An integer, or an array of integers, as a list (a scalar gives one entry).
    pub fn as_u64_list(&self) -> Option<Vec<u64>> {
        match self {
            Value::Array(_, items) => items.iter().map(Value::as_u64).collect(),
            v => v.as_u64().map(|x| vec![x]),
        }
    }

    /// An array of strings.
    pub fn strings(items: impl IntoIterator<Item = impl Into<String>>) -> Value {
        Value::Array(ValueType::String, items.into_iter().map(|s| Value::String(s.into())).collect())
    }

    /// An array of u32 values.
    pub fn u32s(items: impl IntoIterator<Item = u32>) -> Value {
        Value::Array(ValueType::U32, items.into_iter().map(Value::U32).collect())
    }

    /// An array of i32 values.
    pub fn i32s(items: impl IntoIterator<Item = i32>) -> Value {
        Value::Array(ValueType::I32, items.into_iter().map(Value::I32).collect())
    }

    /// An array of f32 values.
    pub fn f32s(items: impl IntoIterator<Item = f32>) -> Value {
        Value::Array(ValueType::F32, items.into_iter().map(Value::F32).collect())
    }

    /// Writes the value without its type tag (the caller writes the tag).
    pub(crate) fn write_payload(&self, w: &mut impl Write) -> io::Result<()> {
        match self {
            Value::U8(v) => w.write_all(&[*v]),
            Value::I8(v) => w.write_all(&v.to_le_bytes()),
            Value::U16(v) => w.write_all(&v.to_le_bytes()),
            Value::I16(v) => w.write_all(&v.to_le_bytes()),
            Value::U32(v) => w.write_all(&v.to_le_bytes()),
            Value::I32(v) => w.write_all(&v.to_le_bytes()),
            Value::F32(v) => w.write_all(&v.to_le_bytes()),
            Value::Bool(v) => w.write_all(&[u8::from(*v)]),
            Value::String(s) => write_string(w, s),
            Value::U64(v) => w.write_all(&v.to_le_bytes()),
            Value::I64(v) => w.write_all(&v.to_le_bytes()),
            Value::F64(v) => w.write_all(&v.to_le_bytes()),
            Value::Array(elem, items) => {
                w.write_all(&(*elem as u32).to_le_bytes())?;
                w.write_all(&(items.len() as u64).to_le_bytes())?;
                for item in items {
                    if item.value_type() != *elem {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidInput,
                            format!("array of {elem:?} holds a {:?}", item.value_type()),
                        ));
                    }
                    item.write_payload(w)?;
                }
                Ok(())
            }
        }
    }
}

pub(crate) fn write_string(w: &mut impl Write, s: &str) -> io::Result<()> {
    w.write_all(&(s.len() as u64).to_le_bytes())?;
    w.write_all(s.as_bytes())
}
