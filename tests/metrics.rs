//! Task metrics against the reference implementations: every expected number in
//! `tests/fixtures/metrics/*.json` was computed by sacrebleu, rouge-score (with
//! NLTK's Porter stemmer) or the official SQuAD v1.1 evaluation functions; see
//! `tests/fixtures/metrics/make_fixtures.py` and the `versions` recorded in each file.

use std::path::Path;

use serde::Deserialize;

use selectinfer::eval::metrics::{
    corpus_bleu, corpus_chrf, porter_stem, rouge, rouge_max, rouge_mean, rouge_tokenize, squad_corpus,
    squad_exact_match, squad_f1, squad_normalize_answer, tokenize_13a, RougeScore, RougeScores,
};

fn fixture<T: for<'de> Deserialize<'de>>(name: &str) -> T {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/metrics").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn assert_close(what: &str, got: f64, want: f64, tol: f64) {
    assert!((got - want).abs() <= tol, "{what}: got {got}, reference {want} (tolerance {tol})");
}

// ---------------------------------------------------------------------------
// BLEU and chrF (sacrebleu)
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct BleuChrfFixture {
    corpora: Vec<Corpus>,
    tokenizer_13a: Vec<Tokenized>,
}

#[derive(Deserialize)]
struct Corpus {
    name: String,
    hypotheses: Vec<String>,
    references: Vec<Vec<String>>,
    bleu: BleuExpected,
    chrf: f64,
}

#[derive(Deserialize)]
struct BleuExpected {
    score: f64,
    counts: Vec<u64>,
    totals: Vec<u64>,
    precisions: Vec<f64>,
    bp: f64,
    sys_len: u64,
    ref_len: u64,
}

#[derive(Deserialize)]
struct Tokenized {
    input: String,
    tokens: String,
}

#[test]
fn tokenize_13a_matches_sacrebleu() {
    let f: BleuChrfFixture = fixture("bleu_chrf.json");
    assert!(f.tokenizer_13a.len() >= 60);
    for t in &f.tokenizer_13a {
        assert_eq!(tokenize_13a(&t.input), t.tokens, "input {:?}", t.input);
    }
}

#[test]
fn corpus_bleu_matches_sacrebleu() {
    let f: BleuChrfFixture = fixture("bleu_chrf.json");
    assert!(f.corpora.len() >= 30);
    for c in &f.corpora {
        let got = corpus_bleu(&c.hypotheses, &c.references).unwrap();
        let want = &c.bleu;
        assert_close(&format!("{} BLEU", c.name), got.score, want.score, 0.01);
        // Same arithmetic in the same order as sacrebleu, so in practice identical.
        assert_close(&format!("{} BLEU", c.name), got.score, want.score, 1e-9);
        assert_eq!(got.counts.as_slice(), want.counts, "{} counts", c.name);
        assert_eq!(got.totals.as_slice(), want.totals, "{} totals", c.name);
        assert_eq!((got.sys_len, got.ref_len), (want.sys_len, want.ref_len), "{} lengths", c.name);
        assert_close(&format!("{} BP", c.name), got.bp, want.bp, 1e-12);
        for (n, (g, w)) in got.precisions.iter().zip(&want.precisions).enumerate() {
            assert_close(&format!("{} precision {}", c.name, n + 1), *g, *w, 1e-9);
        }
    }
}

#[test]
fn corpus_chrf_matches_sacrebleu() {
    let f: BleuChrfFixture = fixture("bleu_chrf.json");
    for c in &f.corpora {
        let got = corpus_chrf(&c.hypotheses, &c.references).unwrap();
        assert_close(&format!("{} chrF", c.name), got, c.chrf, 0.01);
        assert_close(&format!("{} chrF", c.name), got, c.chrf, 1e-9);
    }
}

// ---------------------------------------------------------------------------
// ROUGE (rouge-score, use_stemmer=True)
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct RougeFixture {
    examples: Vec<RougeExample>,
    mean: RougeTriple,
    porter: Vec<(String, String)>,
}

#[derive(Deserialize)]
struct RougeExample {
    id: String,
    references: Vec<String>,
    prediction: String,
    reference_tokens: Vec<Vec<String>>,
    prediction_tokens: Vec<String>,
    scores: RougeTriple,
}

#[derive(Deserialize)]
struct RougeTriple {
    rouge1: RougeExpected,
    rouge2: RougeExpected,
    #[serde(rename = "rougeL")]
    rouge_l: RougeExpected,
}

#[derive(Deserialize)]
struct RougeExpected {
    precision: f64,
    recall: f64,
    fmeasure: f64,
}

fn assert_rouge(what: &str, got: &RougeScores, want: &RougeTriple, tol: f64) {
    let pairs: [(&str, &RougeScore, &RougeExpected); 3] = [
        ("rouge1", &got.rouge1, &want.rouge1),
        ("rouge2", &got.rouge2, &want.rouge2),
        ("rougeL", &got.rouge_l, &want.rouge_l),
    ];
    for (name, g, w) in pairs {
        assert_close(&format!("{what} {name} precision"), g.precision, w.precision, tol);
        assert_close(&format!("{what} {name} recall"), g.recall, w.recall, tol);
        assert_close(&format!("{what} {name} fmeasure"), g.fmeasure, w.fmeasure, tol);
    }
}

#[test]
fn porter_stem_matches_nltk() {
    let f: RougeFixture = fixture("rouge.json");
    assert!(f.porter.len() >= 1000);
    let wrong: Vec<String> = f
        .porter
        .iter()
        .filter(|(w, s)| porter_stem(w) != *s)
        .map(|(w, s)| format!("{w}: got {}, nltk {s}", porter_stem(w)))
        .collect();
    assert!(wrong.is_empty(), "{} of {} stems differ:\n{}", wrong.len(), f.porter.len(), wrong.join("\n"));
}

#[test]
fn rouge_tokenize_matches_rouge_score() {
    let f: RougeFixture = fixture("rouge.json");
    for e in &f.examples {
        assert_eq!(rouge_tokenize(&e.prediction), e.prediction_tokens, "{} prediction", e.id);
        for (r, toks) in e.references.iter().zip(&e.reference_tokens) {
            assert_eq!(rouge_tokenize(r), *toks, "{} reference", e.id);
        }
    }
}

#[test]
fn rouge_matches_rouge_score() {
    let f: RougeFixture = fixture("rouge.json");
    assert_eq!(f.examples.len(), 30);
    let mut all = Vec::new();
    for e in &f.examples {
        let got = if e.references.len() == 1 {
            rouge(&e.prediction, &e.references[0])
        } else {
            rouge_max(&e.prediction, &e.references).unwrap()
        };
        assert_rouge(&e.id, &got, &e.scores, 1e-4);
        // Same arithmetic as rouge-score, so in practice identical.
        assert_rouge(&e.id, &got, &e.scores, 1e-12);
        all.push(got);
    }
    assert!(f.examples.iter().any(|e| e.references.len() > 1), "score_multi is exercised");
    assert_rouge("mean", &rouge_mean(&all).unwrap(), &f.mean, 1e-4);
}

// ---------------------------------------------------------------------------
// SQuAD v1.1 (official evaluate-v1.1.py)
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct SquadFixture {
    examples: Vec<SquadExample>,
    corpus: SquadCorpusExpected,
}

#[derive(Deserialize)]
struct SquadExample {
    id: String,
    prediction: String,
    references: Vec<String>,
    exact_match: f64,
    f1: f64,
    normalized_prediction: String,
}

#[derive(Deserialize)]
struct SquadCorpusExpected {
    exact_match: f64,
    f1: f64,
}

#[test]
fn squad_matches_official_script() {
    let f: SquadFixture = fixture("squad.json");
    assert!(f.examples.len() >= 30);
    for e in &f.examples {
        assert_eq!(squad_normalize_answer(&e.prediction), e.normalized_prediction, "{} normalized", e.id);
        assert_close(&format!("{} EM", e.id), squad_exact_match(&e.prediction, &e.references), e.exact_match, 1e-9);
        assert_close(&format!("{} F1", e.id), squad_f1(&e.prediction, &e.references), e.f1, 1e-9);
    }
    let predictions: Vec<&str> = f.examples.iter().map(|e| e.prediction.as_str()).collect();
    let references: Vec<&[String]> = f.examples.iter().map(|e| e.references.as_slice()).collect();
    let corpus = squad_corpus(&predictions, &references).unwrap();
    assert_eq!(corpus.count, f.examples.len());
    assert_close("corpus EM", corpus.exact_match, f.corpus.exact_match, 1e-9);
    assert_close("corpus F1", corpus.f1, f.corpus.f1, 1e-9);
}
