//! Tasks, their datasets, prompt templates and the profiling/evaluation split.
//!
//! Shared by the profiler and the evaluation harness so that both see the same
//! prompts: the templates live here, versioned by [`TEMPLATE_VERSION`], and so does
//! the one rule that keeps profiling and evaluation examples disjoint
//! ([`Split`]).
//!
//! Datasets are generic JSON Lines files: any file whose lines carry a task's
//! fields can be profiled or evaluated.
//!
//! | task        | fields read                                  |
//! |-------------|----------------------------------------------|
//! | `qa`        | `context`, `question`, `answers` (list), `id`? |
//! | `translate` | `src`, `ref`, `src_lang`?, `tgt_lang`?, `id`? |
//! | `summarize` | `document`, `summary`, `id`?                 |
//!
//! Translation prompts name the languages of each line's `src_lang` and `tgt_lang`
//! (ISO 639-1 codes, see [`language_name`]); a line without them is German to
//! English, as the bundled de-en file is, so the de-en prompt is the same with or
//! without the fields.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Version of the prompt templates below; recorded in profiles and results.
/// Bump it whenever a template changes.
pub const TEMPLATE_VERSION: &str = "1";

/// The paper's three task families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// Extractive question answering with context (SQuAD v1.1 / XQuAD format).
    Qa,
    /// Translation between the data's `src_lang` and `tgt_lang` (default German to English; WMT16 newstest2016).
    Translate,
    /// Single-document summarization (XSum).
    Summarize,
}

impl Task {
    /// All tasks, in a fixed order.
    pub const ALL: [Task; 3] = [Task::Qa, Task::Translate, Task::Summarize];

    /// The name used on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Task::Qa => "qa",
            Task::Translate => "translate",
            Task::Summarize => "summarize",
        }
    }

    /// Parses a task name.
    pub fn from_name(s: &str) -> Option<Task> {
        Task::ALL.into_iter().find(|t| t.name() == s)
    }

    /// The bundled dataset file of this task, relative to the repository root.
    pub fn bundled_data(self) -> &'static str {
        match self {
            Task::Qa => "data/qa_squad11dev_xquad_en_500.jsonl",
            Task::Translate => "data/wmt16_de_en_newstest2016_500.jsonl",
            Task::Summarize => "data/sum_xsum_test_200.jsonl",
        }
    }

    /// The bundled files the profiler reads for this task when no file is named:
    /// for translate every bundled language pair (de-en and cs-en), so that the
    /// default translate ranking serves translation in general, not one pair; for
    /// the other tasks the bundled file. Each file contributes its profiling split,
    /// and `profile merge` averages the datasets of a task.
    pub fn profiling_data(self) -> &'static [&'static str] {
        match self {
            Task::Qa => &["data/qa_squad11dev_xquad_en_500.jsonl"],
            Task::Translate => &["data/wmt16_de_en_newstest2016_500.jsonl", "data/wmt16_cs_en_newstest2016_500.jsonl"],
            Task::Summarize => &["data/sum_xsum_test_200.jsonl"],
        }
    }
}

impl fmt::Display for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One example of a task.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// `id` field, or `line<N>` when absent.
    pub id: String,
    /// The task-specific input.
    pub input: Input,
    /// Reference outputs (several for QA, one otherwise).
    pub references: Vec<String>,
}

/// What the model is given.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A passage and a question about it.
    Qa {
        /// Passage.
        context: String,
        /// Question.
        question: String,
    },
    /// A sentence to translate.
    Translate {
        /// Source text.
        src: String,
        /// Name of the source language, e.g. `German` (from `src_lang`).
        src_lang: &'static str,
        /// Name of the target language, e.g. `English` (from `tgt_lang`).
        tgt_lang: &'static str,
    },
    /// A document.
    Summarize {
        /// Document text.
        document: String,
    },
}

impl Example {
    /// The zero-shot prompt (template version [`TEMPLATE_VERSION`]): the paper's
    /// templates, with the passage added for extractive QA and a `Summary:` cue so
    /// that base models answer rather than continue the document.
    pub fn prompt(&self) -> String {
        match &self.input {
            Input::Qa { context, question } => format!("{context}\nQuestion: {question}\nAnswer:"),
            Input::Translate { src, src_lang, tgt_lang } => format!("{src_lang} phrase: {src}\n{tgt_lang} phrase:"),
            Input::Summarize { document } => format!("Summarize the following document:\n{document}\nSummary:"),
        }
    }
}

/// A solved example: its prompt followed by its first reference.
pub fn solved_example(ex: &Example) -> String {
    format!("{} {}", ex.prompt(), ex.references[0])
}

/// A task's evaluation text: every example solved (its prompt, a space, its first
/// reference; [`solved_example`], as k-shot examples are written), separated by
/// blank lines.
pub fn evaluation_text(examples: &[Example]) -> String {
    examples.iter().map(solved_example).collect::<Vec<_>>().join("\n\n")
}

/// ISO 639-1 codes of the WMT16 pairs (cs, de, ro, fi, ru, tr, en) and other
/// common languages, with the English names the translation prompt uses.
pub const LANGUAGES: [(&str, &str); 32] = [
    ("cs", "Czech"),
    ("de", "German"),
    ("ro", "Romanian"),
    ("fi", "Finnish"),
    ("ru", "Russian"),
    ("tr", "Turkish"),
    ("en", "English"),
    ("fr", "French"),
    ("es", "Spanish"),
    ("it", "Italian"),
    ("pt", "Portuguese"),
    ("nl", "Dutch"),
    ("pl", "Polish"),
    ("zh", "Chinese"),
    ("ja", "Japanese"),
    ("ko", "Korean"),
    ("ar", "Arabic"),
    ("hi", "Hindi"),
    ("uk", "Ukrainian"),
    ("sv", "Swedish"),
    ("da", "Danish"),
    ("no", "Norwegian"),
    ("hu", "Hungarian"),
    ("el", "Greek"),
    ("bg", "Bulgarian"),
    ("et", "Estonian"),
    ("lv", "Latvian"),
    ("lt", "Lithuanian"),
    ("sk", "Slovak"),
    ("sl", "Slovenian"),
    ("hr", "Croatian"),
    ("sr", "Serbian"),
];

/// The English name of an ISO 639-1 language code in [`LANGUAGES`] (case-insensitive).
pub fn language_name(code: &str) -> Option<&'static str> {
    LANGUAGES.iter().find(|(c, _)| c.eq_ignore_ascii_case(code)).map(|&(_, name)| name)
}

/// Errors from reading a dataset; each names the file and, where it applies, the line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// The file could not be read.
    #[error("cannot read dataset {path} (give its path with --data)")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A line is not a JSON object with the task's fields.
    #[error("{path}:{line}: {what}")]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        what: String,
    },
    /// The file has no examples.
    #[error("dataset {path} has no examples")]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// Reads every example of a JSON Lines file for `task`; blank lines are skipped.
pub fn read_examples(path: &Path, task: Task) -> Result<Vec<Example>, DataError> {
    // A bundled `data/...` path also works from outside the repository.
    let path = &crate::fsutil::bundled(path);
    let text = std::fs::read_to_string(path).map_err(|source| DataError::Io { path: path.to_path_buf(), source })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let err = |what: String| DataError::Line { path: path.to_path_buf(), line: i + 1, what };
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| err(format!("not valid JSON: {e}")))?;
        let field = |name: &str| -> Result<String, DataError> {
            v.get(name)
                .and_then(|f| f.as_str())
                .map(str::to_string)
                .ok_or_else(|| err(format!("{task} examples need a string field \"{name}\"")))
        };
        let id = v.get("id").and_then(|f| f.as_str()).map_or_else(|| format!("line{}", i + 1), str::to_string);
        let ex = match task {
            Task::Qa => {
                let answers: Vec<String> = match v.get("answers") {
                    Some(serde_json::Value::Array(a)) => a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect(),
                    Some(serde_json::Value::String(s)) => vec![s.clone()],
                    _ => Vec::new(),
                };
                if answers.is_empty() {
                    return Err(err("qa examples need \"answers\": a non-empty list of strings".into()));
                }
                Example { id, input: Input::Qa { context: field("context")?, question: field("question")? }, references: answers }
            }
            Task::Translate => {
                // A missing field keeps the bundled pair's language (de -> en).
                let lang = |name: &str, default: &str| -> Result<&'static str, DataError> {
                    let code = match v.get(name) {
                        None | Some(serde_json::Value::Null) => default,
                        Some(serde_json::Value::String(c)) => c.as_str(),
                        Some(_) => return Err(err(format!("\"{name}\" must be a language code string"))),
                    };
                    language_name(code).ok_or_else(|| {
                        let known: Vec<&str> = LANGUAGES.iter().map(|(c, _)| *c).collect();
                        err(format!("unknown language code {code:?} in \"{name}\" (known: {})", known.join(", ")))
                    })
                };
                let input = Input::Translate { src: field("src")?, src_lang: lang("src_lang", "de")?, tgt_lang: lang("tgt_lang", "en")? };
                Example { id, input, references: vec![field("ref")?] }
            }
            Task::Summarize => {
                Example { id, input: Input::Summarize { document: field("document")? }, references: vec![field("summary")?] }
            }
        };
        out.push(ex);
    }
    if out.is_empty() {
        return Err(DataError::Empty { path: path.to_path_buf() });
    }
    Ok(out)
}

/// Which part of a dataset a stage may use. Profiling and evaluation never share
/// an example: of a file with n examples, the first `min(200, n / 2)` are the
/// profiling split and the rest the evaluation split (500-example files: 200/300;
/// the 200-example XSum file: 100/100).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// Examples the profiler may see.
    Profile,
    /// Examples the evaluation may see.
    Eval,
    /// Every example (for files that are not bundled splits; use with care).
    All,
}

impl Split {
    /// Number of profiling examples in a file of `n`.
    pub fn profile_len(n: usize) -> usize {
        (n / 2).min(200)
    }

    /// The part of `examples` this split covers.
    pub fn select<T>(self, examples: &[T]) -> &[T] {
        let p = Split::profile_len(examples.len());
        match self {
            Split::Profile => &examples[..p],
            Split::Eval => &examples[p..],
            Split::All => examples,
        }
    }

    /// The name used on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Split::Profile => "profile",
            Split::Eval => "eval",
            Split::All => "all",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_are_disjoint_and_cover_the_file() {
        for n in [1usize, 2, 5, 200, 201, 500] {
            let v: Vec<usize> = (0..n).collect();
            let (p, e) = (Split::Profile.select(&v), Split::Eval.select(&v));
            assert_eq!(p.len() + e.len(), n);
            assert!(p.iter().all(|x| !e.contains(x)));
        }
        assert_eq!(Split::profile_len(500), 200);
        assert_eq!(Split::profile_len(200), 100);
    }

    #[test]
    fn bad_lines_name_their_line_number() {
        let dir = std::env::temp_dir().join(format!("si-tasks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.jsonl");
        std::fs::write(&p, "{\"src\":\"a\",\"ref\":\"b\"}\n\n{\"src\":\"a\"}\n").unwrap();
        let e = read_examples(&p, Task::Translate).unwrap_err().to_string();
        assert!(e.ends_with(":3: translate examples need a string field \"ref\""), "{e}");
        std::fs::write(&p, "{\"src\":\"a\",\"ref\":\"b\"}\nnot json\n").unwrap();
        assert!(read_examples(&p, Task::Translate).unwrap_err().to_string().contains(":2: not valid JSON"));
        std::fs::write(&p, "\n").unwrap();
        assert!(matches!(read_examples(&p, Task::Qa), Err(DataError::Empty { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn translation_prompts_name_the_data_languages() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        let lines = [
            r#"{"src":"Obama empfängt Netanyahu","ref":"r","src_lang":"de","tgt_lang":"en"}"#,
            r#"{"src":"Obama empfängt Netanyahu","ref":"r"}"#,
            r#"{"src":"Obama přijímá Netanjahua","ref":"r","src_lang":"cs","tgt_lang":"en"}"#,
            r#"{"src":"Obama receives Netanyahu","ref":"r","src_lang":"EN","tgt_lang":"ro"}"#,
        ];
        std::fs::write(&p, lines.join("\n")).unwrap();
        let prompts: Vec<Vec<u8>> = read_examples(&p, Task::Translate).unwrap().iter().map(|e| e.prompt().into_bytes()).collect();
        // The de-en prompt is byte for byte template version 1's, with or without the fields.
        assert_eq!(prompts[0], b"German phrase: Obama empf\xc3\xa4ngt Netanyahu\nEnglish phrase:".to_vec());
        assert_eq!(prompts[1], prompts[0]);
        assert_eq!(prompts[2], "Czech phrase: Obama přijímá Netanjahua\nEnglish phrase:".as_bytes());
        assert_eq!(prompts[3], b"English phrase: Obama receives Netanyahu\nRomanian phrase:".to_vec());
        assert_eq!(TEMPLATE_VERSION, "1");

        std::fs::write(&p, format!("{}\n{}\n", lines[0], r#"{"src":"a","ref":"b","src_lang":"xx","tgt_lang":"en"}"#)).unwrap();
        let e = read_examples(&p, Task::Translate).unwrap_err().to_string();
        assert!(e.contains(":2: unknown language code \"xx\" in \"src_lang\" (known: cs, de,"), "{e}");
        std::fs::write(&p, r#"{"src":"a","ref":"b","tgt_lang":3}"#).unwrap();
        let e = read_examples(&p, Task::Translate).unwrap_err().to_string();
        assert!(e.ends_with(":1: \"tgt_lang\" must be a language code string"), "{e}");
    }

    #[test]
    fn bundled_cs_en_file_is_czech_to_english() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let ex = read_examples(&root.join("data/wmt16_cs_en_newstest2016_500.jsonl"), Task::Translate).unwrap();
        assert_eq!(ex.len(), 500);
        assert!(ex.iter().all(|e| e.prompt().starts_with("Czech phrase: ") && e.prompt().ends_with("\nEnglish phrase:")));
        let de = read_examples(&root.join(Task::Translate.bundled_data()), Task::Translate).unwrap();
        assert!(de.iter().all(|e| e.prompt().starts_with("German phrase: ") && e.prompt().ends_with("\nEnglish phrase:")));
    }

    #[test]
    fn bundled_files_parse() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        for t in Task::ALL {
            let ex = read_examples(&root.join(t.bundled_data()), t).unwrap();
            assert!(ex.len() >= 200, "{t}");
            assert!(!ex[0].prompt().is_empty());
            // The evaluation file is profiled too, and every profiled file is the task's.
            assert_eq!(t.profiling_data()[0], t.bundled_data());
            for f in t.profiling_data() {
                assert!(read_examples(&root.join(f), t).unwrap().len() >= 200, "{f}");
            }
        }
        assert_eq!(Task::Translate.profiling_data().len(), 2);
    }
}
