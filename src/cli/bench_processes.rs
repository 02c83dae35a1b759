//! `selectinfer bench --processes` / `--stock`: every repetition of every setting in
//! its own process, round-robin, so that each setting's peak resident memory is its
//! own (a process's peak cannot be reset between models sharing it), and stock
//! llama.cpp (its independent client, `scripts/stock/stock_bench.c`) is timed in the
//! same run as selectinfer, on the same prompt.
//!
//! The children are this binary again (`bench ... --only-setting I`, one
//! repetition, one JSON line) and `stock_bench bench -m FILE -p P -n G -r 1 -t T
//! --text PROMPT_FILE`; the parent reads each child's peak RSS from the kernel
//! (`wait4`), takes medians, and computes speedups over the first setting.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

use super::bench::{BenchArgs, BenchRecord, Spec};
use crate::fsutil::os::ChildUsage;
use crate::output::median;

/// Times `specs`, each repetition a child process, round-robin.
pub(super) fn run(a: &BenchArgs, specs: &[Spec], text: &str) -> anyhow::Result<Vec<BenchRecord>> {
    let exe = std::env::current_exe().context("finding this program to run the benchmark's children")?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Stock llama.cpp's client reads its prompt from a file: the same text as ours.
    let prompt_file = match &a.stock {
        Some(_) => Some(PromptFile::write(text)?),
        None => None,
    };
    let mut runs: Vec<Vec<(BenchRecord, ChildUsage)>> = vec![Vec::new(); specs.len()];
    for rep in 0..a.reps {
        for (i, sp) in specs.iter().enumerate() {
            let mut cmd = if sp.stock {
                let stock = a.stock.as_ref().expect("stock settings come from --stock");
                let mut c = Command::new(stock);
                c.arg("bench").arg("-m").arg(&sp.file);
                c.args(["-p", &a.prompt_tokens.to_string(), "-n", &a.gen.to_string(), "-r", "1", "-t", &a.threads.get().to_string()]);
                c.arg("--text").arg(&prompt_file.as_ref().expect("made with --stock").0);
                c
            } else {
                let mut c = Command::new(&exe);
                c.args(&args).args(["--only-setting", &i.to_string()]);
                c
            };
            let (out, used) = child_output(&mut cmd).with_context(|| format!("setting {} ({}), repetition {}", i + 1, describe(sp), rep + 1))?;
            let rec = if sp.stock { stock_record(a, sp, &out)? } else { serde_json::from_str(out.trim()).with_context(|| format!("reading the child's record: {out}"))? };
            runs[i].push((rec, used));
        }
        if a.format() == crate::output::record::Format::Md {
            eprintln!("bench: repetition {} of {} done ({} processes)", rep + 1, a.reps, specs.len());
        }
    }
    let mut records: Vec<BenchRecord> = runs
        .into_iter()
        .map(|reps| {
            let mut r = reps[0].0.clone();
            r.prefill_tps = median(reps.iter().map(|(r, _)| r.prefill_tps).collect());
            r.decode_tps = median(reps.iter().map(|(r, _)| r.decode_tps).collect());
            r.select_ms = median(reps.iter().map(|(r, _)| r.select_ms).collect());
            r.peak_rss_bytes = Some(median(reps.iter().map(|(_, u)| u.peak_rss_bytes as f64).collect()) as u64);
            r.major_faults = Some(median(reps.iter().map(|(_, u)| u.major_faults as f64).collect()) as u64);
            let med = |f: fn(&BenchRecord) -> Option<u64>| reps.iter().map(|(r, _)| f(r)).collect::<Option<Vec<u64>>>().map(|v| median(v.into_iter().map(|b| b as f64).collect()) as u64);
            (r.rss_bytes, r.rss_file_bytes, r.rss_anon_bytes) = (med(|r| r.rss_bytes), med(|r| r.rss_file_bytes), med(|r| r.rss_anon_bytes));
            r.reps = reps.len();
            r
        })
        .collect();
    let (base_tps, base_bytes) = (records[0].decode_tps, records[0].bytes_per_token);
    for r in &mut records {
        r.speedup = r.decode_tps / base_tps;
        r.ideal_speedup = base_bytes as f64 / r.bytes_per_token.max(1) as f64;
    }
    Ok(records)
}

fn describe(sp: &Spec) -> String {
    let engine = if sp.stock { "stock llama.cpp" } else { "selectinfer" };
    let share = match (sp.dense, sp.repack) {
        (true, true) => "dense".to_string(),
        (true, false) => "dense, no repacking".to_string(),
        (false, true) => format!("phi {}", sp.phi),
        (false, false) => format!("phi {}, no repacking", sp.phi),
    };
    format!("{engine}, {}, {share}", sp.file.display())
}

/// Runs `cmd`, returning its standard output and what the kernel counted of it; a
/// failed child is an error carrying the end of its standard error.
fn child_output(cmd: &mut Command) -> anyhow::Result<(String, crate::fsutil::os::ChildUsage)> {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().with_context(|| format!("starting {:?}", cmd.get_program()))?;
    // Both pipes are read on threads so that neither can fill up and block the child.
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).map(|_| s)
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let (status, used) = crate::fsutil::os::wait_with_usage(&mut child)?;
    let (out, err) = (out.join().expect("reader thread")?, err.join().expect("reader thread"));
    if !status.success() {
        let tail: Vec<&str> = err.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect();
        bail!("{:?} failed ({status}): {}", cmd.get_program(), tail.join(" / "));
    }
    Ok((out, used))
}

/// A stock llama.cpp repetition (one JSON line of `stock_bench bench`) as a record.
fn stock_record(a: &BenchArgs, sp: &Spec, out: &str) -> anyhow::Result<BenchRecord> {
    let line = out.lines().find(|l| l.trim_start().starts_with('{')).with_context(|| format!("stock_bench printed no record: {out}"))?;
    let v: serde_json::Value = serde_json::from_str(line).with_context(|| format!("reading stock_bench's record: {line}"))?;
    let num = |k: &str| v.get(k).and_then(serde_json::Value::as_f64).with_context(|| format!("stock_bench's record has no {k}: {line}"));
    let g = crate::gguf::GgufFile::read(&sp.file)?;
    let plan = crate::compute::ComputePlan::dense(crate::model::ModelInfo::from_gguf(&g)?.n_layer);
    Ok(BenchRecord {
        engine: "stock llama.cpp".into(),
        model: sp.file.display().to_string(),
        compute: 1.0,
        dense: true,
        prefill_tps: num("prefill_tps")?,
        decode_tps: num("decode_tps")?,
        speedup: 1.0,
        ideal_speedup: 1.0,
        bytes_per_token: super::bench::bytes_per_token(&g, &plan, None),
        select_ms: 0.0,
        layout: "dense".into(),
        weight_bytes: crate::model::ModelInfo::from_gguf(&g)?.total_bytes,
        copy_bytes: 0,
        computed_neurons: 0,
        loaded_neurons: 0,
        reps: 1,
        prompt_tokens: a.prompt_tokens,
        gen_tokens: a.gen,
        threads: a.threads.get(),
        mmap: true,
        peak_rss_bytes: None,
        repack: true,
        mem_cap_bytes: None,
        major_faults: None,
        rss_bytes: None,
        rss_file_bytes: None,
        rss_anon_bytes: None,
    })
}

/// The prompt text in a file of its own for stock llama.cpp's client, removed when
/// the run ends (also on an error).
struct PromptFile(PathBuf);

impl PromptFile {
    fn write(text: &str) -> anyhow::Result<PromptFile> {
        let path = std::env::temp_dir().join(format!("selectinfer-bench-prompt-{}.txt", std::process::id()));
        std::fs::write(&path, text).with_context(|| format!("writing the benchmark prompt to {}", path.display()))?;
        Ok(PromptFile(path))
    }
}

impl Drop for PromptFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
