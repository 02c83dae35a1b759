//! `selectinfer pair`: two runs' answers on the bundled qa evaluation examples,
//! compared with paired intervals. The scores are SQuAD's F1 of answers built
//! here (every reference, or none for half of the examples), so the values are
//! known without the metric code: 100 and 50.

mod common;

use std::path::Path;

use selectinfer::tasks::{read_examples, Split, Task};

fn write_outputs(path: &Path, rows: &[(String, String)]) {
    let lines: Vec<String> = rows.iter().map(|(id, out)| serde_json::json!({"id": id, "output": out}).to_string()).collect();
    std::fs::write(path, lines.join("\n")).unwrap();
}

/// The evaluation examples of the bundled qa file.
fn bundled_eval_examples() -> Vec<selectinfer::tasks::Example> {
    let examples = read_examples(&common::repo_root().join(Task::Qa.bundled_data()), Task::Qa).unwrap();
    Split::Eval.select(&examples).to_vec()
}

fn rows(o: &std::process::Output) -> Vec<serde_json::Value> {
    assert!(o.status.success(), "{}", common::text(o).1);
    common::text(o).0.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn pair_scores_both_runs_and_their_paired_difference() {
    let dir = tempfile::tempdir().unwrap();
    let eval = &bundled_eval_examples()[..40];
    // A answers every example with its first reference; B answers the even ones
    // so and the odd ones with nothing.
    let right: Vec<(String, String)> = eval.iter().map(|e| (e.id.clone(), e.references[0].clone())).collect();
    let half: Vec<(String, String)> = eval.iter().enumerate().map(|(i, e)| (e.id.clone(), if i % 2 == 0 { e.references[0].clone() } else { String::new() })).collect();
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    write_outputs(&a, &right);
    write_outputs(&b, &half);
    let (pa, pb) = (a.to_str().unwrap(), b.to_str().unwrap());

    let r = rows(&common::selectinfer(&["pair", pa, pb, "--task", "qa", "--json"]));
    assert_eq!(r.iter().map(|v| v["metric"].as_str().unwrap()).collect::<Vec<_>>(), ["EM", "F1"]);
    for v in &r {
        let f = |k: &str| v[k].as_f64().unwrap();
        assert_eq!((f("a"), f("b"), f("diff")), (100.0, 50.0, 50.0), "{v}");
        assert_eq!((f("a_lo"), f("a_hi")), (100.0, 100.0));
        assert!(f("diff_lo") > 0.0 && f("diff_hi") <= 100.0 && v["beyond_noise"] == true, "{v}");
        assert_eq!(v["examples"], 40);
    }
    // A run paired with itself differs by exactly 0.
    for v in rows(&common::selectinfer(&["pair", pb, pb, "--task", "qa", "--json"])) {
        assert_eq!((v["diff"].as_f64(), v["diff_lo"].as_f64(), v["diff_hi"].as_f64(), &v["beyond_noise"]), (Some(0.0), Some(0.0), Some(0.0), &serde_json::json!(false)));
    }
    // The table marks a difference beyond the noise.
    let (table, _) = common::text(&common::selectinfer(&["pair", pa, pb, "--task", "qa"]));
    let f1: Vec<&str> = table.lines().find(|l| l.starts_with("| F1 ")).expect("an F1 line").split('|').map(str::trim).collect();
    assert_eq!(&f1[1..3], ["F1", "100.0 [100.0, 100.0]"], "{table}");
    assert!(f1[3].starts_with("50.0 [") && f1[4].starts_with("+50.0 [") && f1[5] == "*", "{table}");

    // Other examples, another order, an id outside the evaluation split: refused.
    let c = dir.path().join("c.jsonl");
    write_outputs(&c, &right[..39]);
    common::assert_clean_failure(&["pair", pa, c.to_str().unwrap(), "--task", "qa"], "do not answer the same examples");
    let mut swapped = right.clone();
    swapped.swap(0, 1);
    write_outputs(&c, &swapped);
    common::assert_clean_failure(&["pair", pa, c.to_str().unwrap(), "--task", "qa"], "do not answer the same examples");
    let mut foreign = right.clone();
    foreign[3].0 = "no-such-id".into();
    write_outputs(&c, &foreign);
    common::assert_clean_failure(&["pair", c.to_str().unwrap(), c.to_str().unwrap(), "--task", "qa"], "example no-such-id is not in the evaluation split");
}

/// An id answered twice would count as two examples and narrow the intervals.
#[test]
fn pair_refuses_an_example_answered_twice() {
    let dir = tempfile::tempdir().unwrap();
    let eval = &bundled_eval_examples()[..4];
    let mut rows: Vec<(String, String)> = eval.iter().map(|e| (e.id.clone(), e.references[0].clone())).collect();
    rows.push(rows[0].clone());
    let a = dir.path().join("a.jsonl");
    write_outputs(&a, &rows);
    let pa = a.to_str().unwrap();
    common::assert_clean_failure(&["pair", pa, pa, "--task", "qa"], &format!("answers example {} more than once", eval[0].id));
}
