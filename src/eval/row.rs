//! One results CSV row per evaluation cell ([`EvalRow`]), and the CSV file that
//! holds them: appended atomically, read back with columns added since the file
//! was written taking their defaults.

use std::path::Path;

use anyhow::Context;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::bootstrap::{Interval, Metric};

/// One CSV row.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct EvalRow {
    /// UTC time the row was written.
    pub timestamp: String,
    /// Commit of the selectinfer binary that wrote the row, embedded at build time
    /// (`-dirty` with uncommitted source changes; "unknown" outside git).
    pub git_commit: String,
    /// CPU model and cores.
    pub machine: String,
    /// Model file name.
    pub model: String,
    /// Method.
    pub method: String,
    /// Task.
    pub task: String,
    /// Dataset file name.
    pub data: String,
    /// Examples scored.
    pub examples: usize,
    /// k-shot examples per prompt.
    pub shots: usize,
    /// Template version.
    pub template_version: String,
    /// gamma of the file (1 when not sliced).
    pub load: f64,
    /// delta of the file (0 when not sliced or --no-static).
    pub static_share: f64,
    /// phi (empty: dense).
    pub compute: Option<f64>,
    /// alpha (empty: dense).
    pub token_share: Option<f64>,
    /// SQuAD exact match (0-100).
    pub em: Option<f64>,
    /// Lower end of the 95% bootstrap interval of `em` (empty in rows written
    /// before intervals existed).
    #[serde(default)]
    pub em_lo: Option<f64>,
    /// Upper end of that interval.
    #[serde(default)]
    pub em_hi: Option<f64>,
    /// SQuAD F1 (0-100).
    pub f1: Option<f64>,
    /// Lower end of the 95% bootstrap interval of `f1` (empty in rows written
    /// before intervals existed).
    #[serde(default)]
    pub f1_lo: Option<f64>,
    /// Upper end of that interval.
    #[serde(default)]
    pub f1_hi: Option<f64>,
    /// sacrebleu BLEU.
    pub bleu: Option<f64>,
    /// Lower end of the 95% bootstrap interval of `bleu` (empty in rows written
    /// before intervals existed).
    #[serde(default)]
    pub bleu_lo: Option<f64>,
    /// Upper end of that interval.
    #[serde(default)]
    pub bleu_hi: Option<f64>,
    /// sacrebleu chrF.
    pub chrf: Option<f64>,
    /// Lower end of the 95% bootstrap interval of `chrf` (empty in rows written
    /// before intervals existed).
    #[serde(default)]
    pub chrf_lo: Option<f64>,
    /// Upper end of that interval.
    #[serde(default)]
    pub chrf_hi: Option<f64>,
    /// ROUGE-1 F (0-100).
    pub rouge1: Option<f64>,
    /// Lower end of the 95% bootstrap interval of `rouge1` (empty in rows written
    /// before intervals existed).
    #[serde(default)]
    pub rouge1_lo: Option<f64>,
    /// Upper end of that interval.
    #[serde(default)]
    pub rouge1_hi: Option<f64>,
    /// ROUGE-2 F (0-100).
    pub rouge2: Option<f64>,
    /// Lower end of the 95% bootstrap interval of `rouge2` (empty in rows written
    /// before intervals existed).
    #[serde(default)]
    pub rouge2_lo: Option<f64>,
    /// Upper end of that interval.
    #[serde(default)]
    pub rouge2_hi: Option<f64>,
    /// ROUGE-L F (0-100).
    pub rouge_l: Option<f64>,
    /// Lower end of the 95% bootstrap interval of `rouge_l` (empty in rows written
    /// before intervals existed).
    #[serde(default)]
    pub rouge_l_lo: Option<f64>,
    /// Upper end of that interval.
    #[serde(default)]
    pub rouge_l_hi: Option<f64>,
    /// Median prompt tok/s.
    pub prefill_tps: f64,
    /// Median decode tok/s.
    pub decode_tps: f64,
    /// Median per-prompt time to choose the computed neurons and gather their
    /// weights, in ms (empty: no selective computation, or a row from before).
    #[serde(default)]
    pub select_ms: Option<f64>,
    /// Tensor bytes of the file.
    pub weight_bytes: u64,
    /// Peak resident bytes of the process.
    pub peak_rss_bytes: u64,
    /// Major page faults during the run.
    pub major_faults: u64,
    /// Wall seconds of the run.
    pub wall_s: f64,
    /// Memory cap of the run's memory group (empty: none).
    pub mem_cap_bytes: Option<u64>,
    /// Most bytes the memory group was charged, page cache included (empty: no cap).
    pub cap_max_usage_bytes: Option<u64>,
    /// Tokens generated per prompt in a speed-only run (empty: scored run).
    pub speed_only_tokens: Option<usize>,
    /// The model has random (synthetic) weights: speed and memory only.
    pub synthetic: bool,
    /// CPU threads.
    pub threads: i32,
    /// Prompts were wrapped in the model's chat template (`--chat`). Files written
    /// before this column existed read as `false`, which is what they ran.
    #[serde(default)]
    pub chat: bool,
    /// Selection variant beyond the paper's ([`super::harness::variant_label`]; empty
    /// for the paper's, and in files written before this column).
    #[serde(default)]
    pub variant: String,
    /// Prompts reused the KV cache and votes of the prefix they share with the
    /// prompt before (`--prompt-cache`; [`crate::compute::prompt_cache`]): equal to
    /// a run without it up to rounding. `false` in files written before this column.
    #[serde(default)]
    pub prompt_cache: bool,
}

impl EvalRow {
    /// The value of a score column.
    pub fn score(&self, m: Metric) -> Option<f64> {
        match m {
            Metric::Em => self.em,
            Metric::F1 => self.f1,
            Metric::Bleu => self.bleu,
            Metric::Chrf => self.chrf,
            Metric::Rouge1 => self.rouge1,
            Metric::Rouge2 => self.rouge2,
            Metric::RougeL => self.rouge_l,
        }
    }

    /// A score with its 95% interval, where the row has both.
    pub fn interval(&self, m: Metric) -> Option<Interval> {
        let (lo, hi) = match m {
            Metric::Em => (self.em_lo, self.em_hi),
            Metric::F1 => (self.f1_lo, self.f1_hi),
            Metric::Bleu => (self.bleu_lo, self.bleu_hi),
            Metric::Chrf => (self.chrf_lo, self.chrf_hi),
            Metric::Rouge1 => (self.rouge1_lo, self.rouge1_hi),
            Metric::Rouge2 => (self.rouge2_lo, self.rouge2_hi),
            Metric::RougeL => (self.rouge_l_lo, self.rouge_l_hi),
        };
        Some(Interval { point: self.score(m)?, lo: lo?, hi: hi? })
    }

    /// Sets a score column and its interval columns.
    pub fn set_interval(&mut self, m: Metric, iv: Interval) {
        let (v, lo, hi) = match m {
            Metric::Em => (&mut self.em, &mut self.em_lo, &mut self.em_hi),
            Metric::F1 => (&mut self.f1, &mut self.f1_lo, &mut self.f1_hi),
            Metric::Bleu => (&mut self.bleu, &mut self.bleu_lo, &mut self.bleu_hi),
            Metric::Chrf => (&mut self.chrf, &mut self.chrf_lo, &mut self.chrf_hi),
            Metric::Rouge1 => (&mut self.rouge1, &mut self.rouge1_lo, &mut self.rouge1_hi),
            Metric::Rouge2 => (&mut self.rouge2, &mut self.rouge2_lo, &mut self.rouge2_hi),
            Metric::RougeL => (&mut self.rouge_l, &mut self.rouge_l_lo, &mut self.rouge_l_hi),
        };
        (*v, *lo, *hi) = (Some(iv.point), Some(iv.lo), Some(iv.hi));
    }
}

/// Appends `row` to the CSV file at `path` (writing the header if the file is new)
/// through a temporary copy, so that a crash never leaves a half-written row.
/// A file written with an older set of columns is rewritten with the current
/// header, its rows filled with the new columns' defaults, so one file never
/// mixes two layouts.
pub fn append_row<T: Serialize + DeserializeOwned>(path: &Path, row: &T) -> anyhow::Result<()> {
    let existing = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    // One serialization gives both the current header and the new record.
    let mut w = csv::Writer::from_writer(Vec::new());
    w.serialize(row)?;
    let fresh = w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?;
    let header_end = fresh.iter().position(|&b| b == b'\n').map_or(fresh.len(), |i| i + 1);
    let (header, record) = fresh.split_at(header_end);
    let bytes = if existing.is_empty() {
        fresh
    } else if existing.starts_with(header) {
        let mut bytes = existing;
        bytes.extend_from_slice(record);
        bytes
    } else {
        let rows: Vec<T> = parse_rows(&existing, path)?;
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in rows.iter().chain([row]) {
            w.serialize(r)?;
        }
        w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    crate::fsutil::write_atomic(path, &bytes).with_context(|| format!("writing {}", path.display()))
}

/// The rows of a results CSV's contents (`path` names it in errors). Columns added
/// since the file was written take their defaults.
pub fn parse_rows<T: DeserializeOwned>(bytes: &[u8], path: &Path) -> anyhow::Result<Vec<T>> {
    csv::Reader::from_reader(bytes)
        .deserialize()
        .enumerate()
        .map(|(i, r)| r.with_context(|| format!("{}: row {} does not have the expected columns", path.display(), i + 2)))
        .collect()
}

#[cfg(test)]
/// A results file from before the `chat` column.
pub(crate) const OLD_LAYOUT: &str = "timestamp,git_commit,machine,model,method,task,data,examples,shots,template_version,load,static_share,compute,token_share,em,f1,bleu,chrf,rouge1,rouge2,rouge_l,prefill_tps,decode_tps,weight_bytes,peak_rss_bytes,major_faults,wall_s,mem_cap_bytes,cap_max_usage_bytes,speed_only_tokens,synthetic,threads
2026-11-30T20:28:49Z,3db704b,cpu x2,m.gguf,reference,qa,qa.jsonl,12,1,1,1.0,0.0,,,0.0,2.0,,,,,,260.7,32.7,269100288,359641088,0,26.1,,,,false,2
";

#[cfg(test)]
mod tests {
    use super::*;


    #[test]
    fn appending_to_an_older_layout_rewrites_the_file_with_the_current_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.csv");
        std::fs::write(&path, OLD_LAYOUT).unwrap();
        let mut row: EvalRow = csv::Reader::from_reader(OLD_LAYOUT.as_bytes()).deserialize().next().unwrap().unwrap();
        assert!(!row.chat, "a missing chat column reads as false");
        row.chat = true;
        row.f1 = Some(5.0);
        append_row(&path, &row).unwrap();
        append_row(&path, &row).unwrap();

        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].ends_with(",threads,chat,variant,prompt_cache"), "{}", lines[0]);
        assert!(lines[0].contains(",em,em_lo,em_hi,f1,f1_lo,f1_hi,") && lines[0].contains(",decode_tps,select_ms,"), "{}", lines[0]);
        assert!(lines[1].ends_with(",false,2,false,,false"), "{}", lines[1]);
        assert!(lines[2].ends_with(",false,2,true,,false"), "{}", lines[2]);
        assert_eq!(lines[2], lines[3]);
        let rows: Vec<EvalRow> = csv::Reader::from_reader(text.as_bytes()).deserialize().map(Result::unwrap).collect();
        assert_eq!(rows.iter().map(|r| (r.chat, r.f1)).collect::<Vec<_>>(), [(false, Some(2.0)), (true, Some(5.0)), (true, Some(5.0))]);
        assert!(rows.iter().all(|r| r.f1_lo.is_none() && r.select_ms.is_none() && !r.prompt_cache), "the new columns read as empty");
    }

    #[test]
    fn intervals_and_selection_time_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.csv");
        let mut row: EvalRow = csv::Reader::from_reader(OLD_LAYOUT.as_bytes()).deserialize().next().unwrap().unwrap();
        assert_eq!(row.interval(Metric::F1), None, "no interval in an old row");
        row.set_interval(Metric::F1, Interval { point: 35.3, lo: 30.1, hi: 40.2 });
        row.set_interval(Metric::Bleu, Interval { point: 17.8, lo: 14.0, hi: 21.5 });
        row.select_ms = Some(2.5);
        append_row(&path, &row).unwrap();
        let back: Vec<EvalRow> = parse_rows(&std::fs::read(&path).unwrap(), &path).unwrap();
        assert_eq!(back[0].interval(Metric::F1), Some(Interval { point: 35.3, lo: 30.1, hi: 40.2 }));
        assert_eq!((back[0].bleu, back[0].bleu_lo, back[0].bleu_hi), (Some(17.8), Some(14.0), Some(21.5)));
        assert_eq!((back[0].score(Metric::Em), back[0].interval(Metric::Em)), (Some(0.0), None));
        assert_eq!(back[0].select_ms, Some(2.5));
    }
}
