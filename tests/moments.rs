//! Activation moments measured in several passes (a group of layers each, as a
//! 1.5B model's Gram matrices need) equal the one-pass file byte for byte.

mod common;

use selectinfer::synth::SynthArch;

#[test]
fn moments_in_one_pass_per_layer_equal_one_pass_for_all() {
    let dir = tempfile::tempdir().unwrap();
    let (model, profile, data) = common::translate_profile(dir.path(), SynthArch::Llama);
    let (m, d) = (model.to_str().unwrap(), data.to_str().unwrap());
    let measure = |budget: Option<&str>, into: &std::path::Path| {
        std::fs::create_dir_all(into).unwrap();
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_selectinfer"));
        c.args(["profile", "moments", "-m", m, "--task", "translate", "--data", d, "--ctx", "64", "--chunks", "3", "-t", "2", into.to_str().unwrap()]);
        if let Some(b) = budget {
            c.env(selectinfer::fit::moments::MOMENTS_PASS_BYTES_ENV, b);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", common::text(&o).1);
        common::text(&o).1
    };
    let (one, each) = (dir.path().join("one"), dir.path().join("each"));
    measure(None, &one);
    let log = measure(Some("1"), &each);
    assert!(log.contains("pass 2 of"), "one pass per layer: {log}");
    let file = |p: &std::path::Path| {
        let dir = p.join("moments");
        let entry = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap();
        std::fs::read(entry.path()).unwrap()
    };
    assert!(file(&one) == file(&each), "the multi-pass moments differ from the one-pass file");
    assert!(std::fs::read_dir(each.join("moments")).unwrap().count() == 1, "no temporary body left");
    let _ = profile;
}
