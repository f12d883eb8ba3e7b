//! Dataset rows from files: JSON (a list), JSON Lines, Parquet and Arrow IPC (the `.arrow` files
//! `datasets.save_to_disk` writes), each row a JSON object.
//!
//! Rows stay untyped here; `swtbench_core::Instance::from_row` validates them. Every row keeps
//! where it came from (line, list index or Parquet row) so errors can point at it. Parquet columns
//! are mapped to JSON the way the Hugging Face `datasets` library exports them: strings stay
//! strings, lists become arrays, structs objects, timestamps ISO-8601 strings.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, TimeUnit};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{Map, Number, Value};

/// Where a row came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowLocation {
    /// 1-based line of a JSON Lines file.
    Line(usize),
    /// 0-based index into a JSON list.
    Index(usize),
    /// 0-based row of a Parquet or Arrow file.
    Row(usize),
}

impl fmt::Display for RowLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowLocation::Line(n) => write!(f, "line {n}"),
            RowLocation::Index(i) => write!(f, "item {i}"),
            RowLocation::Row(i) => write!(f, "row {i}"),
        }
    }
}

/// One dataset row and its origin.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The file (or other source label) the row is from.
    pub source: Arc<str>,
    pub location: RowLocation,
    pub value: Value,
}

/// Why a file's rows cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RowsError {
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{source_label}: {location}: not valid JSON: {detail}")]
    JsonRow {
        source_label: String,
        location: RowLocation,
        detail: String,
    },
    #[error("{source_label}: not valid JSON: {detail}")]
    Json {
        source_label: String,
        detail: String,
    },
    #[error("{source_label}: {location}: a row must be a JSON object, found {found}")]
    NotAnObject {
        source_label: String,
        location: RowLocation,
        found: &'static str,
    },
    #[error(
        "{source_label}: a .json dataset must be a list of rows, or an object with a list of rows \
         under the split name {split:?}"
    )]
    Shape { source_label: String, split: String },
    #[error("{source_label}: Parquet: {detail}")]
    Parquet {
        source_label: String,
        detail: String,
    },
    #[error("{source_label}: Arrow: {detail}")]
    Arrow {
        source_label: String,
        detail: String,
    },
    #[error(
        "{}: unknown dataset file type; expected .json, .jsonl, .parquet or .arrow",
        path.display()
    )]
    UnknownFormat { path: PathBuf },
}

/// File formats we read, in order of preference when a split exists in several.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FileFormat {
    Parquet,
    /// Arrow IPC, stream or file format (`datasets.save_to_disk` shards).
    Arrow,
    JsonLines,
    Json,
}

impl FileFormat {
    /// From the file name: `.json`, `.jsonl`/`.ndjson`, `.parquet`, `.arrow` (case-insensitive).
    pub fn from_path(path: &Path) -> Option<FileFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "json" => Some(FileFormat::Json),
            "jsonl" | "ndjson" => Some(FileFormat::JsonLines),
            "parquet" => Some(FileFormat::Parquet),
            "arrow" => Some(FileFormat::Arrow),
            _ => None,
        }
    }
}

/// The rows of a file, plus notes for the user (e.g. a `.json` file that held JSON Lines).
/// `split` picks the list out of a `.json` object keyed by split name.
pub fn read_file(path: &Path, split: &str) -> Result<(Vec<Row>, Vec<String>), RowsError> {
    let format = FileFormat::from_path(path).ok_or_else(|| RowsError::UnknownFormat {
        path: path.to_path_buf(),
    })?;
    read_file_as(path, &path.display().to_string(), format, split)
}

/// Like [`read_file`] with the format given (for cache files named by hash) and the label used
/// in messages.
pub fn read_file_as(
    path: &Path,
    label: &str,
    format: FileFormat,
    split: &str,
) -> Result<(Vec<Row>, Vec<String>), RowsError> {
    let io = |source| RowsError::Io {
        path: path.to_path_buf(),
        source,
    };
    match format {
        FileFormat::Parquet => Ok((
            parquet_rows(label, fs::File::open(path).map_err(io)?)?,
            Vec::new(),
        )),
        FileFormat::Arrow => Ok((arrow_rows(label, &fs::read(path).map_err(io)?)?, Vec::new())),
        FileFormat::JsonLines | FileFormat::Json => {
            let bytes = fs::read(path).map_err(io)?;
            let text = text_of(label, &bytes)?;
            if format == FileFormat::Json {
                json_rows(label, text, split)
            } else {
                Ok((jsonl_rows(label, text)?, Vec::new()))
            }
        }
    }
}

fn text_of<'a>(label: &str, bytes: &'a [u8]) -> Result<&'a str, RowsError> {
    utf8_text(bytes).map_err(|(line, offset)| RowsError::Json {
        source_label: label.to_string(),
        detail: format!("not UTF-8: line {line} has an invalid byte (file offset {offset}); save the file as UTF-8"),
    })
}

/// The text of a file without its UTF-8 byte order mark, or the 1-based line and the byte offset
/// of the first byte that is not UTF-8.
pub fn utf8_text(bytes: &[u8]) -> Result<&str, (usize, usize)> {
    let bom = if bytes.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    std::str::from_utf8(&bytes[bom..]).map_err(|e| {
        let bad = e.valid_up_to();
        let line = bytes[bom..bom + bad]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        (line, bom + bad)
    })
}

/// serde_json's message for one JSON Lines line: the column instead of the (always 1) line.
fn line_error(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    match full.strip_suffix(&suffix) {
        Some(msg) => format!("{msg} (column {})", e.column()),
        None => full,
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// JSON Lines: one object per non-blank line.
pub fn jsonl_rows(label: &str, text: &str) -> Result<Vec<Row>, RowsError> {
    let source: Arc<str> = Arc::from(label);
    let mut rows = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let location = RowLocation::Line(i + 1);
        let value: Value = serde_json::from_str(line).map_err(|e| RowsError::JsonRow {
            source_label: label.to_string(),
            location: location.clone(),
            detail: line_error(&e),
        })?;
        if !value.is_object() {
            return Err(RowsError::NotAnObject {
                source_label: label.to_string(),
                location,
                found: kind(&value),
            });
        }
        rows.push(Row {
            source: source.clone(),
            location,
            value,
        });
    }
    Ok(rows)
}

/// A JSON document: a list of rows, or an object holding the list under `split`. A `.json` file
/// that is really JSON Lines (what `datasets.Dataset.to_json` writes) is read as such, with a note.
pub fn json_rows(
    label: &str,
    text: &str,
    split: &str,
) -> Result<(Vec<Row>, Vec<String>), RowsError> {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            // JSON Lines: the first line is a whole object by itself; then its own errors, which
            // name the line, are more useful than "trailing characters at line 2".
            let first_line_is_object = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .and_then(|l| serde_json::from_str::<Value>(l).ok())
                .is_some_and(|v| v.is_object());
            if first_line_is_object && e.classify() == serde_json::error::Category::Syntax {
                let rows = jsonl_rows(label, text)?;
                let note = format!("{label}: read as JSON Lines (one row per line)");
                return Ok((rows, vec![note]));
            }
            return Err(RowsError::Json {
                source_label: label.to_string(),
                detail: e.to_string(),
            });
        }
    };
    let items = match value {
        Value::Array(items) => items,
        Value::Object(mut map) => match map.remove(split) {
            Some(Value::Array(items)) => items,
            _ => {
                return Err(RowsError::Shape {
                    source_label: label.to_string(),
                    split: split.to_string(),
                })
            }
        },
        _ => {
            return Err(RowsError::Shape {
                source_label: label.to_string(),
                split: split.to_string(),
            })
        }
    };
    let source: Arc<str> = Arc::from(label);
    let mut rows = Vec::with_capacity(items.len());
    for (i, value) in items.into_iter().enumerate() {
        let location = RowLocation::Index(i);
        if !value.is_object() {
            return Err(RowsError::NotAnObject {
                source_label: label.to_string(),
                location,
                found: kind(&value),
            });
        }
        rows.push(Row {
            source: source.clone(),
            location,
            value,
        });
    }
    Ok((rows, Vec::new()))
}

/// Every row of a Parquet file, as JSON objects keyed by column name.
pub fn parquet_rows(label: &str, file: fs::File) -> Result<Vec<Row>, RowsError> {
    let err = |detail: String| RowsError::Parquet {
        source_label: label.to_string(),
        detail,
    };
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| err(e.to_string()))?
        .with_batch_size(1024)
        .build()
        .map_err(|e| err(e.to_string()))?;
    let source: Arc<str> = Arc::from(label);
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| err(e.to_string()))?;
        let start = rows.len();
        for (i, value) in batch_to_objects(&batch)
            .map_err(|e| err(e.to_string()))?
            .into_iter()
            .enumerate()
        {
            rows.push(Row {
                source: source.clone(),
                location: RowLocation::Row(start + i),
                value,
            });
        }
    }
    Ok(rows)
}

/// Every row of an Arrow IPC file (stream format, as `datasets` writes it, or file format).
pub fn arrow_rows(label: &str, bytes: &[u8]) -> Result<Vec<Row>, RowsError> {
    let err = |detail: String| RowsError::Arrow {
        source_label: label.to_string(),
        detail,
    };
    let batches: Vec<RecordBatch> =
        match arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(bytes), None) {
            Ok(reader) => reader
                .collect::<Result<_, _>>()
                .map_err(|e| err(e.to_string()))?,
            Err(stream_err) => {
                match arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(bytes), None) {
                    Ok(reader) => reader
                        .collect::<Result<_, _>>()
                        .map_err(|e| err(e.to_string()))?,
                    Err(_) => return Err(err(stream_err.to_string())),
                }
            }
        };
    let source: Arc<str> = Arc::from(label);
    let mut rows = Vec::new();
    for batch in &batches {
        let start = rows.len();
        for (i, value) in batch_to_objects(batch)
            .map_err(|e| err(e.to_string()))?
            .into_iter()
            .enumerate()
        {
            rows.push(Row {
                source: source.clone(),
                location: RowLocation::Row(start + i),
                value,
            });
        }
    }
    Ok(rows)
}

/// A column type we cannot turn into JSON.
#[derive(Debug)]
struct Unsupported {
    column: String,
    data_type: DataType,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "column {:?} has type {} which cannot be read as JSON",
            self.column, self.data_type
        )
    }
}

fn batch_to_objects(batch: &RecordBatch) -> Result<Vec<Value>, Unsupported> {
    let schema = batch.schema();
    let mut rows: Vec<Map<String, Value>> = vec![Map::new(); batch.num_rows()];
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        for (i, row) in rows.iter_mut().enumerate() {
            let v = cell(column, i).map_err(|data_type| Unsupported {
                column: field.name().clone(),
                data_type,
            })?;
            row.insert(field.name().clone(), v);
        }
    }
    Ok(rows.into_iter().map(Value::Object).collect())
}

fn float(v: f64) -> Value {
    Number::from_f64(v)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// One cell as JSON; `Err(type)` for types we do not map.
fn cell(array: &ArrayRef, i: usize) -> Result<Value, DataType> {
    if array.is_null(i) {
        return Ok(Value::Null);
    }
    let v = match array.data_type() {
        DataType::Null => Value::Null,
        DataType::Boolean => Value::Bool(array.as_boolean().value(i)),
        DataType::Utf8 => Value::String(array.as_string::<i32>().value(i).to_string()),
        DataType::LargeUtf8 => Value::String(array.as_string::<i64>().value(i).to_string()),
        DataType::Utf8View => Value::String(array.as_string_view().value(i).to_string()),
        DataType::Int8 => Value::from(array.as_primitive::<Int8Type>().value(i)),
        DataType::Int16 => Value::from(array.as_primitive::<Int16Type>().value(i)),
        DataType::Int32 => Value::from(array.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => Value::from(array.as_primitive::<Int64Type>().value(i)),
        DataType::UInt8 => Value::from(array.as_primitive::<UInt8Type>().value(i)),
        DataType::UInt16 => Value::from(array.as_primitive::<UInt16Type>().value(i)),
        DataType::UInt32 => Value::from(array.as_primitive::<UInt32Type>().value(i)),
        DataType::UInt64 => Value::from(array.as_primitive::<UInt64Type>().value(i)),
        DataType::Float32 => float(f64::from(array.as_primitive::<Float32Type>().value(i))),
        DataType::Float64 => float(array.as_primitive::<Float64Type>().value(i)),
        DataType::Date32 => {
            let days = array.as_primitive::<Date32Type>().value(i);
            match arrow_array::temporal_conversions::date32_to_datetime(days) {
                Some(d) => Value::String(d.format("%Y-%m-%d").to_string()),
                None => Value::Null,
            }
        }
        DataType::Timestamp(unit, tz) => {
            use arrow_array::temporal_conversions as tc;
            let dt = match unit {
                TimeUnit::Second => tc::timestamp_s_to_datetime(
                    array.as_primitive::<TimestampSecondType>().value(i),
                ),
                TimeUnit::Millisecond => tc::timestamp_ms_to_datetime(
                    array.as_primitive::<TimestampMillisecondType>().value(i),
                ),
                TimeUnit::Microsecond => tc::timestamp_us_to_datetime(
                    array.as_primitive::<TimestampMicrosecondType>().value(i),
                ),
                TimeUnit::Nanosecond => tc::timestamp_ns_to_datetime(
                    array.as_primitive::<TimestampNanosecondType>().value(i),
                ),
            };
            match dt {
                Some(dt) => {
                    let mut s = dt.format("%Y-%m-%dT%H:%M:%S%.f").to_string();
                    if tz.is_some() {
                        s.push('Z');
                    }
                    Value::String(s)
                }
                None => Value::Null,
            }
        }
        DataType::List(_) => {
            let list = array.as_list::<i32>();
            list_value(&list.value(i))?
        }
        DataType::LargeList(_) => {
            let list = array.as_list::<i64>();
            list_value(&list.value(i))?
        }
        DataType::FixedSizeList(_, _) => {
            let list = array.as_fixed_size_list();
            list_value(&list.value(i))?
        }
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let mut obj = Map::new();
            for (f, col) in fields.iter().zip(s.columns()) {
                obj.insert(f.name().clone(), cell(col, i)?);
            }
            Value::Object(obj)
        }
        DataType::Dictionary(_, _) => {
            let dict = array.as_any_dictionary();
            let key = dict.normalized_keys()[i];
            cell(dict.values(), key)?
        }
        other => return Err(other.clone()),
    };
    Ok(v)
}

fn list_value(values: &ArrayRef) -> Result<Value, DataType> {
    (0..values.len())
        .map(|j| cell(values, j))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_errors_name_the_line() {
        let e = jsonl_rows("d.jsonl", "{\"a\":1}\n\n{oops\n").unwrap_err();
        assert!(
            e.to_string().starts_with("d.jsonl: line 3: not valid JSON"),
            "{e}"
        );
        let e = jsonl_rows("d.jsonl", "{\"a\":1}\n[1]\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "d.jsonl: line 2: a row must be a JSON object, found a list"
        );
        let rows = jsonl_rows("d.jsonl", "{\"a\":1}\r\n\r\n{\"a\":2}").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].location, RowLocation::Line(3));
    }

    #[test]
    fn jsonl_errors_give_the_column_and_non_utf8_the_line() {
        let e = jsonl_rows("d.jsonl", "{\"a\":1}\n{\"a\" 2}\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "d.jsonl: line 2: not valid JSON: expected `:` (column 6)"
        );
        assert_eq!(utf8_text(b"\xEF\xBB\xBFok\n"), Ok("ok\n"));
        assert_eq!(utf8_text(b"a\nb\nc\xff\n"), Err((3, 5)));
        assert_eq!(utf8_text(b"\xEF\xBB\xBF\xff"), Err((1, 3)));
        let e = text_of("d.jsonl", b"{}\n\xfe").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }

    #[test]
    fn json_list_split_object_and_disguised_jsonl() {
        let (rows, notes) = json_rows("d.json", "[{\"a\":1},{\"a\":2}]", "test").unwrap();
        assert_eq!(rows.len(), 2);
        assert!(notes.is_empty());
        let (rows, _) = json_rows("d.json", "{\"test\":[{\"a\":1}],\"dev\":[]}", "test").unwrap();
        assert_eq!(rows.len(), 1);
        let e = json_rows("d.json", "{\"dev\":[]}", "test").unwrap_err();
        assert!(matches!(e, RowsError::Shape { .. }), "{e}");
        let (rows, notes) = json_rows("d.json", "{\"a\":1}\n{\"a\":2}\n", "test").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(notes.len(), 1);
        let e = json_rows("d.json", "{\"a\":1}\n{\"a\":2}\n{\"a\" 3}\n", "test").unwrap_err();
        assert!(
            e.to_string().starts_with("d.json: line 3: not valid JSON"),
            "{e}"
        );
        let e = json_rows("d.json", "[{\"a\":1},", "test").unwrap_err();
        assert!(e.to_string().starts_with("d.json: not valid JSON"), "{e}");
        let e = json_rows("d.json", "[1]", "test").unwrap_err();
        assert!(e.to_string().contains("item 0"), "{e}");
    }
}
