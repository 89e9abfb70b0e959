//! `ARCHITECTURE.md`'s code map is a contract: each row names paths under `src/` and
//! what they may depend on. This test reads the table, finds every module path
//! (`crate::a::b`, `weft::a::b` in the binary) and every external crate each source
//! file names outside comments, and fails on one the file's row does not allow.
//!
//! Rules of the "may depend on" column:
//! - a module name (`mesh`) allows the whole module, `collide::shapes` one submodule;
//! - a crate name (`glam`, `rayon`) allows that crate; `std`, `core` and `alloc` are
//!   always allowed, as is the file's own module;
//! - `all core modules` allows every module but the adapters (`scene`, `ffi`,
//!   `render`) and the binary;
//! - parenthesised text is commentary; a row whose cell holds `name: a, b; other: c`
//!   gives each of its paths (matched by file or folder name) its own list.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// A row of the code map: the paths it covers and what they may use.
#[derive(Debug)]
struct Row {
    paths: Vec<String>,
    allowed: Vec<String>,
}

/// Modules of the library crate (the top-level `mod` items of `src/lib.rs`).
fn library_modules(root: &Path) -> BTreeSet<String> {
    let lib = fs::read_to_string(root.join("src/lib.rs")).expect("src/lib.rs is readable");
    let mut out = BTreeSet::new();
    for line in strip_comments(&lib).lines() {
        let line = line.trim();
        let rest = line
            .strip_prefix("pub mod ")
            .or_else(|| line.strip_prefix("mod "))
            .or_else(|| line.strip_prefix("pub(crate) mod "));
        if let Some(rest) = rest {
            let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

/// External crates the package depends on (`[dependencies]` of `Cargo.toml`), with
/// `-` spelled `_` as in paths.
fn external_crates(root: &Path) -> BTreeSet<String> {
    let cargo = fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml is readable");
    let mut out = BTreeSet::new();
    let mut in_deps = false;
    for line in cargo.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps && !line.starts_with('#') {
            if let Some((name, _)) = line.split_once('=') {
                let name = name.trim();
                if !name.is_empty() {
                    out.insert(name.replace('-', "_"));
                }
            }
        }
    }
    out
}

/// `a::b` for every file `src/a/b.rs` or folder `src/a/b/` of a library module `a`.
fn submodules_of(root: &Path, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for m in modules {
        let Ok(entries) = fs::read_dir(root.join("src").join(m)) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if (p.is_dir() || p.extension().is_some_and(|x| x == "rs")) && name != "mod" {
                out.insert(format!("{m}::{name}"));
            }
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The source without `//` comments (doc comments included) and without the contents
/// of string literals, so that prose and messages never count as dependencies.
fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let b = src.as_bytes();
    let mut i = 0;
    let mut block_depth = 0usize;
    while i < b.len() {
        if block_depth > 0 {
            if b[i..].starts_with(b"*/") {
                block_depth -= 1;
                i += 2;
            } else if b[i..].starts_with(b"/*") {
                block_depth += 1;
                i += 2;
            } else {
                if b[i] == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            continue;
        }
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if b[i..].starts_with(b"/*") {
            block_depth = 1;
            i += 2;
            continue;
        }
        if b[i] == b'"' {
            // A raw string r"…" / r#"…"# is skipped by the same rule: its text has no
            // unescaped quote that ends it early in this code base.
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            out.push('"');
            i += 1;
            continue;
        }
        if b[i] == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A char literal ('x', '\n', '\''): skip it whole.
            let mut j = i + 1;
            if b[j] == b'\\' {
                j += 2;
            } else {
                j += 1;
            }
            while j < b.len() && b[j] != b'\'' {
                j += 1;
            }
            i = j + 1;
            continue;
        }
        // Copy one whole UTF-8 character.
        let ch_len = src[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&src[i..i + ch_len]);
        i += ch_len;
    }
    out
}

/// Every `root::a::b…` path in `code` as its first two segments (`a`, `a::b`), with
/// `root::{x, y::z}` groups expanded one level deep.
fn paths_under(code: &str, root: &str) -> BTreeSet<(String, Option<String>)> {
    let mut out = BTreeSet::new();
    let pat = format!("{root}::");
    let mut start = 0;
    while let Some(pos) = code[start..].find(&pat) {
        let at = start + pos;
        start = at + pat.len();
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            continue;
        }
        let rest = &code[start..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = matching_brace(group);
            for item in split_top_level(&group[..end]) {
                if let Some(p) = first_two_segments(item.trim()) {
                    out.insert(p);
                }
            }
        } else if let Some(p) = first_two_segments(rest) {
            out.insert(p);
        }
    }
    out
}

fn matching_brace(s: &str) -> usize {
    let mut depth = 1;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    s.len()
}

fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut last = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[last..i]);
                last = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[last..]);
    out
}

fn first_two_segments(s: &str) -> Option<(String, Option<String>)> {
    let a: String = s.chars().take_while(|c| is_ident(*c)).collect();
    if a.is_empty() {
        return None;
    }
    let rest = &s[a.len()..];
    let b = rest
        .strip_prefix("::")
        .map(|r| r.chars().take_while(|c| is_ident(*c)).collect::<String>())
        .filter(|b| !b.is_empty() && b.chars().next().is_some_and(|c| c.is_ascii_lowercase()));
    Some((a, b))
}

/// External crates named at the start of a path (`glam::Vec3`, `use rayon::prelude`).
fn crates_named(code: &str, crates: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for name in crates {
        let pat = format!("{name}::");
        let mut start = 0;
        while let Some(pos) = code[start..].find(&pat) {
            let at = start + pos;
            start = at + pat.len();
            let before = code[..at].chars().next_back();
            if !before.is_some_and(|c| is_ident(c) || c == ':') {
                out.insert(name.clone());
                break;
            }
        }
    }
    out
}

fn parse_code_map(text: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut in_map = false;
    for line in text.lines() {
        if line.starts_with("## ") {
            in_map = line.trim() == "## Code map";
            continue;
        }
        if !in_map || !line.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
        if cells.len() < 3 || cells[0].trim() == "path" || cells[0].trim().starts_with("---") {
            continue;
        }
        let paths: Vec<String> = backticked(cells[0])
            .into_iter()
            .filter(|p| p.starts_with("src/"))
            .collect();
        if paths.is_empty() {
            continue;
        }
        rows.push(Row {
            paths,
            allowed: vec![strip_parens(cells[2])],
        });
    }
    rows
}

fn backticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

fn strip_parens(s: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.replace('`', "")
}

/// The allowed names for `path` within `row`: a cell `a: x, y; b: z` is split by
/// the label that names the path's file or folder.
fn allowed_for(row: &Row, path: &str) -> BTreeSet<String> {
    let cell = &row.allowed[0];
    let mut list = cell.as_str();
    if cell.contains(';') {
        let stem = Path::new(path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        for part in cell.split(';') {
            if let Some((label, names)) = part.split_once(": ") {
                let label = label.trim();
                if path.contains(&format!("/{label}")) || stem.contains(label) {
                    list = names;
                }
            }
        }
    }
    list.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The row that covers `file` (relative to the repository): the longest path that
/// is the file itself or a folder holding it.
fn row_for<'a>(rows: &'a [Row], file: &str) -> Option<&'a Row> {
    rows.iter()
        .flat_map(|r| r.paths.iter().map(move |p| (p, r)))
        .filter(|(p, _)| file == p.as_str() || (p.ends_with('/') && file.starts_with(p.as_str())))
        .max_by_key(|(p, _)| p.len())
        .map(|(_, r)| r)
}

/// The top-level library module a file belongs to (`src/collide/bvh.rs` → `collide`).
fn own_module(file: &str) -> String {
    let rest = file.trim_start_matches("src/");
    let first = rest.split('/').next().unwrap_or(rest);
    first.trim_end_matches(".rs").to_string()
}

const ADAPTERS: [&str; 3] = ["scene", "ffi", "render"];

/// Allowed everywhere: the test-only helpers (`crate::testing`, compiled only under
/// `cfg(test)`) and the error derive every module's error type uses.
const ALWAYS: [&str; 2] = ["testing", "thiserror"];

/// The violations of one file: (what it names, why it is refused).
fn violations(
    file: &str,
    source: &str,
    rows: &[Row],
    modules: &BTreeSet<String>,
    submodules: &BTreeSet<String>,
    crates: &BTreeSet<String>,
) -> Vec<String> {
    let Some(row) = row_for(rows, file) else {
        return vec![format!("{file}: no row of the code map covers it")];
    };
    let allowed = allowed_for(row, file);
    let all_core = allowed.iter().any(|a| a == "all core modules");
    let code = strip_comments(source);
    let own = own_module(file);
    let root = if file.starts_with("src/bin/") {
        "weft"
    } else {
        "crate"
    };
    let mut out = Vec::new();
    for (a, b) in paths_under(&code, root) {
        if !modules.contains(&a) || a == own || ALWAYS.contains(&a.as_str()) {
            continue;
        }
        let sub = b
            .map(|b| format!("{a}::{b}"))
            .filter(|s| submodules.contains(s));
        let ok = allowed.contains(&a)
            || sub.as_ref().is_some_and(|s| allowed.contains(s))
            || (all_core && !ADAPTERS.contains(&a.as_str()));
        if !ok {
            out.push(format!(
                "{file}: uses `{}` but its row allows only {:?}",
                sub.unwrap_or(a),
                allowed
            ));
        }
    }
    for c in crates_named(&code, crates) {
        if !allowed.contains(&c) && !ALWAYS.contains(&c.as_str()) {
            out.push(format!(
                "{file}: uses the crate `{c}` but its row allows only {allowed:?}"
            ));
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("src/ is readable")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_import_in_src_is_allowed_by_the_code_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let rows = parse_code_map(&map);
    assert!(rows.len() >= 10, "the code map has {} rows", rows.len());
    let modules = library_modules(root);
    let crates = external_crates(root);
    assert!(modules.contains("collide") && crates.contains("glam"));
    let submodules = submodules_of(root, &modules);
    assert!(submodules.contains("collide::shapes"));

    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut bad = Vec::new();
    let mut checked = 0;
    for path in files {
        let rel = path
            .strip_prefix(root)
            .expect("under the root")
            .to_string_lossy()
            .replace('\\', "/");
        if rel == "src/lib.rs" {
            continue;
        }
        let source = fs::read_to_string(&path).expect("a readable source file");
        bad.extend(violations(
            &rel,
            &source,
            &rows,
            &modules,
            &submodules,
            &crates,
        ));
        checked += 1;
    }
    assert!(checked > 50, "only {checked} files checked");
    assert!(
        bad.is_empty(),
        "imports the code map does not allow:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_checker_refuses_a_forbidden_import_and_accepts_an_allowed_one() {
    let map = "## Code map\n\n| path | what | may depend on | must never |\n|---|---|---|---|\n\
               | `src/mesh/` | meshes | glam, std | the rest |\n\
               | `src/collide/` | collisions (and more) | mesh, `linalg::csr`, rayon | world |\n";
    let rows = parse_code_map(map);
    assert_eq!(rows.len(), 2);
    let modules: BTreeSet<String> = ["mesh", "collide", "linalg", "world"]
        .into_iter()
        .map(String::from)
        .collect();
    let crates: BTreeSet<String> = ["glam", "rayon"].into_iter().map(String::from).collect();
    let submodules: BTreeSet<String> = ["linalg::csr", "linalg::pcg", "mesh::grid"]
        .into_iter()
        .map(String::from)
        .collect();

    let fine = "use crate::mesh::TriMesh;\nuse crate::linalg::csr::SymCsr;\n\
                // crate::world::World is only named in a comment\n\
                fn f() { let s = \"crate::world\"; rayon::join(|| (), || ()); }\n";
    assert!(
        violations(
            "src/collide/a.rs",
            fine,
            &rows,
            &modules,
            &submodules,
            &crates
        )
        .is_empty()
    );

    let grouped = "use crate::{mesh::TriMesh, world::World};\n";
    let v = violations(
        "src/collide/a.rs",
        grouped,
        &rows,
        &modules,
        &submodules,
        &crates,
    );
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].contains("`world`"));

    let other_sub = "use crate::linalg::pcg::solve;\n";
    assert_eq!(
        violations(
            "src/collide/a.rs",
            other_sub,
            &rows,
            &modules,
            &submodules,
            &crates
        )
        .len(),
        1
    );

    let inline = "fn g() -> glam::Vec3 { rayon::current_num_threads(); todo!() }\n";
    let v = violations(
        "src/mesh/grid.rs",
        inline,
        &rows,
        &modules,
        &submodules,
        &crates,
    );
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].contains("`rayon`"));

    let uncovered = violations("src/other.rs", "", &rows, &modules, &submodules, &crates);
    assert_eq!(uncovered.len(), 1);
}
