//! Packed profile files: any JSON file of a profile directory may be stored
//! gzip-compressed as `NAME.json.gz` (`gzip -n NAME.json`) instead of `NAME.json`.
//!
//! A 1.5B model's profile is about 170 MB of JSON (f64 sums and scores of 250k
//! neurons, per dataset and task) and about 80 MB packed, so committed profiles of
//! real models are kept packed. Readers take either form through [`stored`], the
//! plain one first; a writer keeps the form a file already has, so re-merging a
//! packed directory writes packed rankings. A profile's hash
//! ([`content_sha256`]) is over the JSON itself, so packing a directory does not
//! change the `selectinfer.profile_sha256` of the slices made from it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;

/// Extension of a packed file, after `.json`.
const PACKED_EXT: &str = "gz";

/// The name of `plain` packed: `NAME.json` -> `NAME.json.gz`.
pub fn packed_name(plain: &Path) -> PathBuf {
    let mut s = plain.as_os_str().to_owned();
    s.push(".");
    s.push(PACKED_EXT);
    PathBuf::from(s)
}

/// Whether `path` names a packed file.
pub fn is_packed(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == PACKED_EXT)
}

/// The file a profile keeps under the plain name `plain`: `plain` if it exists,
/// else its packed form if that exists, else `plain` (where a new file goes).
pub fn stored(plain: PathBuf) -> PathBuf {
    if plain.exists() {
        return plain;
    }
    let packed = packed_name(&plain);
    if packed.exists() {
        packed
    } else {
        plain
    }
}

/// Whether a directory entry is a profile JSON file, plain or packed.
pub fn is_json_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".json") || name.ends_with(".json.gz")
}

/// The plain name of a file, packed or not.
pub fn plain_name(path: &Path) -> PathBuf {
    if is_packed(path) {
        path.with_extension("")
    } else {
        path.to_path_buf()
    }
}

/// The JSON bytes of a profile file, unpacking a packed one.
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    let bytes = std::fs::read(path)?;
    if !is_packed(path) {
        return Ok(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() * 3);
    GzDecoder::new(&bytes[..])
        .read_to_end(&mut out)
        .map_err(|e| std::io::Error::new(e.kind(), format!("not a gzip file: {e}")))?;
    Ok(out)
}

/// The bytes to store for `json` under `path`: packed (no name, no time: the same
/// JSON packs to the same bytes) when `path` is a packed name.
pub fn encode(path: &Path, json: Vec<u8>) -> std::io::Result<Vec<u8>> {
    if !is_packed(path) {
        return Ok(json);
    }
    let mut enc = GzEncoder::new(Vec::with_capacity(json.len() / 2), Compression::default());
    enc.write_all(&json)?;
    enc.finish()
}

/// sha256 of a profile file's JSON, hex: the same for its plain and packed forms.
pub fn content_sha256(path: &Path) -> std::io::Result<String> {
    if !is_packed(path) {
        return crate::util::hash::file_sha256(path);
    }
    Ok(crate::util::hash::sha256_hex(&read(path)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_the_stored_form() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("task-qa.json");
        assert_eq!(packed_name(&plain), dir.path().join("task-qa.json.gz"));
        assert_eq!(plain_name(&packed_name(&plain)), plain);
        assert!(is_json_file(&plain) && is_json_file(&packed_name(&plain)));
        assert!(!is_json_file(&dir.path().join("overlap.md")));
        // Neither exists: a new file goes under the plain name.
        assert_eq!(stored(plain.clone()), plain);
        std::fs::write(packed_name(&plain), encode(&packed_name(&plain), b"{}".to_vec()).unwrap()).unwrap();
        assert_eq!(stored(plain.clone()), packed_name(&plain));
        // Both: the plain one is read.
        std::fs::write(&plain, b"{}").unwrap();
        assert_eq!(stored(plain.clone()), plain);
    }

    #[test]
    fn packed_files_read_and_hash_as_their_json() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("model.json");
        let json = br#"{"format":"x","layers":[1.5,2.25]}"#.to_vec();
        std::fs::write(&plain, &json).unwrap();
        let packed = packed_name(&plain);
        let bytes = encode(&packed, json.clone()).unwrap();
        assert_ne!(bytes, json);
        assert_eq!(encode(&packed, json.clone()).unwrap(), bytes, "packing is deterministic");
        std::fs::write(&packed, &bytes).unwrap();
        assert_eq!(read(&packed).unwrap(), json);
        assert_eq!(content_sha256(&packed).unwrap(), content_sha256(&plain).unwrap());
        assert_eq!(content_sha256(&plain).unwrap(), crate::util::hash::sha256_hex(&json));
        // Another compressor's bytes (here: another level) read and hash the same.
        let mut best = GzEncoder::new(Vec::new(), Compression::best());
        best.write_all(&json).unwrap();
        std::fs::write(&packed, best.finish().unwrap()).unwrap();
        assert_eq!(content_sha256(&packed).unwrap(), content_sha256(&plain).unwrap());
        std::fs::write(&packed, b"not gzip").unwrap();
        assert!(read(&packed).unwrap_err().to_string().contains("not a gzip file"));
    }
}
