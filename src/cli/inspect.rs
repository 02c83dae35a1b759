//! `selectinfer inspect MODEL`.

use std::path::PathBuf;

use anyhow::Context;

use crate::model::ModelInfo;
use crate::select::SliceMeta;

/// What `inspect --json` prints: the model facts, and the selection of a sliced file.
#[derive(serde::Serialize)]
struct InspectRecord<'a> {
    #[serde(flatten)]
    info: &'a ModelInfo,
    selection: Option<&'a Selection>,
    /// Every tensor's place in the file (`--tensors` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    tensors: Option<Vec<TensorPlace>>,
}

/// Where a tensor's data lies in the file: what a tool that maps file offsets back
/// to tensors (page faults, `/proc/PID/pagemap`) needs.
#[derive(serde::Serialize)]
struct TensorPlace {
    name: String,
    #[serde(rename = "type")]
    ty: String,
    dims: Vec<u64>,
    /// Offset of the data from the start of the file.
    file_offset: u64,
    bytes: u64,
}

fn tensor_places(g: &crate::gguf::GgufFile) -> Vec<TensorPlace> {
    g.tensors
        .iter()
        .map(|t| TensorPlace { name: t.name.clone(), ty: t.ty.name(), dims: t.dims.clone(), file_offset: g.data_offset + t.offset, bytes: t.n_bytes().unwrap_or(0) })
        .collect()
}

/// A sliced file's selection with the bytes it saves.
#[derive(serde::Serialize)]
struct Selection {
    #[serde(flatten)]
    meta: SliceMeta,
    ffn_bytes_saved: u64,
    ffn_saved_pct: f64,
}

impl Selection {
    fn new(meta: SliceMeta, info: &ModelInfo) -> Selection {
        let saved = meta.source_ffn_bytes.saturating_sub(info.ffn_bytes);
        let pct = 100.0 * saved as f64 / meta.source_ffn_bytes.max(1) as f64;
        Selection { meta, ffn_bytes_saved: saved, ffn_saved_pct: pct }
    }
}
use crate::output::{format_bytes, Table};

/// Arguments of `inspect`.
#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// GGUF model file.
    pub model: PathBuf,
    #[command(flatten)]
    pub json: super::opts::JsonArg,
    /// Also list every metadata key with its value (long arrays shortened).
    #[arg(long)]
    pub metadata: bool,
    /// Also list every tensor: name, type, dimensions, offset of its data in the
    /// file and its bytes.
    #[arg(long)]
    pub tensors: bool,
}

pub fn run(args: InspectArgs) -> anyhow::Result<()> {
    let gguf = crate::gguf::GgufFile::read(&args.model).with_context(|| format!("cannot inspect {}", args.model.display()))?;
    let info = ModelInfo::from_gguf(&gguf).with_context(|| format!("cannot inspect {}", args.model.display()))?;
    let selection = SliceMeta::from_gguf(&gguf)?.map(|m| Selection::new(m, &info));
    if args.json.json {
        let tensors = args.tensors.then(|| tensor_places(&gguf));
        println!("{}", serde_json::to_string_pretty(&InspectRecord { info: &info, selection: selection.as_ref(), tensors })?);
        return Ok(());
    }
    let n_ff = if info.n_ff.iter().all(|&n| n == info.n_ff[0]) {
        format!("{} (every layer)", info.n_ff.first().copied().unwrap_or(0))
    } else {
        info.n_ff.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
    };
    let pct = |b: u64| if info.total_bytes > 0 { 100.0 * b as f64 / info.total_bytes as f64 } else { 0.0 };
    let mut t = Table::new(["field", "value"]);
    t.row(["model", info.name.as_deref().unwrap_or("-")]);
    t.row(["file", &format!("{} ({})", args.model.display(), format_bytes(info.file_size))]);
    t.row(["architecture", &info.architecture]);
    t.row(["layers", &info.n_layer.to_string()]);
    t.row(["n_embd", &info.n_embd.to_string()]);
    t.row(["n_ff", &n_ff]);
    let act = info.ffn_activation.map_or("unsupported (no gated FFN known)".to_string(), |a| format!("{} (graph node {})", a.label(), a.node_name()));
    t.row(["ffn activation", &act]);
    t.row(["vocab", &info.n_vocab.map_or("-".into(), |v| v.to_string())]);
    t.row(["ffn weight types", &info.ffn_types.join(", ")]);
    t.row(["weights total", &format_bytes(info.total_bytes)]);
    t.row(["weights ffn", &format!("{} ({:.1}%)", format_bytes(info.ffn_bytes), pct(info.ffn_bytes))]);
    t.row(["weights non-ffn", &format!("{} ({:.1}%)", format_bytes(info.non_ffn_bytes), pct(info.non_ffn_bytes))]);
    if let Some(sel) = &selection {
        let m = &sel.meta;
        let how = match (&m.task, m.random_seed) {
            (Some(task), _) => format!("profile, base task {task}"),
            (None, Some(seed)) => format!("random (seed {seed})"),
            _ => m.selection.clone(),
        };
        t.row(["selection", &how]);
        t.row(["load (gamma) / static (delta)", &format!("{} / {}", m.load, m.static_share)]);
        t.row(["sparsified layers", &format!("{}..{} (source n_ff {})", m.layer_start, m.layer_end, m.source_n_ff.first().copied().unwrap_or(0))]);
        t.row(["ffn bytes saved", &format!("{} of {} ({:.1}%)", format_bytes(sel.ffn_bytes_saved), format_bytes(m.source_ffn_bytes), sel.ffn_saved_pct)]);
        t.row(["source sha256", &m.source_sha256]);
    }
    print!("{}", t.to_markdown());
    println!();
    let mut types = Table::new(["type", "tensors", "bytes"]);
    for tb in &info.tensor_types {
        types.row([tb.ty.clone(), tb.count.to_string(), format_bytes(tb.bytes)]);
    }
    print!("{}", types.to_markdown());
    if args.metadata {
        let g = crate::gguf::GgufFile::read(&args.model)?;
        println!();
        let mut kv = Table::new(["key", "value"]);
        for (k, v) in &g.metadata {
            kv.row([k.clone(), crate::gguf::summarize_value(v)]);
        }
        print!("{}", kv.to_markdown());
    }
    if args.tensors {
        println!();
        let mut ts = Table::new(["tensor", "type", "dims", "file offset", "bytes"]);
        for p in tensor_places(&gguf) {
            ts.row([p.name, p.ty, format!("{:?}", p.dims), p.file_offset.to_string(), p.bytes.to_string()]);
        }
        print!("{}", ts.to_markdown());
    }
    Ok(())
}
