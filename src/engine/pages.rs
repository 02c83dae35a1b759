//! Dropping memory-mapped file pages that llama.cpp no longer reads.
//!
//! With mmap, llama.cpp maps the whole GGUF file and prefetches it. Weights that it
//! repacks for its CPU kernels (Q4_0, Q4_K, Q6_K, Q8_0, ... on x86) or uploads to a
//! GPU are copied out of the mapping into their own buffers, but the mapped pages
//! stay resident: a dense Q4_K_M model's resident memory is about twice its file.
//! [`release_unused_file_pages`] tells the kernel (`MADV_DONTNEED`) that the pages
//! holding only such tensors are not needed. The mapping is shared and read-only, so
//! nothing is lost: a page touched again is read back from the page cache or disk.

use std::ffi::CString;
use std::path::Path;

use llama_cpp_sys_2 as sys;

use crate::gguf::GgufFile;

/// One mapping of the model file in this process (from /proc/self/maps).
struct FileMapping {
    start: usize,
    end: usize,
    offset: u64,
}

fn mappings_of(path: &Path) -> Vec<FileMapping> {
    let Ok(canon) = std::fs::canonicalize(path) else { return Vec::new() };
    let canon = canon.to_string_lossy().into_owned();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    maps.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (range, _perms, offset, _dev, _inode) = (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
            let file: Vec<&str> = f.collect();
            if file.join(" ") != canon {
                return None;
            }
            let (a, b) = range.split_once('-')?;
            Some(FileMapping {
                start: usize::from_str_radix(a, 16).ok()?,
                end: usize::from_str_radix(b, 16).ok()?,
                offset: u64::from_str_radix(offset, 16).ok()?,
            })
        })
        .collect()
}

/// Advises the kernel that the mapped file pages of every tensor llama.cpp holds
/// outside the mapping (repacked or on a device) are not needed. Returns the bytes
/// advised. Pages shared with a tensor read from the mapping are kept.
pub(crate) fn release_unused_file_pages(model: *const sys::llama_model, gguf: &GgufFile, path: &Path) -> usize {
    let maps = mappings_of(path);
    if maps.is_empty() {
        return 0;
    }
    let page = super::host::page_size();
    let mut released = 0;
    for t in &gguf.tensors {
        let Some(len) = t.n_bytes() else { continue };
        let Ok(name) = CString::new(t.name.as_str()) else { continue };
        let file_offset = gguf.data_offset + t.offset;
        // SAFETY: model is live; the tensor pointer lives as long as it.
        let outside = unsafe {
            let lt = sys::llama_model_get_tensor_by_name(model, name.as_ptr());
            match lt.as_ref() {
                Some(lt) => !lt.data.is_null() && maps.iter().all(|m| (lt.data as usize) < m.start || (lt.data as usize) >= m.end),
                None => false,
            }
        };
        if !outside {
            continue;
        }
        let Some(m) = maps.iter().find(|m| file_offset >= m.offset && file_offset + len <= m.offset + (m.end - m.start) as u64) else { continue };
        let addr = m.start + (file_offset - m.offset) as usize;
        // Whole pages inside the tensor only: neighbours may be read from the mapping.
        let (a, b) = (addr.div_ceil(page) * page, (addr + len as usize) / page * page);
        if b > a {
            // SAFETY: [a, b) lies inside a live shared read-only file mapping;
            // MADV_DONTNEED drops its pages, which are read again on access.
            if unsafe { libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_DONTNEED) } == 0 {
                released += b - a;
            }
        }
    }
    released
}

#[cfg(test)]
mod tests {
    use super::mappings_of;

    #[test]
    fn the_mappings_of_a_file_are_found_with_their_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("weights.bin");
        std::fs::write(&path, vec![7u8; 3 * 4096]).unwrap();
        assert!(mappings_of(&path).is_empty(), "not mapped yet");
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: the file is not modified while mapped.
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        let found = mappings_of(&path);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].start, map.as_ptr() as usize);
        assert_eq!(found[0].offset, 0);
        assert!(found[0].end - found[0].start >= 3 * 4096);
    }
}
