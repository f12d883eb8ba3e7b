//! Predictions loading against real datasets: gold, JSON Lines and JSON files, and the policy for
//! unknown, excluded, duplicate and empty predictions.

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use swtbench_data::http::{HttpConfig, ProxySetting};
use swtbench_data::hub::{Hub, HubConfig};
use swtbench_data::predictions::{load_predictions, PredictionsError, PredictionsSource};
use swtbench_data::{load_dataset, LoadOptions, LoadedDataset};

fn offline_hub(cache: &Path) -> Hub {
    Hub::new(
        HubConfig {
            endpoint: "http://127.0.0.1:9".to_string(),
            token: None,
            cache_dir: cache.to_path_buf(),
        },
        HttpConfig {
            retries: 0,
            backoff: Duration::from_millis(1),
            proxy: ProxySetting::Direct,
            ..HttpConfig::default()
        },
    )
    .unwrap()
}

fn lite(filter_swt: bool, ids: &[&str]) -> LoadedDataset {
    let dir = tempfile::tempdir().unwrap();
    let mut o = LoadOptions::new("lite");
    o.offline = true;
    o.filter_swt = filter_swt;
    o.instance_ids = ids.iter().map(|s| s.to_string()).collect();
    load_dataset(&o, &offline_hub(dir.path()), None).unwrap()
}

fn pred(id: &str, patch: serde_json::Value) -> String {
    json!({"instance_id": id, "model_name_or_path": "org/model-1", "model_patch": patch})
        .to_string()
}

#[test]
fn gold_predictions_are_the_gold_test_patches() {
    let d = lite(true, &[]);
    let p = load_predictions(&PredictionsSource::parse("gold"), &d).unwrap();
    assert_eq!(p.model, "gold");
    assert!(p.is_gold());
    assert_eq!(p.predictions.len(), 276);
    assert!(p.unknown.is_empty() && p.missing.is_empty() && p.excluded.is_empty());
    for i in &d.instances {
        let pr = &p.predictions[&i.instance_id];
        assert_eq!(
            pr.model_patch.as_deref(),
            Some(i.golden_test_patch.as_str())
        );
        assert_eq!(pr.model_name_or_path, "gold");
    }
    assert!(p.empty_patches().is_empty());
}

#[test]
fn jsonl_policy_unknown_excluded_duplicate_and_empty() {
    let d = lite(true, &[]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("preds.jsonl");
    let lines = [
        pred("django__django-11099", json!("diff --git a/x b/x")),
        pred("nobody__nothing-1", json!("diff")),
        // In Lite, but removed by the SWT filter list.
        pred("django__django-13658", json!("diff")),
        pred("sympy__sympy-20590", json!(null)),
        pred("astropy__astropy-12907", json!("first")),
        String::new(),
        pred("astropy__astropy-12907", json!("  \n")),
    ];
    std::fs::write(&path, lines.join("\n")).unwrap();
    let p = load_predictions(&PredictionsSource::parse(path.to_str().unwrap()), &d).unwrap();
    assert_eq!(p.model, "org/model-1");
    assert_eq!(p.model_dir(), "org__model-1");
    assert_eq!(p.predictions.len(), 3);
    assert_eq!(p.unknown.len(), 1);
    assert_eq!(p.unknown[0].as_str(), "nobody__nothing-1");
    assert_eq!(p.excluded.len(), 1);
    assert_eq!(p.missing.len(), 276 - 3);
    // Duplicate: warning naming both lines, last wins (blank patch → empty).
    assert!(
        p.warnings.iter().any(|w| w.contains("line 7")
            && w.contains("line 5")
            && w.contains("astropy__astropy-12907")),
        "{:?}",
        p.warnings
    );
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("nobody__nothing-1") && !w.contains("another --dataset")),
        "{:?}",
        p.warnings
    );
    // When most ids are unknown, the warning suspects the wrong dataset.
    let other = dir.path().join("other.jsonl");
    let lines = [
        pred("django__django-11099", json!("x")),
        pred("acme__tool-1", json!("x")),
        pred("acme__tool-2", json!("x")),
    ];
    std::fs::write(&other, lines.join("\n")).unwrap();
    let p2 = load_predictions(&PredictionsSource::parse(other.to_str().unwrap()), &d).unwrap();
    assert!(
        p2.warnings
            .iter()
            .any(|w| w.contains("2 prediction(s)") && w.contains("another --dataset or --split")),
        "{:?}",
        p2.warnings
    );
    let empty: Vec<&str> = p.empty_patches().iter().map(|i| i.as_str()).collect();
    assert_eq!(empty, ["astropy__astropy-12907", "sympy__sympy-20590"]);
}

#[test]
fn malformed_files_name_file_line_and_field() {
    let d = lite(false, &["django__django-11099"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.jsonl");
    let text = format!(
        "{}\n{}\n{{\"instance_id\": oops}}\n",
        pred("django__django-11099", json!("x")),
        pred("sympy__sympy-20590", json!("y"))
    );
    std::fs::write(&path, text).unwrap();
    let e = load_predictions(&PredictionsSource::parse(path.to_str().unwrap()), &d).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("broken.jsonl: line 3: not valid JSON"),
        "{msg}"
    );

    std::fs::write(&path, "{\"instance_id\": \"a\", \"model_patch\": \"x\"}\n").unwrap();
    let e = load_predictions(&PredictionsSource::parse(path.to_str().unwrap()), &d).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("line 1: missing field `model_name_or_path`"),
        "{e}"
    );

    let mixed = format!(
        "{}\n{}\n",
        pred("a", json!("x")),
        json!({"instance_id": "b", "model_name_or_path": "other", "model_patch": "y"})
    );
    std::fs::write(&path, mixed).unwrap();
    let e = load_predictions(&PredictionsSource::parse(path.to_str().unwrap()), &d).unwrap_err();
    assert!(
        e.to_string()
            .contains("from 2 models (line 1 has \"org/model-1\", line 2 has \"other\")"),
        "{e}"
    );

    let other = dir.path().join("preds.txt");
    std::fs::write(&other, "x").unwrap();
    let e = load_predictions(&PredictionsSource::parse(other.to_str().unwrap()), &d).unwrap_err();
    assert!(matches!(e, PredictionsError::UnknownFormat { .. }), "{e}");
    let e = load_predictions(
        &PredictionsSource::parse(dir.path().join("absent.jsonl").to_str().unwrap()),
        &d,
    )
    .unwrap_err();
    assert!(matches!(e, PredictionsError::NotFound { .. }), "{e}");
}

#[test]
fn json_list_and_object_forms() {
    let d = lite(false, &["django__django-11099", "sympy__sympy-20590"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("preds.json");
    let list = json!([
        {"instance_id": "django__django-11099", "model_name_or_path": "m", "model_patch": "p1", "full_output": "..."},
        {"instance_id": "sympy__sympy-20590", "model_name_or_path": "m", "model_patch": "p2"}
    ]);
    std::fs::write(&path, list.to_string()).unwrap();
    let p = load_predictions(&PredictionsSource::parse(path.to_str().unwrap()), &d).unwrap();
    assert_eq!(p.predictions.len(), 2);
    let obj = json!({
        "django__django-11099": {"model_name_or_path": "m", "model_patch": "p1"},
        // Not selected by --instance-ids: skipped without a warning.
        "astropy__astropy-12907": {"model_name_or_path": "m", "model_patch": "p3"}
    });
    std::fs::write(&path, obj.to_string()).unwrap();
    let p = load_predictions(&PredictionsSource::parse(path.to_str().unwrap()), &d).unwrap();
    assert_eq!(p.predictions.len(), 1);
    assert_eq!(p.excluded.len(), 1);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert_eq!(p.missing.len(), 1);
    assert_eq!(p.missing[0].as_str(), "sympy__sympy-20590");
}

#[test]
fn awkward_files_bom_crlf_wrong_extension_and_bad_bytes() {
    let d = lite(false, &["django__django-11099", "sympy__sympy-20590"]);
    let dir = tempfile::tempdir().unwrap();
    let load = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        load_predictions(&PredictionsSource::parse(path.to_str().unwrap()), &d)
    };
    let a = pred("django__django-11099", json!("p1"));
    let b = pred("sympy__sympy-20590", json!("p2"));

    // A byte order mark and CRLF line ends (Windows editors) change nothing.
    let p = load(
        "with spaces & bom.jsonl",
        format!("\u{feff}{a}\r\n\r\n{b}\r\n").as_bytes(),
    )
    .unwrap();
    assert_eq!(p.predictions.len(), 2);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);

    // JSON Lines saved as .json, and a JSON list saved as .jsonl: read, with a warning.
    let p = load("lines.json", format!("{a}\n{b}\n").as_bytes()).unwrap();
    assert_eq!(p.predictions.len(), 2);
    assert!(
        p.warnings[0].contains("read as JSON Lines"),
        "{:?}",
        p.warnings
    );
    let p = load("list.jsonl", format!("[\n{a},\n{b}\n]").as_bytes()).unwrap();
    assert_eq!(p.predictions.len(), 2);
    assert!(p.warnings[0].contains("JSON list"), "{:?}", p.warnings);

    // An invalid byte is located.
    let mut bytes = format!("{a}\n").into_bytes();
    bytes.extend_from_slice(b"{\"instance_id\": \"\xff\"}\n");
    let e = load("latin1.jsonl", &bytes).unwrap_err();
    assert!(
        matches!(e, PredictionsError::NotText { line: 2, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("line 2"), "{e}");

    // An empty file and a model name that cannot be a directory are errors.
    let e = load("empty.jsonl", b"").unwrap_err();
    assert!(e.to_string().contains("contains no predictions"), "{e}");
    let e = load(
        "noname.jsonl",
        json!({"instance_id": "django__django-11099", "model_name_or_path": "", "model_patch": "x"})
            .to_string()
            .as_bytes(),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("line 1: `model_name_or_path`"),
        "{e}"
    );
}
