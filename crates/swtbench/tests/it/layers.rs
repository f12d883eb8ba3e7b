//! The layer rule of docs/architecture.md, checked: the crate table lists the crates from the
//! highest layer (the binary) to the lowest (the pure crates); a crate may depend on crates of its
//! own layer or below, never on one above. The table is read from the document and the
//! dependencies from each crate's Cargo.toml, so a new arrow up (or a table that no longer tells
//! the truth) fails here.

use std::collections::BTreeMap;
use std::path::Path;

fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// (layer name, crate) in the table's order.
fn table(doc: &str) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in doc.lines() {
        if line.starts_with("| layer | crate |") {
            in_table = true;
            continue;
        }
        if in_table && !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if in_table && cells.len() > 3 && cells[2].starts_with('`') {
            rows.push((cells[1].to_string(), cells[2].trim_matches('`').to_string()));
        }
    }
    rows
}

/// The workspace crates `crate_dir`'s Cargo.toml lists under [dependencies].
fn dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps && line.starts_with("swtbench") {
            let name: String = line
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            out.push(name);
        }
    }
    out
}

/// The arrows that point up: (crate, its layer, dependency, the dependency's layer).
fn arrows_up(rows: &[(String, String)], deps: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    // A layer's rank: where it first appears (0 = highest).
    let mut rank: BTreeMap<&str, usize> = BTreeMap::new();
    for (layer, _) in rows {
        let next = rank.len();
        rank.entry(layer.as_str()).or_insert(next);
    }
    let layer_of: BTreeMap<&str, &str> =
        rows.iter().map(|(l, c)| (c.as_str(), l.as_str())).collect();
    let mut out = Vec::new();
    for (krate, ds) in deps {
        let Some(own) = layer_of.get(krate.as_str()) else {
            continue;
        };
        for d in ds {
            let Some(theirs) = layer_of.get(d.as_str()) else {
                continue;
            };
            if rank[theirs] < rank[own] {
                out.push(format!("{krate} ({own}) depends on {d} ({theirs})"));
            }
        }
    }
    out
}

#[test]
fn no_crate_depends_on_a_crate_of_a_layer_above_it() {
    let doc = std::fs::read_to_string(workspace().join("docs/architecture.md")).unwrap();
    let rows = table(&doc);
    let mut deps = BTreeMap::new();
    for entry in std::fs::read_dir(workspace().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        deps.insert(name, dependencies(&manifest));
    }
    let listed: Vec<&str> = rows.iter().map(|(_, c)| c.as_str()).collect();
    for krate in deps.keys() {
        assert!(
            listed.contains(&krate.as_str()),
            "crate {krate} is not in docs/architecture.md's table: give it its layer there"
        );
    }
    assert_eq!(arrows_up(&rows, &deps), Vec::<String>::new());
}

#[test]
fn an_arrow_up_is_found() {
    let doc = "| layer | crate | what | not |\n|---|---|---|---|\n| binary | `a` | x | y |\n| pure | `b` | x | y |\n| pure | `c` | x | y |\n\nafter\n";
    let rows = table(doc);
    assert_eq!(rows.len(), 3);
    let deps: BTreeMap<String, Vec<String>> = [
        ("a".to_string(), vec!["b".to_string()]),
        ("b".to_string(), vec!["c".to_string(), "a".to_string()]),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        arrows_up(&rows, &deps),
        vec!["b (pure) depends on a (binary)"]
    );
    let manifest = "[package]\nname = \"x\"\n[dependencies]\nswtbench-core.workspace = true\nanyhow = \"1\"\nswtbench-grade = { workspace = true }\n[dev-dependencies]\nswtbench-app.workspace = true\n";
    assert_eq!(
        dependencies(manifest),
        vec!["swtbench-core", "swtbench-grade"]
    );
}
