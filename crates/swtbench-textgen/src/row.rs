//! Dataset rows: the 13 string columns of the SWE-bench text datasets (which the SWT datasets
//! keep), their JSON Lines form and their parquet form.
//!
//! Rows are `serde_json` maps so that a transformation keeps whatever columns, in whatever order,
//! its input had. Pure: encoders return bytes; writing files is the caller's job.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use serde_json::{Map, Value};
use swtbench_core::Instance;

/// The columns of a text row, in order.
pub const TEXT_COLUMNS: [&str; 13] = [
    "instance_id",
    "text",
    "repo",
    "base_commit",
    "problem_statement",
    "hints_text",
    "created_at",
    "patch",
    "test_patch",
    "version",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "environment_setup_commit",
];

/// One dataset row: column name → value (strings, for the rows this crate makes).
pub type Row = Map<String, Value>;

/// `"<patch>\n" + patch + "\n</patch>"`, the SWE-bench text datasets' generation target.
pub fn wrap_patch(patch: &str) -> String {
    format!("<patch>\n{patch}\n</patch>")
}

/// The text row of an instance: the 13 columns, `text` as given, `patch` wrapped.
pub fn text_row(instance: &Instance, text: String) -> Row {
    let extra = |key: &str| -> String {
        match instance.extra.get(key) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        }
    };
    let mut row = Row::new();
    let mut put = |k: &str, v: String| {
        row.insert(k.to_string(), Value::String(v));
    };
    put("instance_id", instance.instance_id.to_string());
    put("text", text);
    put("repo", instance.repo.clone());
    put("base_commit", instance.base_commit.clone());
    put("problem_statement", extra("problem_statement"));
    put("hints_text", extra("hints_text"));
    put("created_at", extra("created_at"));
    put("patch", wrap_patch(&instance.golden_code_patch));
    put("test_patch", instance.golden_test_patch.clone());
    put("version", instance.version.clone());
    put(
        "FAIL_TO_PASS",
        python_json_string_list(&instance.fail_to_pass),
    );
    put(
        "PASS_TO_PASS",
        python_json_string_list(&instance.pass_to_pass),
    );
    put(
        "environment_setup_commit",
        instance.environment_setup_commit.clone(),
    );
    row
}

/// A list of strings as Python's `json.dumps` writes it (`", "` between items, non-ASCII and
/// control characters escaped), which is how SWE-bench stores `FAIL_TO_PASS`/`PASS_TO_PASS`.
pub fn python_json_string_list(items: &[String]) -> String {
    let mut out = String::from("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        swtbench_core::py::write_str(&mut out, item);
    }
    out.push(']');
    out
}

/// One JSON Lines line (with its `\n`).
pub fn to_json_line(row: &Row) -> String {
    let mut s = Value::Object(row.clone()).to_string();
    s.push('\n');
    s
}

/// Why rows cannot be encoded as parquet.
#[derive(Debug, thiserror::Error)]
pub enum ParquetError {
    #[error("parquet encoding failed: {0}")]
    Encode(String),
}

/// Encodes rows as one parquet file with one nullable UTF-8 column per name of `columns`. A
/// value that is not a string is stored as its JSON text; a missing or null value as null.
pub fn to_parquet(columns: &[String], rows: &[Row]) -> Result<Vec<u8>, ParquetError> {
    let err = |e: &dyn std::fmt::Display| ParquetError::Encode(e.to_string());
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|c| Field::new(c.as_str(), DataType::Utf8, true))
            .collect::<Vec<_>>(),
    ));
    let arrays: Vec<ArrayRef> = columns
        .iter()
        .map(|c| {
            let values: Vec<Option<String>> = rows
                .iter()
                .map(|r| match r.get(c) {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(other) => Some(other.to_string()),
                })
                .collect();
            Arc::new(StringArray::from(values)) as ArrayRef
        })
        .collect();
    let mut buf = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut buf, schema.clone(), None).map_err(|e| err(&e))?;
    if !columns.is_empty() {
        let batch = RecordBatch::try_new(schema, arrays).map_err(|e| err(&e))?;
        writer.write(&batch).map_err(|e| err(&e))?;
    }
    writer.close().map_err(|e| err(&e))?;
    Ok(buf)
}

/// The column names of a set of rows: those of the first row, then any others in order of
/// appearance.
pub fn columns_of(rows: &[Row]) -> Vec<String> {
    let mut cols: Vec<String> = Vec::new();
    for r in rows {
        for k in r.keys() {
            if !cols.iter().any(|c| c == k) {
                cols.push(k.clone());
            }
        }
    }
    cols
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_json_lists() {
        assert_eq!(python_json_string_list(&[]), "[]");
        assert_eq!(
            python_json_string_list(&[
                "tests/a.py::test_x[\"q\"]".to_string(),
                "t\u{e9}st \u{1F41B}\t\u{7f}".to_string()
            ]),
            r#"["tests/a.py::test_x[\"q\"]", "t\u00e9st \ud83d\udc1b\t\u007f"]"#
        );
    }
}
