//! The stage order of `src/lib.rs`, kept true: every `use crate::` line (and every
//! `crate::` path in code) of a module under `src/` may name only stages listed
//! before its own in lib.rs, or one of the exceptions lib.rs names with its reason
//! (`- `from -> to`: why`). Comments and string literals do not count. The modules
//! must also import each other without a circle, exceptions included.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The stage order and the allowed exceptions, read from lib.rs's `//!` notes:
/// the order is the `- [`name`]` items, the exceptions the `- `from -> to`` items.
fn stage_order(lib_rs: &str) -> (Vec<String>, BTreeSet<(String, String)>) {
    let mut order = Vec::new();
    let mut exceptions = BTreeSet::new();
    for line in lib_rs.lines().filter_map(|l| l.strip_prefix("//! - ")) {
        if let Some(rest) = line.strip_prefix("[`") {
            let name = rest.split('`').next().unwrap_or_default();
            order.push(name.to_string());
        } else if let Some(rest) = line.strip_prefix('`') {
            let arrow = rest.split('`').next().unwrap_or_default();
            if let Some((from, to)) = arrow.split_once(" -> ") {
                exceptions.insert((from.trim().to_string(), to.trim().to_string()));
            }
        }
    }
    (order, exceptions)
}

/// The modules lib.rs declares (`pub mod x;`).
fn declared_modules(lib_rs: &str) -> BTreeSet<String> {
    lib_rs.lines().filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';')).map(str::to_string).collect()
}

/// `src` with comments, string literals and character literals blanked out
/// (newlines kept), so that only code remains.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |out: &mut String, s: &[u8]| out.extend(s.iter().map(|&c| if c == b'\n' { '\n' } else { ' ' }));
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, 0);
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if rest[0] == b'r' && (rest.get(1) == Some(&b'"') || rest.get(1) == Some(&b'#')) && !b.get(i.wrapping_sub(1)).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                out.push('r');
                i += 1;
                continue;
            }
            let close = format!("\"{}", "#".repeat(hashes));
            let start = 2 + hashes;
            let end = rest[start..].windows(close.len()).position(|w| w == close.as_bytes()).map_or(rest.len(), |p| start + p + close.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'\'' && (rest.get(2) == Some(&b'\'') || (rest.get(1) == Some(&b'\\') && rest[2..].contains(&b'\''))) {
            // A character literal ('"', '\n', '\''); a lifetime ('a) has no closing quote.
            let end = if rest[1] == b'\\' { 2 + rest[2..].iter().skip(1).position(|&c| c == b'\'').unwrap() + 2 } else { 3 };
            blank(&mut out, &rest[..end]);
            i += end;
        } else {
            let ch = src[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// The top-level modules a source file names through `crate::` (a `use` group
/// `crate::{a::x, b}` names each of its members), with the line of each.
fn crate_imports(src: &str) -> Vec<(String, usize)> {
    let code = code_only(src);
    let mut found = Vec::new();
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let line = code[..at].matches('\n').count() + 1;
        let rest = code[at + "crate::".len()..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut member) = (0usize, String::new());
            for c in group.chars() {
                match c {
                    '}' if depth == 0 => break,
                    ',' if depth == 0 => found.push((ident(std::mem::take(&mut member).trim_start()), line)),
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => member.push(c),
                }
            }
            found.push((ident(member.trim_start()), line));
        } else {
            found.push((ident(rest), line));
        }
    }
    found.retain(|(m, _)| !m.is_empty());
    found
}

/// The top-level module a file under `src/` belongs to (`src/fit/chain.rs` is `fit`).
fn module_of(path: &str) -> String {
    let rel = path.strip_prefix("src/").unwrap_or(path);
    rel.split('/').next().unwrap_or(rel).trim_end_matches(".rs").to_string()
}

/// Every import of `files` (path under the repository, source) that runs against
/// lib.rs's order and is not one of its exceptions, as messages; `Err` where lib.rs
/// itself is inconsistent (a declared module missing from the order, an unknown
/// import) or the allowed imports form a circle (through an exception).
fn violations(lib_rs: &str, files: &[(String, String)]) -> Result<Vec<String>, String> {
    let (order, exceptions) = stage_order(lib_rs);
    let rank: BTreeMap<&str, usize> = order.iter().enumerate().map(|(i, m)| (m.as_str(), i)).collect();
    let declared = declared_modules(lib_rs);
    let listed: BTreeSet<String> = order.iter().cloned().collect();
    if declared != listed || listed.len() != order.len() {
        return Err(format!("lib.rs lists {order:?} in its stage order but declares {declared:?}: list every module once"));
    }
    let mut bad = Vec::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, src) in files {
        let from = module_of(path);
        let Some(&i) = rank.get(from.as_str()) else { return Err(format!("{path}: its module {from} is not in lib.rs's stage order")) };
        for (to, line) in crate_imports(src) {
            if to == from {
                continue;
            }
            let Some(&j) = rank.get(to.as_str()) else { continue };
            if j > i && !exceptions.contains(&(from.clone(), to.clone())) {
                bad.push(format!("{path}:{line}: {from} (stage {}) imports {to} (stage {}), which lib.rs lists after it", i + 1, j + 1));
            } else {
                // Downhill or allowed: a circle among these can only run through an exception.
                edges.entry(from.clone()).or_default().insert(to.clone());
            }
        }
    }
    for (from, to) in &exceptions {
        if !edges.get(from).is_some_and(|t| t.contains(to)) {
            bad.push(format!("lib.rs allows {from} -> {to}, which no longer occurs: remove the exception"));
        }
    }
    if let Some(circle) = find_circle(&edges) {
        return Err(format!("the modules import each other in a circle: {}", circle.join(" -> ")));
    }
    Ok(bad)
}

/// A circle among the module imports, if there is one.
fn find_circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(m: &str, edges: &BTreeMap<String, BTreeSet<String>>, path: &mut Vec<String>, done: &mut BTreeSet<String>) -> Option<Vec<String>> {
        if let Some(p) = path.iter().position(|x| x == m) {
            let mut circle = path[p..].to_vec();
            circle.push(m.to_string());
            return Some(circle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for next in edges.get(m).into_iter().flatten() {
            if let Some(c) = visit(next, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges.keys().find_map(|m| visit(m, edges, &mut Vec::new(), &mut done))
}

/// Every `.rs` file under `src/` but lib.rs and main.rs, as (path, source).
fn sources(root: &Path) -> Vec<(String, String)> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, root, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                if rel != "src/lib.rs" && rel != "src/main.rs" {
                    out.push((rel, std::fs::read_to_string(&p).unwrap()));
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(&root.join("src"), root, &mut out);
    out
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn imports_follow_the_stage_order_of_lib_rs() {
    let lib = std::fs::read_to_string(repo().join("src/lib.rs")).unwrap();
    let files = sources(repo());
    assert!(files.len() > 100, "read only {} source files", files.len());
    let bad = violations(&lib, &files).unwrap();
    assert!(bad.is_empty(), "imports against the stage order of src/lib.rs (move the thing down, or name the exception there with its reason):\n{}", bad.join("\n"));
    let (order, exceptions) = stage_order(&lib);
    assert!(order.len() >= 16 && order[0] == "fsutil" && order.last().map(String::as_str) == Some("cli"), "{order:?}");
    assert!(exceptions.len() <= 2, "at most two exceptions: {exceptions:?}");
}

#[test]
fn a_planted_import_against_the_order_fails() {
    let lib = std::fs::read_to_string(repo().join("src/lib.rs")).unwrap();
    let mut files = sources(repo());
    files.push(("src/gguf/planted.rs".into(), "use std::io;\nuse crate::select::SliceMeta;\n".into()));
    let bad = violations(&lib, &files).unwrap();
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].starts_with("src/gguf/planted.rs:2: gguf (stage 4) imports select"), "{}", bad[0]);
}

#[test]
fn the_checker_reads_groups_paths_and_exceptions_but_not_comments_or_strings() {
    let lib = "//! - [`low`]: a.\n//! - [`mid`]: b.\n//! - [`high`]: c.\n//!\n//! - `low -> high`: a reason.\n\npub mod high;\npub mod low;\npub mod mid;\n";
    let check = |path: &str, src: &str| violations(lib, &[(path.to_string(), src.to_string())]);
    // Downhill is fine; the exception is allowed (and, being used, not stale).
    assert_eq!(check("src/mid/a.rs", "use crate::low::X;\nfn f() { crate::low::g(); }").unwrap().len(), 1, "the unused exception is reported");
    assert_eq!(check("src/low.rs", "use crate::high::X;").unwrap(), Vec::<String>::new());
    // A grouped use, a path in code, a nested group: each member counts.
    let bad = check("src/low/x.rs", "use crate::high::H;\nuse crate::{mid::{A, B}, low::C};\nfn f() -> u8 { crate::mid::g() }").unwrap();
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(bad[0].starts_with("src/low/x.rs:2: low (stage 1) imports mid (stage 2)"), "{bad:?}");
    assert!(bad[1].starts_with("src/low/x.rs:3: low (stage 1) imports mid"), "{bad:?}");
    // Comments, doc links, strings, raw strings and char literals are not imports.
    let quiet = "use crate::high::H;\n//! [`crate::mid::X`]\n/// see crate::mid::y\n/* crate::mid::z /* nested */ crate::mid */\nconst S: &str = \"crate::mid::s\";\nconst R: &str = r#\"crate::mid::\"r\"#;\nconst C: char = '\"'; fn f<'a>(x: &'a u8) -> &'a u8 { x }\nmacro_rules! m { () => { $crate::mid::x() } }\n";
    assert_eq!(check("src/low/q.rs", quiet).unwrap(), Vec::<String>::new());
    // A module missing from the order, and a circle through an exception, are errors.
    assert!(violations("//! - [`low`]: a.\npub mod low;\npub mod mid;\n", &[]).unwrap_err().contains("list every module once"));
    let circle = violations(lib, &[("src/low.rs".into(), "use crate::high::H;".into()), ("src/high.rs".into(), "use crate::low::L;".into())]);
    assert!(circle.unwrap_err().contains("circle"), "a circle through an exception");
}
