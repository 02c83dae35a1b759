//! Tests of experiment files: parsing, errors and cell expansion.

use super::*;

const GOOD: &str = "
description: test
threads: 2
models:
  - name: tiny
    source: models/tiny.gguf
    profile: profiles/tiny
tasks:
  - {task: qa, examples: 10, shots: 1}
  - {task: translate, examples: 5}
methods:
  - method: reference
  - method: selectinfer
    load: [0.55, 0.7]
    compute: [0.3, 0.4]
  - method: disk-offload
    mem_cap: 192MiB
    tasks: [translate]
    speed_only: 16
";

#[test]
fn grid_expands_in_order() {
    let e = Experiment::parse(GOOD).unwrap();
    let cells = e.cells();
    // reference x 2 tasks, selectinfer 2 tasks x 2 loads x 2 computes, disk-offload x 1.
    assert_eq!(cells.len(), 2 + 8 + 1);
    let c = &cells[2];
    assert_eq!((c.method, c.task, c.compute), (Method::Selectinfer, Task::Qa, Some((0.3, 0.2))));
    let (base, down) = (SliceBase::F16, crate::select::rewrite::DownLayout::Columns);
    assert_eq!(c.prep, Prep::ProfileSlice { task: Task::Qa, load: 0.55, static_share: 0.3, layers: None, variant: Default::default(), base, down });
    assert_eq!(c.prep.path("tiny"), Path::new("models/tiny.F16.qa-load0.55.gguf"));
    let last = cells.last().unwrap();
    assert_eq!((last.mem_cap, last.speed_only, last.task), (Some(192 << 20), Some(16), Task::Translate));
    assert_eq!(Prep::Quant("q4_k_m").path("m"), Path::new("models/m.q4_k_m.gguf"));
    assert_eq!(Prep::RandomSlice { load: 1.0, static_share: 0.3, layers: Some(2..5), seed: 3 }.path("m"), Path::new("models/m.random-load1.0-layers2-5-seed3.gguf"));
}

fn err(text: &str) -> String {
    format!("{:#}", Experiment::parse(text).unwrap_err())
}

#[test]
fn errors_name_the_field_and_line() {
    let bad_share = GOOD.replace("load: [0.55, 0.7]", "load: [0.55, 1.5]");
    let e = err(&bad_share);
    assert!(e.contains("methods[1]") && e.contains("1.5") && e.contains("line 14"), "{e}");
    let e = err(&GOOD.replace("method: reference", "method: quantum"));
    assert!(e.contains("methods[0]") && e.contains("quantum") && e.contains("line 12"), "{e}");
    let e = err(&GOOD.replace("examples: 10", "exampels: 10"));
    assert!(e.contains("tasks[0]") && e.contains("exampels") && e.contains("line 9"), "{e}");
    let e = err(&GOOD.replace("  - method: reference", "  - method: reference\n    load: 0.5"));
    // Checks across fields name the entry's list and its line.
    assert!(e.contains("methods") && e.contains("takes no load") && e.contains("line 12"), "{e}");
    let e = err(&GOOD.replace("    mem_cap: 192MiB\n", ""));
    assert!(e.contains("needs mem_cap"), "{e}");
    let e = err(&GOOD.replace("192MiB", "192 parsecs"));
    assert!(e.contains("methods[2].mem_cap"), "{e}");
    let e = err(&GOOD.replace("tasks: [translate]", "tasks: [summarize]"));
    assert!(e.contains("methods[2].tasks") && e.contains("summarize"), "{e}");
}

#[test]
fn profile_slices_of_quantized_bases_name_their_base_and_layout() {
    let e = Experiment::parse(&GOOD.replace("    compute: [0.3, 0.4]\n", "    compute: [0.3, 0.4]\n    base: q4_k_m\n    down_layout: neurons\n")).unwrap();
    let c = &e.cells()[2];
    let Prep::ProfileSlice { base, down, .. } = &c.prep else { panic!("{:?}", c.prep) };
    assert_eq!((*base, *down), (SliceBase::Q4KM, crate::select::rewrite::DownLayout::Neurons));
    assert_eq!(c.prep.path("tiny"), Path::new("models/tiny.q4_k_m.qa-load0.55.neurons.gguf"));
    let e = err(&GOOD.replace("  - method: reference", "  - method: reference\n    base: q8_0"));
    assert!(e.contains("takes no base or down_layout"), "{e}");
    let e = err(&GOOD.replace("    compute: [0.3, 0.4]\n", "    compute: [0.3, 0.4]\n    base: iq2_xs\n"));
    assert!(e.contains("iq2_xs"), "{e}");
}

#[test]
fn computed_refit_slices_are_fitted_for_their_cells_computation() {
    let e = Experiment::parse(&GOOD.replace("    compute: [0.3, 0.4]\n", "    compute: [0.3, 0.4]\n    compensate: refit-computed\n    fit_decode_share: 1.0\n")).unwrap();
    let c = &e.cells()[2];
    let Prep::ProfileSlice { variant, .. } = &c.prep else { panic!("{:?}", c.prep) };
    let f = variant.computed_fit;
    assert_eq!((c.compute, f.compute, f.token_share, f.decode_share), (Some((0.3, 0.2)), 0.3, 0.2, 1.0));
    assert_eq!(c.prep.path("tiny"), Path::new("models/tiny.F16.qa-load0.55-refit-computed0.3-0.2-1.0.gguf"));
    let e = err(&GOOD.replace("    compute: [0.3, 0.4]\n", "    compute: [0.3, 0.4]\n    fit_decode_share: 1.0\n"));
    assert!(e.contains("takes no fit_decode_share"), "{e}");
}

#[test]
fn decode_refit_cells_carry_their_ridge_and_refuse_what_does_not_fit() {
    let e = Experiment::parse(&GOOD.replace("    compute: [0.3, 0.4]\n", "    compute: [0.3, 0.4]\n    decode_refit: 2.5\n")).unwrap();
    let cells = e.cells();
    assert!(cells.iter().filter(|c| c.compute.is_some()).all(|c| c.decode_refit == Some(2.5) && !c.decode_bias));
    assert!(cells.iter().filter(|c| c.compute.is_none()).all(|c| c.decode_refit.is_none()));
    for (extra, why) in [
        ("    decode_refit: 0\n", "must be a positive number"),
        ("    decode_refit: 1.0\n    decode_bias: true\n", "takes no decode_bias"),
    ] {
        let e = err(&GOOD.replace("    compute: [0.3, 0.4]\n", &format!("    compute: [0.3, 0.4]\n{extra}")));
        assert!(e.contains(why), "{extra}: {e}");
    }
    let e = err(&GOOD.replace("  - method: reference\n", "  - method: reference\n    decode_refit: 1.0\n"));
    assert!(e.contains("takes no decode_refit"), "{e}");
}

#[test]
fn a_source_reference_is_the_dense_source_file_itself() {
    let yaml = GOOD.replace("    profile: profiles/tiny\n", "    profile: profiles/tiny\n    reference: source\n").replace(
        "  - method: disk-offload\n    mem_cap: 192MiB\n    tasks: [translate]\n    speed_only: 16\n",
        "  - method: random-loading\n",
    );
    let e = Experiment::parse(&yaml).unwrap();
    let m = &e.models[0];
    assert_eq!(m.reference, Reference::Source);
    let cells = e.cells();
    // The reference is the source, unconverted; slices of it say so in their names.
    assert_eq!(m.file(&cells[0].prep), Path::new("models/tiny.gguf"));
    assert_eq!(m.file(&cells[2].prep), Path::new("models/tiny.source.qa-load0.55.gguf"));
    assert_eq!(m.file(&cells.last().unwrap().prep), Path::new("models/tiny.source.random-load0.7.gguf"));
    // The default stays the F16 conversion.
    let f16 = Experiment::parse(GOOD).unwrap();
    assert_eq!(f16.models[0].file(&Prep::F16), Path::new("models/tiny.F16.gguf"));
    // No F16 file to quantize: quantized methods and bases are refused, naming why.
    for method in ["  - method: q4_k_m\n", "  - {method: selectinfer, base: q8_0}\n"] {
        let err = format!("{:#}", Experiment::parse(&format!("{yaml}{method}")).unwrap_err());
        assert!(err.contains("reference: source") && err.contains("no F16 file to quantize"), "{err}");
    }
    let err = format!("{:#}", Experiment::parse(&yaml.replace("    source: models/tiny.gguf\n", "    synth: llama-3.2-1b\n")).unwrap_err());
    assert!(err.contains("reference: source needs a source file"), "{err}");
}

#[test]
fn coreinfer_loading_on_the_profile_slice_shares_selectinfers_file_and_computes_dynamic_only() {
    let yaml = GOOD.replace(
        "  - method: disk-offload\n    mem_cap: 192MiB\n    tasks: [translate]\n    speed_only: 16\n",
        "  - {method: coreinfer-loading, load: 0.7, compute: 0.4, slice: profile, down_layout: neurons}\n  - {method: selectinfer, load: 0.7, compute: 0.4, down_layout: neurons}\n  - {method: coreinfer-loading, load: 0.7, compute: 0.4}\n",
    );
    let cells = Experiment::parse(&yaml).unwrap().cells();
    let qa = |m: Method| cells.iter().filter(move |c| c.method == m && c.task == Task::Qa);
    let neurons = |c: &&Cell| c.prep.path("tiny").to_string_lossy().contains("neurons");
    let dynamic = qa(Method::CoreinferLoading).find(neurons).unwrap();
    let paper = qa(Method::Selectinfer).find(neurons).unwrap();
    // The same file as the paper's selection's cell: the slice keeps its static set
    // (delta 0.3), which decode then ignores.
    assert_eq!(dynamic.prep, paper.prep);
    assert_eq!(dynamic.prep.path("tiny"), Path::new("models/tiny.F16.qa-load0.7.neurons.gguf"));
    assert!(dynamic.no_static && !paper.no_static);
    assert_eq!((dynamic.compute, paper.compute), (Some((0.4, 0.2)), Some((0.4, 0.2))));
    // Without the key coreinfer-loading keeps its random slice.
    let random = qa(Method::CoreinferLoading).last().unwrap();
    assert!(matches!(random.prep, Prep::RandomSlice { load, static_share, .. } if load == 0.7 && static_share == 0.3));
    for (entry, why) in [
        ("{method: selectinfer, slice: profile}", "takes no slice"),
        ("{method: coreinfer-loading, slice: profile, seed: 2}", "takes no seed with slice: profile"),
        ("{method: coreinfer-loading, down_layout: neurons}", "takes no base or down_layout"),
        ("{method: coreinfer-loading, slice: random, importance: contribution}", "takes no importance"),
    ] {
        let e = err(&GOOD.replace("  - method: reference\n", &format!("  - method: reference\n  - {entry}\n")));
        assert!(e.contains(why), "{entry}: {e}");
    }
}
