//! The pure-Rust GGUF reader and writer.

mod common;

use selectinfer::engine::ggml_type_layout;
use selectinfer::gguf::{GgmlType, GgufError, GgufFile, GgufWriter, TensorSpec, Value, ValueType};

#[test]
fn type_table_matches_the_linked_ggml() {
    for ty in GgmlType::known() {
        let l = ty.layout().unwrap();
        assert_eq!(ggml_type_layout(ty.0), (l.block_elems, l.block_bytes), "type {ty}");
    }
}

#[test]
fn write_then_read_round_trips_metadata_and_tensors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.gguf");
    let meta = vec![
        ("general.architecture".to_string(), Value::String("llama".into())),
        ("a.u8".into(), Value::U8(7)),
        ("a.i64".into(), Value::I64(-3)),
        ("a.f64".into(), Value::F64(0.25)),
        ("a.bool".into(), Value::Bool(true)),
        ("a.strs".into(), Value::strings(["x", "yz"])),
        ("a.empty".into(), Value::Array(ValueType::F32, vec![])),
    ];
    let specs = vec![
        TensorSpec { name: "t0".into(), dims: vec![3, 2], ty: GgmlType::F32 },
        TensorSpec { name: "t1".into(), dims: vec![64], ty: GgmlType::Q8_0 },
    ];
    let mut w = GgufWriter::create(&path, &meta, specs.clone()).unwrap();
    let d0: Vec<u8> = (0..24).collect();
    let d1: Vec<u8> = (0..68).map(|i| (i * 3) as u8).collect();
    w.write_tensor(&d0).unwrap();
    w.write_tensor(&d1).unwrap();
    w.finish().unwrap();

    let g = GgufFile::read(&path).unwrap();
    assert_eq!(g.version, 3);
    assert_eq!(g.metadata, meta);
    assert_eq!(g.tensors.len(), 2);
    assert_eq!(g.tensors[1].offset, 32, "second tensor starts at the next 32-byte boundary");
    assert_eq!(g.read_tensor_data(&g.tensors[0]).unwrap(), d0);
    assert_eq!(g.read_tensor_data(&g.tensors[1]).unwrap(), d1);
    assert_eq!(g.file_size, g.data_offset + 32 + 96, "padded to the alignment");
}

#[test]
fn writer_rejects_wrong_sizes_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.gguf");
    let specs = vec![TensorSpec { name: "t".into(), dims: vec![4], ty: GgmlType::F32 }];
    let mut w = GgufWriter::create(&path, &[], specs).unwrap();
    assert!(w.write_tensor(&[0; 15]).is_err());
    drop(w);
    assert!(common::files_in(dir.path()).is_empty(), "no temporary or partial file left");

    let specs = vec![TensorSpec { name: "t".into(), dims: vec![4], ty: GgmlType::F32 }];
    let w = GgufWriter::create(&path, &[], specs).unwrap();
    assert!(matches!(w.finish(), Err(GgufError::Malformed { .. })), "unwritten tensor is an error");
    assert!(common::files_in(dir.path()).is_empty());
}

#[test]
fn reader_names_foreign_and_truncated_files() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("x.gguf");
    std::fs::write(&foreign, b"PK\x03\x04 definitely not gguf").unwrap();
    assert!(matches!(GgufFile::read(&foreign), Err(GgufError::NotGguf { .. })));

    let model = common::tiny_model(selectinfer::synth::SynthArch::Llama);
    let bytes = std::fs::read(&model).unwrap();
    for cut in [2, 20, 2000, bytes.len() / 2, bytes.len() - 1] {
        let p = dir.path().join(format!("cut{cut}.gguf"));
        std::fs::write(&p, &bytes[..cut]).unwrap();
        let err = GgufFile::read(&p).unwrap_err();
        assert!(matches!(err, GgufError::Truncated { .. }), "cut at {cut}: {err}");
        assert!(err.to_string().contains(&p.display().to_string()), "error names the file: {err}");
    }
}
