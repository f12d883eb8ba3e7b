//! Model predictions: which test patch a model proposed for which instance (§2.3–§2.5).
//!
//! Parsing is pure: callers read the file and pass its text and name. Policy, as documented in the
//! README: a malformed record is an error naming the file, line and field; a duplicate id is a
//! warning and the last record wins; a null or missing `model_patch` is kept (graded later as an
//! empty patch); several model names in one file are an error, because a run has one model.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::instance::InstanceId;

/// One prediction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prediction {
    pub instance_id: InstanceId,
    pub model_name_or_path: String,
    /// Raw model output or a diff; `None` when the file had null or no value.
    pub model_patch: Option<String>,
}

impl Prediction {
    /// The model name as used in directory names: every `/` becomes `__` (§2.3).
    pub fn model_dir(&self) -> String {
        model_dir_name(&self.model_name_or_path)
    }

    /// True when there is nothing to apply (null, empty or whitespace-only patch).
    pub fn is_empty_patch(&self) -> bool {
        self.model_patch
            .as_deref()
            .is_none_or(|p| p.trim().is_empty())
    }
}

/// The longest model directory name ([`model_dir_name`]) in bytes: the run directory
/// `pred_post__<model>` must fit in a file name (255 bytes), and so must the run report
/// `<model>.<run id>.html` with a short run id. A longer run id leaves less room for the report;
/// `swtbench run` (and `validate --run-id`) check the pair.
pub const MAX_MODEL_DIR_BYTES: usize = 255 - "pred_post__".len();

/// `a/b` → `a__b`.
pub fn model_dir_name(model: &str) -> String {
    model.replace('/', "__")
}

/// Where in the input a record came from, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// 1-based line of a JSON Lines file.
    Line(usize),
    /// 0-based index into a JSON array.
    Index(usize),
    /// Key of a JSON object keyed by instance id.
    Key(String),
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Line(n) => write!(f, "line {n}"),
            Location::Index(i) => write!(f, "item {i} of the array"),
            Location::Key(k) => write!(f, "key {k:?}"),
        }
    }
}

/// Why a predictions file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PredictionError {
    #[error("{file}: {location}: not valid JSON: {detail}")]
    Syntax {
        file: String,
        location: Location,
        detail: String,
    },
    #[error("{file}: {location}: expected a JSON object, found {found}")]
    NotAnObject {
        file: String,
        location: Location,
        found: &'static str,
    },
    #[error("{file}: {location}: missing field `{field}`")]
    MissingField {
        file: String,
        location: Location,
        field: &'static str,
    },
    #[error("{file}: {location}: field `{field}` must be a string")]
    WrongType {
        file: String,
        location: Location,
        field: &'static str,
    },
    #[error("{file}: not valid JSON: {detail}")]
    Document { file: String, detail: String },
    #[error("{file}: a .json predictions file must hold a list or an object keyed by instance id")]
    BadShape { file: String },
    #[error("{file}: predictions from {count} models ({example}); a run evaluates one model")]
    MixedModels {
        file: String,
        /// Every model name, sorted, comma-separated.
        models: String,
        count: usize,
        /// Where the first two names appear, e.g. `line 1 has "a", line 7 has "b"`.
        example: String,
    },
    #[error("{file}: contains no predictions")]
    Empty { file: String },
    #[error(
        "{file}: holds a single prediction object; a .json predictions file holds a list of them \
         (`[{{…}}, …]`) or an object keyed by instance id"
    )]
    SingleRecord { file: String },
    #[error("{file}: {location}: `model_name_or_path` {name:?} {reason}")]
    BadModelName {
        file: String,
        location: Location,
        name: String,
        reason: &'static str,
    },
}

/// serde_json's message without its ` at line L column C` suffix, and the column.
fn split_json_error(e: &serde_json::Error) -> (String, usize) {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let msg = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
    (msg, e.column())
}

/// A parsed predictions file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PredictionSet {
    /// The one model name of the file (`gold` for gold predictions).
    pub model: String,
    pub predictions: BTreeMap<InstanceId, Prediction>,
    /// Non-fatal problems (duplicates), one sentence each.
    pub warnings: Vec<String>,
}

impl PredictionSet {
    /// Builds a set from records in file order: duplicates → warning, last wins.
    pub fn from_records(
        file: &str,
        records: Vec<(Location, Prediction)>,
    ) -> Result<PredictionSet, PredictionError> {
        if records.is_empty() {
            return Err(PredictionError::Empty {
                file: file.to_string(),
            });
        }
        let (first_at, first) = (&records[0].0, &records[0].1.model_name_or_path);
        if let Some((other_at, other)) =
            records.iter().find(|(_, p)| &p.model_name_or_path != first)
        {
            let mut models: Vec<&str> = records
                .iter()
                .map(|(_, p)| p.model_name_or_path.as_str())
                .collect();
            models.sort_unstable();
            models.dedup();
            return Err(PredictionError::MixedModels {
                file: file.to_string(),
                count: models.len(),
                models: models.join(", "),
                example: format!(
                    "{first_at} has {first:?}, {other_at} has {:?}",
                    other.model_name_or_path
                ),
            });
        }
        let model = first.clone();
        let mut set = PredictionSet {
            model,
            ..Default::default()
        };
        let mut first_seen: BTreeMap<InstanceId, Location> = BTreeMap::new();
        for (loc, p) in records {
            if let Some(prev) = first_seen.get(&p.instance_id) {
                set.warnings.push(format!(
                    "{file}: {loc}: duplicate prediction for {} (first at {prev}); the last one wins",
                    p.instance_id
                ));
            } else {
                first_seen.insert(p.instance_id.clone(), loc);
            }
            set.predictions.insert(p.instance_id.clone(), p);
        }
        Ok(set)
    }

    /// The directory name of the model (`/` → `__`).
    pub fn model_dir(&self) -> String {
        model_dir_name(&self.model)
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

fn record_from_object(
    file: &str,
    location: &Location,
    obj: &mut Map<String, Value>,
    key_id: Option<&str>,
) -> Result<Prediction, PredictionError> {
    let field_str = |field: &'static str| -> Result<Option<String>, PredictionError> {
        match obj.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(PredictionError::WrongType {
                file: file.to_string(),
                location: location.clone(),
                field,
            }),
        }
    };
    let missing = |field: &'static str| PredictionError::MissingField {
        file: file.to_string(),
        location: location.clone(),
        field,
    };
    let instance_id = match field_str("instance_id")? {
        Some(id) => id,
        None => key_id
            .map(str::to_string)
            .ok_or_else(|| missing("instance_id"))?,
    };
    let model = field_str("model_name_or_path")?.ok_or_else(|| missing("model_name_or_path"))?;
    // The name becomes a directory under the run's log directory.
    let bad_name = |reason: &'static str| PredictionError::BadModelName {
        file: file.to_string(),
        location: location.clone(),
        name: model.clone(),
        reason,
    };
    if model.trim().is_empty() {
        return Err(bad_name(
            "is empty; it names the output directory of the run",
        ));
    }
    if matches!(model_dir_name(&model).as_str(), "." | "..") {
        return Err(bad_name(
            "cannot be used: it names a directory (`.`/`..`) instead of a model",
        ));
    }
    if model.chars().any(char::is_control) {
        return Err(bad_name(
            "contains a control character (a newline, a tab, …); it names the output directory \
             and the rows of the reports, so it must be one line of text",
        ));
    }
    if model_dir_name(&model).len() > MAX_MODEL_DIR_BYTES {
        return Err(bad_name(
            "is too long: as a directory name (`/` → `__`) it must be at most 244 bytes, so \
             that the run directories `pred_post__<model>` fit in a file name",
        ));
    }
    field_str("model_patch")?;
    // Moved out rather than copied: a patch can be tens of megabytes.
    let model_patch = match obj.get_mut("model_patch") {
        Some(Value::String(s)) => Some(std::mem::take(s)),
        _ => None,
    };
    Ok(Prediction {
        instance_id: InstanceId(instance_id),
        model_name_or_path: model,
        model_patch,
    })
}

/// Parses a JSON Lines predictions file. Blank lines are skipped. A file that holds one JSON list
/// instead (a pretty-printed `.json` file under the wrong name) is read as such, with a warning.
pub fn parse_jsonl(file: &str, text: &str) -> Result<PredictionSet, PredictionError> {
    match parse_lines(file, text) {
        Err(e @ (PredictionError::Syntax { .. } | PredictionError::NotAnObject { .. }))
            if text.trim_start().starts_with('[') =>
        {
            match parse_json(file, text) {
                Ok(mut set) => {
                    set.warnings.insert(
                        0,
                        format!("{file}: read as a JSON list (the file holds one JSON document, not JSON Lines)"),
                    );
                    Ok(set)
                }
                Err(_) => Err(e),
            }
        }
        other => other,
    }
}

fn parse_lines(file: &str, text: &str) -> Result<PredictionSet, PredictionError> {
    let mut records = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let location = Location::Line(i + 1);
        let value: Value = serde_json::from_str(line).map_err(|e| {
            let (msg, column) = split_json_error(&e);
            PredictionError::Syntax {
                file: file.to_string(),
                location: location.clone(),
                detail: format!("{msg} (column {column})"),
            }
        })?;
        let mut value = value;
        let found = kind(&value);
        let Value::Object(obj) = &mut value else {
            return Err(PredictionError::NotAnObject {
                file: file.to_string(),
                location,
                found,
            });
        };
        let p = record_from_object(file, &location, obj, None)?;
        records.push((location, p));
    }
    PredictionSet::from_records(file, records)
}

/// Parses a `.json` predictions file: a list of records, or an object keyed by instance id. A file
/// that holds JSON Lines instead (what many tools write under a `.json` name) is read as such,
/// with a warning.
pub fn parse_json(file: &str, text: &str) -> Result<PredictionSet, PredictionError> {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let document = PredictionError::Document {
                file: file.to_string(),
                detail: e.to_string(),
            };
            // JSON Lines: the first line is a whole object by itself. Its own errors (which
            // name the line) are then more useful than "trailing characters at line 2".
            let first_line_is_object = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .and_then(|l| serde_json::from_str::<Value>(l).ok())
                .is_some_and(|v| v.is_object());
            if e.classify() == serde_json::error::Category::Syntax && first_line_is_object {
                let mut set = parse_lines(file, text)?;
                set.warnings.insert(
                    0,
                    format!("{file}: read as JSON Lines (one prediction per line), not as one JSON document"),
                );
                return Ok(set);
            }
            return Err(document);
        }
    };
    let mut records = Vec::new();
    let mut value = value;
    match &mut value {
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let location = Location::Index(i);
                let found = kind(item);
                let Value::Object(obj) = item else {
                    return Err(PredictionError::NotAnObject {
                        file: file.to_string(),
                        location,
                        found,
                    });
                };
                let p = record_from_object(file, &location, obj, None)?;
                records.push((location, p));
            }
        }
        Value::Object(map) => {
            let is_record = |k: &str| map.get(k).is_some_and(|v| !v.is_object());
            if is_record("instance_id") || is_record("model_name_or_path") {
                return Err(PredictionError::SingleRecord {
                    file: file.to_string(),
                });
            }
            for (k, item) in map.iter_mut() {
                let location = Location::Key(k.clone());
                let found = kind(item);
                let Value::Object(obj) = item else {
                    return Err(PredictionError::NotAnObject {
                        file: file.to_string(),
                        location,
                        found,
                    });
                };
                let p = record_from_object(file, &location, obj, Some(k))?;
                records.push((location, p));
            }
        }
        _ => {
            return Err(PredictionError::BadShape {
                file: file.to_string(),
            })
        }
    }
    PredictionSet::from_records(file, records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_third_line_broken_names_line_3() {
        let text = "{\"instance_id\":\"a\",\"model_name_or_path\":\"m\",\"model_patch\":\"x\"}\n\
                    {\"instance_id\":\"b\",\"model_name_or_path\":\"m\",\"model_patch\":\"y\"}\n\
                    {not json\n";
        let e = parse_jsonl("p.jsonl", text).unwrap_err();
        assert!(matches!(
            e,
            PredictionError::Syntax {
                location: Location::Line(3),
                ..
            }
        ));
        assert!(
            e.to_string().starts_with("p.jsonl: line 3: not valid JSON"),
            "{e}"
        );
    }

    #[test]
    fn duplicates_warn_last_wins_and_null_patch_kept() {
        let text = "{\"instance_id\":\"a\",\"model_name_or_path\":\"org/m\",\"model_patch\":\"x\"}\n\n\
                    {\"instance_id\":\"a\",\"model_name_or_path\":\"org/m\",\"model_patch\":null}\n";
        let set = parse_jsonl("p.jsonl", text).unwrap();
        assert_eq!(set.predictions.len(), 1);
        assert_eq!(set.warnings.len(), 1);
        assert!(set.warnings[0].contains("line 3"), "{}", set.warnings[0]);
        let p = &set.predictions[&InstanceId::from("a")];
        assert_eq!(p.model_patch, None);
        assert!(p.is_empty_patch());
        assert_eq!(set.model_dir(), "org__m");
    }

    #[test]
    fn json_list_and_object_forms() {
        let list = r#"[{"instance_id":"a","model_name_or_path":"m","model_patch":"p"}]"#;
        assert_eq!(parse_json("p.json", list).unwrap().predictions.len(), 1);
        let obj = r#"{"a":{"model_name_or_path":"m","model_patch":"p"},"b":{"instance_id":"b","model_name_or_path":"m"}}"#;
        let set = parse_json("p.json", obj).unwrap();
        assert_eq!(set.predictions.len(), 2);
        assert!(set.predictions[&InstanceId::from("b")]
            .model_patch
            .is_none());
        assert!(matches!(
            parse_json("p.json", "3"),
            Err(PredictionError::BadShape { .. })
        ));
    }

    #[test]
    fn jsonl_syntax_errors_give_the_column_not_a_second_line_number() {
        let text = "{\"instance_id\":\"a\",\"model_name_or_path\":\"m\"}\n\n{not json}\n";
        let e = parse_jsonl("p.jsonl", text).unwrap_err();
        assert_eq!(
            e.to_string(),
            "p.jsonl: line 3: not valid JSON: key must be a string (column 2)"
        );
    }

    #[test]
    fn json_and_jsonl_in_the_wrong_file_are_read_with_a_warning() {
        let a = r#"{"instance_id":"a","model_name_or_path":"m","model_patch":"x"}"#;
        let b = r#"{"instance_id":"b","model_name_or_path":"m","model_patch":"y"}"#;
        // JSON Lines in a .json file (a common mistake).
        let set = parse_json("p.json", &format!("{a}\r\n{b}\r\n")).unwrap();
        assert_eq!(set.predictions.len(), 2);
        assert!(
            set.warnings
                .iter()
                .any(|w| w.contains("read as JSON Lines")),
            "{:?}",
            set.warnings
        );
        // A pretty-printed list in a .jsonl file.
        let set = parse_jsonl("p.jsonl", &format!("[\n  {a},\n  {b}\n]\n")).unwrap();
        assert_eq!(set.predictions.len(), 2);
        let one_line = parse_jsonl("p.jsonl", &format!("[{a}, {b}]")).unwrap();
        assert_eq!(one_line.predictions, set.predictions);
        assert!(
            set.warnings
                .iter()
                .any(|w| w.contains("read as a JSON list")),
            "{:?}",
            set.warnings
        );
        // Broken either way: the error is the one of the declared format.
        let e = parse_jsonl("p.jsonl", "[\n{\"instance_id\": \n]").unwrap_err();
        assert!(e.to_string().starts_with("p.jsonl: line 1: "), "{e}");
        // JSON Lines in a .json file with a broken line: the error names that line.
        let e = parse_json("p.json", &format!("{a}\n{b}\n{{oops\n")).unwrap_err();
        assert!(
            e.to_string().starts_with("p.json: line 3: not valid JSON"),
            "{e}"
        );
        let e = parse_json("p.json", "[{\"instance_id\": \"a\"},\n{oops\n").unwrap_err();
        assert!(matches!(e, PredictionError::Document { .. }), "{e}");
    }

    #[test]
    fn a_single_record_in_a_json_file_is_explained() {
        let e = parse_json(
            "p.json",
            r#"{"instance_id":"a","model_name_or_path":"m","model_patch":"x"}"#,
        )
        .unwrap_err();
        assert!(matches!(e, PredictionError::SingleRecord { .. }), "{e}");
        assert!(e.to_string().contains("[{"), "{e}");
    }

    #[test]
    fn model_names_that_cannot_name_a_directory_are_errors() {
        for (model, why) in [
            ("", "empty"),
            ("  ", "empty"),
            (".", "directory"),
            ("..", "directory"),
            ("line1\nline2", "control character"),
            ("tab\there", "control character"),
        ] {
            let line = format!(
                "{{\"instance_id\":\"a\",\"model_name_or_path\":{model:?},\"model_patch\":\"x\"}}"
            );
            let e = parse_jsonl("p.jsonl", &line).unwrap_err();
            assert!(
                matches!(e, PredictionError::BadModelName { .. }) && e.to_string().contains(why),
                "{model:?}: {e}"
            );
            assert!(e.to_string().starts_with("p.jsonl: line 1: "), "{e}");
        }
        // The length counts the directory name: each `/` becomes two bytes.
        let longest = "m".repeat(MAX_MODEL_DIR_BYTES);
        let at = |m: &str| {
            parse_jsonl(
                "p",
                &format!("{{\"instance_id\":\"a\",\"model_name_or_path\":{m:?}}}"),
            )
        };
        assert!(at(&longest).is_ok());
        let e = at(&format!("{longest}m")).unwrap_err();
        assert!(e.to_string().contains("at most 244 bytes"), "{e}");
        let slashed = format!("{}/", &longest[..MAX_MODEL_DIR_BYTES - 1]);
        assert!(at(&slashed).is_err(), "`/` counts as `__`");
        // `/` is fine: it becomes `__` in paths.
        let ok = r#"{"instance_id":"a","model_name_or_path":"org/m.v2","model_patch":"x"}"#;
        assert_eq!(parse_jsonl("p", ok).unwrap().model_dir(), "org__m.v2");
    }

    #[test]
    fn field_errors_and_mixed_models() {
        let e = parse_jsonl("p", "{\"instance_id\":\"a\"}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "p: line 1: missing field `model_name_or_path`"
        );
        let e = parse_jsonl("p", "{\"instance_id\":1,\"model_name_or_path\":\"m\"}").unwrap_err();
        assert!(matches!(
            e,
            PredictionError::WrongType {
                field: "instance_id",
                ..
            }
        ));
        let text = "{\"instance_id\":\"a\",\"model_name_or_path\":\"m1\"}\n{\"instance_id\":\"b\",\"model_name_or_path\":\"m2\"}";
        let e = parse_jsonl("p", text).unwrap_err();
        assert!(matches!(e, PredictionError::MixedModels { .. }), "{e}");
        assert!(
            e.to_string()
                .contains("line 1 has \"m1\", line 2 has \"m2\""),
            "{e}"
        );
        assert!(matches!(
            parse_jsonl("p", "\n\n"),
            Err(PredictionError::Empty { .. })
        ));
    }
}
