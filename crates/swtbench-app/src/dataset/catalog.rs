//! `swtbench datasets`: the dataset aliases, their SWT filter lists and the embedded offline
//! copies, as JSON for machines or as text for people.

use serde_json::json;
use swtbench_data::dataset::known_datasets;
use swtbench_data::embedded;

/// The catalogue as one JSON object: `{"datasets": [...], "embedded": [...]}`.
pub fn catalog_json() -> serde_json::Value {
    let known: Vec<_> = known_datasets()
        .iter()
        .map(|k| {
            json!({
                "key": k.key,
                "dataset": k.canonical,
                "aliases": k.aliases,
                "test_rows": k.test_rows,
                "swt_filter": k.filter.name(),
                "swt_filter_ids": k.filter.len(),
                "swt_test_rows": k.swt_test_rows(),
                "embedded_splits": embedded::all()
                    .iter()
                    .filter(|e| e.name == k.canonical)
                    .map(|e| e.split)
                    .collect::<Vec<_>>(),
            })
        })
        .collect();
    let copies: Vec<_> = embedded::all()
        .iter()
        .map(|e| {
            json!({
                "dataset": e.name,
                "split": e.split,
                "rows": e.rows,
                "compressed_bytes": e.compressed_bytes(),
                "source": e.source,
            })
        })
        .collect();
    json!({"datasets": known, "embedded": copies})
}

/// The catalogue as `datasets` prints it: the table, or (`json`) the JSON object, pretty.
pub fn catalog(json: bool) -> String {
    match json {
        true => serde_json::to_string_pretty(&catalog_json()).unwrap_or_default(),
        false => catalog_text(),
    }
}

/// The catalogue as a table of the known datasets, their aliases and the embedded copies.
pub fn catalog_text() -> String {
    let mut out = String::new();
    out.push_str("Known datasets (--dataset accepts any alias, case-insensitive):\n\n");
    out.push_str(&format!(
        "  {:<9} {:<34} {:>9} {:>13}  {}\n",
        "name", "dataset", "test rows", "--filter-swt", "offline copy"
    ));
    for k in known_datasets() {
        let copy = match k.embedded("test") {
            Some(e) => format!("embedded ({} KiB)", e.compressed_bytes() / 1024),
            None => "none (download cache only)".to_string(),
        };
        out.push_str(&format!(
            "  {:<9} {:<34} {:>9} {:>13}  {}\n",
            k.key,
            k.canonical,
            k.test_rows,
            format!("{} (-{})", k.swt_test_rows(), k.filter.len()),
            copy
        ));
    }
    out.push_str("\nAliases:\n");
    for k in known_datasets() {
        out.push_str(&format!("  {:<9} {}\n", k.key, k.aliases.join(", ")));
    }
    out.push_str("\nEmbedded copies (used with --offline or when the hub cannot be reached):\n");
    for e in embedded::all() {
        out.push_str(&format!(
            "  {} ({}): {} rows, {} KiB compressed; {}\n",
            e.name,
            e.split,
            e.rows,
            e.compressed_bytes() / 1024,
            e.source
        ));
    }
    out.push_str(
        "\nAlso accepted: a local .json/.jsonl/.parquet file or directory, and any Hugging Face \
         dataset name with --split.\n",
    );
    out
}
