//! The documentation's links: every relative link in README.md and docs/*.md names
//! a file of the repository, and every `#anchor` a heading of the file it points to.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown file under docs/.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![root().join("README.md")];
    let mut dirs = vec![root().join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                docs.push(path);
            }
        }
    }
    docs.sort();
    docs
}

/// The text outside fenced code blocks and inline code spans, where links are links.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop inline code: split at backticks and keep the even pieces.
        for (i, piece) in line.split('`').enumerate() {
            if i % 2 == 0 {
                out.push_str(piece);
            }
        }
        out.push('\n');
    }
    out
}

/// The targets of the inline links `[text](target)` and images `![alt](target)`.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].split_whitespace().next().unwrap_or("").to_string();
        targets.push(target);
        rest = &after[end..];
    }
    targets
}

/// GitHub's anchor of a heading: lower case, punctuation other than `-` and `_`
/// dropped, spaces to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings (repeats get `-1`, `-2`, ...).
fn anchors(path: &Path) -> HashSet<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut seen = HashSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let base = slug(line.trim_start_matches('#'));
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

#[test]
fn every_relative_link_points_to_an_existing_file_and_heading() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for target in link_targets(&prose(&text)) {
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() { doc.clone() } else { doc.parent().unwrap().join(file) };
            if !path.exists() {
                broken.push(format!("{}: {target} (no such file)", doc.display()));
                continue;
            }
            if let Some(a) = anchor.filter(|_| path.extension().is_some_and(|e| e == "md")) {
                if !anchors(&path).contains(a) {
                    broken.push(format!("{}: {target} (no heading #{a} in {})", doc.display(), path.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked >= 10, "only {checked} relative links found: is the link parser broken?");
}

#[test]
fn the_link_parser_reads_links_and_skips_code() {
    let text = "see [a](docs/a.md) and ![p](p.png)\n`[not](x.md)`\n```\n[no](y.md)\n```\n[b](b.md#part-two)";
    assert_eq!(link_targets(&prose(text)), ["docs/a.md", "p.png", "b.md#part-two"]);
    assert_eq!(slug(" Results CSV"), "results-csv");
    assert_eq!(slug(" Paper comparison on SmolLM2-135M, 100 examples per task (`results/paper-smollm2/`)"), "paper-comparison-on-smollm2-135m-100-examples-per-task-resultspaper-smollm2");
}

/// The part of `text` under the heading line `heading`, up to the next heading of
/// the same or a higher level.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let level = heading.chars().take_while(|&c| c == '#').count();
    let start = text.find(&format!("\n{heading}\n")).unwrap_or_else(|| panic!("no heading {heading:?}")) + heading.len() + 2;
    let rest = &text[start..];
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if hashes > 0 && hashes <= level && line[hashes..].starts_with(' ') {
            return &rest[..offset];
        }
        offset += line.len();
    }
    rest
}

/// The documents under docs/ that README.md's "Documentation" list links to, by
/// file name, leaving out docs/README.md itself.
fn readme_doc_list(readme: &str) -> std::collections::BTreeSet<String> {
    link_targets(&prose(section(readme, "## Documentation")))
        .into_iter()
        .filter_map(|t| t.strip_prefix("docs/").map(str::to_string))
        .filter(|t| t.ends_with(".md") && !t.contains('/') && t != "README.md")
        .collect()
}

/// The documents that docs/README.md's "Index" links to (files beside it).
fn docs_index(index: &str) -> std::collections::BTreeSet<String> {
    link_targets(&prose(section(index, "## Index")))
        .into_iter()
        .filter(|t| t.ends_with(".md") && !t.contains('/') && t != "README.md")
        .collect()
}

#[test]
fn the_readme_and_the_docs_index_list_every_document_under_docs() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let index = std::fs::read_to_string(root().join("docs/README.md")).unwrap();
    let listed = readme_doc_list(&readme);
    let indexed = docs_index(&index);
    let files: std::collections::BTreeSet<String> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md") && n != "README.md")
        .collect();
    let diff = |a: &std::collections::BTreeSet<String>, b: &std::collections::BTreeSet<String>| a.difference(b).cloned().collect::<Vec<_>>();
    assert!(
        listed == indexed && indexed == files,
        "README.md's Documentation list, docs/README.md's Index and the files under docs/ disagree:\n\
         in docs/ but not in the README: {:?}\nin docs/ but not in the index: {:?}\n\
         in the README but not in the index: {:?}\nin the index but not in the README: {:?}",
        diff(&files, &listed),
        diff(&files, &indexed),
        diff(&listed, &indexed),
        diff(&indexed, &listed),
    );
    assert!(
        link_targets(&prose(section(&readme, "## Documentation"))).iter().any(|t| t == "docs/README.md"),
        "README.md's Documentation list does not link docs/README.md"
    );
}

#[test]
fn the_index_checks_read_their_sections() {
    let readme = "# x\n\n## Documentation\n\n- [docs/a.md](docs/a.md): a\n- [docs/README.md](docs/README.md): i\n\n## Next\n\n[docs/b.md](docs/b.md)\n";
    assert_eq!(readme_doc_list(readme).into_iter().collect::<Vec<_>>(), ["a.md"]);
    let index = "# D\n\n## Index\n\n| [a.md](a.md) | a |\n| [r](../results/) | r |\n\n### Sub\n\n[c.md](c.md)\n\n## Models\n\n[b.md](b.md)\n";
    assert_eq!(docs_index(index).into_iter().collect::<Vec<_>>(), ["a.md", "c.md"]);
}
