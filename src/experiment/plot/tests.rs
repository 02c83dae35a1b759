//! Charts drawn from sample rows with plausible numbers for SmolLM2-135M.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::build::{charts, sweep_lines, tasks_chart};
use super::chart::Chart;
use super::rows::{primary_metric, primary_score, sanitize, MIB};
use super::style::{CHART_SIZE, PANELS_SIZE};
use super::{write_plots, PlotPoint};
use crate::eval::harness::EvalRow;
use crate::experiment::config::{Defaults, Share};

/// A scored (or speed-only) row with the settings that matter to the charts.
#[allow(clippy::too_many_arguments)]
fn row(
    method: &str,
    task: &str,
    load: f64,
    compute: Option<f64>,
    score: Option<f64>,
    decode: f64,
    weight_mib: f64,
    cap_mib: Option<f64>,
) -> EvalRow {
    let metric = |t: &str| if task == t { score } else { None };
    let sliced = matches!(method, "dense-loaded" | "selectinfer" | "random-loading");
    let mut r = EvalRow {
        timestamp: "2024-01-01T00:00:00Z".into(),
        git_commit: "unknown".into(),
        machine: "test".into(),
        model: "SmolLM2-135M-Instruct.F16.gguf".into(),
        method: method.into(),
        task: task.into(),
        data: format!("{task}.jsonl"),
        examples: 50,
        shots: 1,
        template_version: "1".into(),
        load,
        static_share: if sliced { 0.3 } else { 0.0 },
        compute,
        token_share: compute.map(|_| 0.5),
        em: metric("qa").map(|f| f - 10.0),
        em_lo: None,
        em_hi: None,
        f1: metric("qa"),
        f1_lo: None,
        f1_hi: None,
        bleu: metric("translate"),
        bleu_lo: None,
        bleu_hi: None,
        chrf: metric("translate").map(|b| b + 20.0),
        chrf_lo: None,
        chrf_hi: None,
        rouge1: metric("summarize").map(|r| r + 5.0),
        rouge1_lo: None,
        rouge1_hi: None,
        rouge2: metric("summarize").map(|r| r - 8.0),
        rouge2_lo: None,
        rouge2_hi: None,
        rouge_l: metric("summarize"),
        rouge_l_lo: None,
        rouge_l_hi: None,
        prefill_tps: decode * 8.0,
        decode_tps: decode,
        select_ms: compute.map(|_| 1.5),
        weight_bytes: (weight_mib * MIB) as u64,
        peak_rss_bytes: (weight_mib * MIB * 1.2) as u64,
        major_faults: 0,
        wall_s: 30.0,
        mem_cap_bytes: cap_mib.map(|c| (c * MIB) as u64),
        cap_max_usage_bytes: cap_mib.map(|c| (c * MIB) as u64),
        speed_only_tokens: score.is_none().then_some(64),
        synthetic: false,
        threads: 2,
        chat: false,
        variant: String::new(),
        prompt_cache: false,
    };
    // Intervals of +-12% around the primary score, as the harness writes them.
    if let (Some(m), Some(v)) = (primary_metric(&r), score) {
        r.set_interval(m, crate::eval::bootstrap::Interval { point: v, lo: 0.88 * v, hi: 1.12 * v });
    }
    r
}

/// Three tasks, every method at the defaults, a gamma sweep, a phi sweep and two
/// capped rows, with plausible numbers for SmolLM2-135M.
fn sample_rows() -> Vec<EvalRow> {
    let mut rows = Vec::new();
    // Weights: 135 MiB outside the FFNs plus gamma times 121.6 MiB of FFN.
    let mem = |load: f64| 135.0 + 121.6 * load;
    for (task, base) in [("qa", 42.0), ("translate", 18.0), ("summarize", 24.0)] {
        let s = |f: f64| Some(base * f);
        rows.push(row("reference", task, 1.0, None, s(1.0), 55.0, mem(1.0), None));
        rows.push(row("dense-loaded", task, 0.7, None, s(0.93), 61.0, mem(0.7), None));
        rows.push(row("selectinfer", task, 0.7, Some(0.4), s(0.9), 68.0, mem(0.7), None));
        rows.push(row("coreinfer", task, 1.0, Some(0.4), s(0.8), 64.0, mem(1.0), None));
        rows.push(row("coreinfer-loading", task, 0.7, Some(0.4), s(0.72), 67.0, mem(0.7), None));
        rows.push(row("random-loading", task, 0.7, Some(0.4), s(0.41), 67.5, mem(0.7), None));
        rows.push(row("q4_0", task, 1.0, None, s(0.86), 98.0, 87.0, None));
        rows.push(row("q4_k_m", task, 1.0, None, s(0.94), 90.0, 100.0, None));
        rows.push(row("q8_0", task, 1.0, None, s(0.99), 80.0, 139.0, None));
    }
    for load in [0.4, 0.5, 0.6, 0.8, 0.9] {
        let d = load - 0.7;
        rows.push(row(
            "dense-loaded",
            "translate",
            load,
            None,
            Some(18.0 * (0.93 + 0.22 * d)),
            61.0 - 12.0 * d,
            mem(load),
            None,
        ));
        rows.push(row(
            "selectinfer",
            "translate",
            load,
            Some(0.4),
            Some(18.0 * (0.9 + 0.3 * d)),
            68.0 - 2.0 * d,
            mem(load),
            None,
        ));
    }
    for phi in [0.3, 0.5, 0.6, 0.7] {
        let d = phi - 0.4;
        rows.push(row(
            "selectinfer",
            "qa",
            0.7,
            Some(phi),
            Some(42.0 * (0.9 + 0.25 * d)),
            68.0 - 30.0 * d,
            mem(0.7),
            None,
        ));
        rows.push(row(
            "coreinfer",
            "qa",
            1.0,
            Some(phi),
            Some(42.0 * (0.8 + 0.35 * d)),
            64.0 - 28.0 * d,
            mem(1.0),
            None,
        ));
    }
    rows.push(row("disk-offload", "qa", 1.0, None, None, 3.2, mem(1.0), Some(192.0)));
    rows.push(row("selectinfer", "qa", 0.7, Some(0.4), None, 66.0, mem(0.7), Some(192.0)));
    rows
}

fn defaults() -> Defaults {
    Defaults {
        load: Share(0.7),
        static_share: Share(0.3),
        compute: Share(0.4),
        token_share: Share(0.5),
    }
}

fn points(rows: &[EvalRow]) -> Vec<PlotPoint<'_>> {
    rows.iter()
        .map(|row| PlotPoint {
            model: "SmolLM2-135M",
            row,
        })
        .collect()
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.len() < 24 || &bytes[..8] != b"\x89PNG\r\n\x1a\n" || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    Some((be(&bytes[16..20]), be(&bytes[20..24])))
}

fn stems(files: &[PathBuf], ext: &str) -> Vec<String> {
    files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == ext))
        .filter_map(|f| f.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect()
}

#[test]
fn writes_every_chart_with_data() -> Result<()> {
    let rows = sample_rows();
    let dir = tempfile::tempdir()?;
    let files = write_plots(&points(&rows), &defaults(), dir.path())?;
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(files, sorted, "returned sorted");
    let expected = [
        "accuracy-vs-memory-qa",
        "accuracy-vs-memory-summarize",
        "accuracy-vs-memory-translate",
        "capped-speed",
        "gamma-sweep-translate",
        "phi-sweep-qa",
        "tasks",
    ];
    for ext in ["png", "svg"] {
        let mut got = stems(&files, ext);
        got.sort();
        assert_eq!(got, expected, "{ext} files");
    }
    for f in &files {
        let bytes = fs::read(f)?;
        assert!(f.exists() && !bytes.is_empty(), "{}", f.display());
        if f.extension().is_some_and(|e| e == "png") {
            let want = if f.to_string_lossy().contains("gamma-sweep") {
                PANELS_SIZE
            } else {
                CHART_SIZE
            };
            assert_eq!(png_size(&bytes), Some(want), "{}", f.display());
        } else {
            assert!(String::from_utf8_lossy(&bytes).contains("<svg"), "{}", f.display());
        }
    }
    let leftovers: Vec<_> = fs::read_dir(dir.path())?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    Ok(())
}

#[test]
fn skips_charts_without_data() -> Result<()> {
    // Only speed-only rows: no scored chart, no sweep, no per-task bars.
    let rows: Vec<EvalRow> = sample_rows().into_iter().filter(|r| r.mem_cap_bytes.is_some()).collect();
    let dir = tempfile::tempdir()?;
    let files = write_plots(&points(&rows), &defaults(), dir.path())?;
    assert_eq!(stems(&files, "png"), ["capped-speed"]);
    // A single gamma per line draws no gamma sweep.
    let rows: Vec<EvalRow> = sample_rows()
        .into_iter()
        .filter(|r| r.task != "translate" || r.load == 0.7 || r.load == 1.0)
        .collect();
    let charts = charts(&points(&rows), &defaults());
    assert!(!charts.iter().any(|c| c.stem().starts_with("gamma-sweep")));
    // Nothing at all writes nothing and creates no directory.
    let missing = dir.path().join("none");
    assert!(write_plots(&[], &defaults(), &missing)?.is_empty());
    assert!(!missing.exists());
    Ok(())
}

#[test]
fn several_models_get_suffixes_and_synthetic_titles() {
    let rows = sample_rows();
    let mut synth = row("selectinfer", "qa", 0.7, Some(0.4), None, 12.0, 1800.0, Some(512.0));
    synth.synthetic = true;
    let mut pts = points(&rows);
    pts.push(PlotPoint {
        model: "Llama 3.2/1B",
        row: &synth,
    });
    let charts = charts(&pts, &defaults());
    assert!(charts.iter().any(|c| c.stem() == "tasks-SmolLM2-135M"));
    assert!(charts.iter().any(|c| c.stem() == "phi-sweep-qa-SmolLM2-135M"));
    let capped = charts.iter().find(|c| c.stem() == "capped-speed").expect("capped chart");
    assert!(capped.title().contains("(synthetic weights)"), "{}", capped.title());
    assert!(charts
        .iter()
        .filter(|c| c.stem() != "capped-speed")
        .all(|c| !c.title().contains("synthetic")));
    assert_eq!(sanitize("Llama 3.2/1B"), "Llama_3.2_1B");
}

#[test]
fn sweeps_draw_only_lines_with_two_or_more_settings() {
    // phi sweep at gamma 0.7 (three phis) plus a lone gamma 0.4 point.
    let rows = [
        row("selectinfer", "qa", 0.7, Some(0.3), Some(10.0), 50.0, 220.0, None),
        row("selectinfer", "qa", 0.7, Some(0.4), Some(11.0), 45.0, 220.0, None),
        row("selectinfer", "qa", 0.7, Some(0.5), Some(12.0), 40.0, 220.0, None),
        row("selectinfer", "qa", 0.4, Some(0.4), Some(8.0), 55.0, 180.0, None),
    ];
    let refs: Vec<&EvalRow> = rows.iter().collect();
    let lines = sweep_lines(&refs, |r| Some(r.load), "γ", |r| r.compute.unwrap_or(f64::NAN), |r| r.decode_tps).expect("a phi sweep");
    let labels: Vec<&str> = lines.iter().map(|l| l.label.as_str()).collect();
    assert_eq!(labels, ["selectinfer γ=0.7"]);
    assert_eq!(lines[0].points.iter().map(|p| p.x).collect::<Vec<_>>(), [0.3, 0.4, 0.5]);
    // No line with two settings: no chart.
    assert!(sweep_lines(&refs[2..], |r| Some(r.load), "γ", |r| r.compute.unwrap_or(f64::NAN), |r| r.decode_tps).is_none());
}

#[test]
fn primary_score_picks_the_task_metric() {
    let qa = row("reference", "qa", 1.0, None, Some(40.0), 50.0, 256.0, None);
    assert_eq!(primary_score(&qa), Some(("F1", 40.0)));
    let tr = row("reference", "translate", 1.0, None, Some(17.5), 50.0, 256.0, None);
    assert_eq!(primary_score(&tr), Some(("BLEU", 17.5)));
    let su = row("reference", "summarize", 1.0, None, Some(22.0), 50.0, 256.0, None);
    assert_eq!(primary_score(&su), Some(("ROUGE-L", 22.0)));
    let speed = row("reference", "qa", 1.0, None, None, 50.0, 256.0, None);
    assert_eq!(primary_score(&speed), None);
}

#[test]
fn tasks_chart_takes_the_default_rows() {
    let rows = sample_rows();
    let rows_ref: Vec<&EvalRow> = rows.iter().collect();
    let Some(Chart::Bars(bars)) = tasks_chart("m", &rows_ref, &defaults(), "") else {
        panic!("no tasks chart")
    };
    assert_eq!(bars.groups, ["qa (F1)", "translate (BLEU)", "summarize (ROUGE-L)"]);
    let methods: Vec<&str> = bars.series.iter().map(|s| s.method.as_str()).collect();
    assert_eq!(
        methods,
        [
            "reference",
            "dense-loaded",
            "selectinfer",
            "coreinfer",
            "coreinfer-loading",
            "random-loading",
            "q4_0",
            "q4_k_m",
            "q8_0"
        ]
    );
    let si = &bars.series[2];
    assert_eq!(si.values[1], Some(18.0 * 0.9), "selectinfer translate at gamma 0.7, phi 0.4");
    let (lo, hi) = si.intervals[1].expect("the row's BLEU interval");
    assert!((lo - 0.88 * 18.0 * 0.9).abs() < 1e-9 && (hi - 1.12 * 18.0 * 0.9).abs() < 1e-9);
    assert!(bars.series.iter().all(|s| s.label == s.method), "all on 50 examples");

    // A method scored on fewer examples says so in its legend entry.
    let mut fewer = rows.clone();
    let mut disk = row("disk-offload", "qa", 1.0, None, Some(30.0), 3.0, 256.0, None);
    disk.examples = 10;
    fewer.push(disk);
    let fewer_ref: Vec<&EvalRow> = fewer.iter().collect();
    let Some(Chart::Bars(bars)) = tasks_chart("m", &fewer_ref, &defaults(), "") else {
        panic!("no tasks chart")
    };
    let labels: Vec<&str> = bars.series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels.last(), Some(&"disk-offload (10 ex.)"));
    assert_eq!(labels[0], "reference");

    // A selection variant is its own series after the paper's selection (not one
    // bar that shows whichever row came last), and a task scored on fewer examples
    // by every method marks no one.
    let mut variants = rows.clone();
    let mut v = variants.iter().find(|r| r.method == "selectinfer" && r.task == "translate" && r.compute == Some(0.4) && (r.load - 0.7).abs() < 1e-9).unwrap().clone();
    (v.variant, v.bleu) = ("compensation=mean".into(), Some(3.0));
    variants.push(v);
    variants.iter_mut().filter(|r| r.task == "summarize").for_each(|r| r.examples = 20);
    let variants_ref: Vec<&EvalRow> = variants.iter().collect();
    let Some(Chart::Bars(bars)) = tasks_chart("m", &variants_ref, &defaults(), "") else {
        panic!("no tasks chart")
    };
    let labels: Vec<&str> = bars.series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels[2..4], ["selectinfer", "selectinfer (compensation=mean)"]);
    assert_eq!((bars.series[2].values[1], bars.series[3].values[1]), (Some(18.0 * 0.9), Some(3.0)));
    assert_eq!((bars.series[2].shade, bars.series[3].shade), (0, 1));
    assert_eq!(bars.series[3].values[0], None, "the variant has no qa row");
    assert!(bars.series.iter().all(|s| !s.label.contains("ex.)")), "{labels:?}");
}

/// Renders the sample charts into /tmp/plots-preview for a look:
/// `cargo test --release --lib preview -- --ignored`.
#[test]
#[ignore = "writes sample charts to /tmp/plots-preview for a person to look at; run with --ignored"]
fn preview() -> Result<()> {
    let rows = sample_rows();
    let files = write_plots(&points(&rows), &defaults(), Path::new("/tmp/plots-preview"))?;
    assert!(!files.is_empty());
    // Two models, synthetic capped rows at two caps: suffixes and wrapped group names.
    let big: Vec<EvalRow> = [
        ("selectinfer", 512.0, 14.0),
        ("disk-offload", 512.0, 0.9),
        ("selectinfer", 1024.0, 15.5),
        ("disk-offload", 1024.0, 2.1),
    ]
    .iter()
    .map(|&(m, cap, tps)| {
        let mut r = row(m, "qa", 1.0, None, None, tps, 2357.0, Some(cap));
        r.synthetic = true;
        r
    })
    .collect();
    let mut pts = points(&rows);
    pts.extend(big.iter().map(|row| PlotPoint {
        model: "Llama-3.2-1B",
        row,
    }));
    write_plots(&pts, &defaults(), Path::new("/tmp/plots-preview/several-models"))?;
    Ok(())
}

/// A method's settings get distinct colours up to the number of shades (a sweep of
/// a dozen variants once drew all but two in one pale tint).
#[test]
fn a_methods_settings_get_distinct_colours() {
    let colors: Vec<(u8, u8, u8)> = (0..super::chart::SHADES.len() as u8)
        .map(|shade| {
            let s = super::chart::BarSeries { method: "selectinfer".into(), label: String::new(), shade, values: Vec::new(), intervals: Vec::new() };
            let plotters::style::RGBColor(r, g, b) = s.color();
            (r, g, b)
        })
        .collect();
    for (i, a) in colors.iter().enumerate() {
        for b in &colors[i + 1..] {
            let distance = [a.0.abs_diff(b.0), a.1.abs_diff(b.1), a.2.abs_diff(b.2)].into_iter().max().unwrap();
            assert!(distance >= 20, "shades {a:?} and {b:?} are too close: {colors:?}");
        }
    }
}
