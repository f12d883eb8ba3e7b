//! Dataset loading end to end: embedded copies, local files of every format, validation, the SWT
//! filter, selections, the patch layouts, and the Hugging Face hub path against a local server.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::support::{Response, Server};
use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, LargeStringArray, RecordBatch, StringArray, TimestampSecondArray};
use parquet::arrow::ArrowWriter;
use serde_json::{json, Value};
use swtbench_core::PatchLayout;
use swtbench_data::dataset::{DatasetOrigin, Exclusion};
use swtbench_data::http::{HttpConfig, ProxySetting};
use swtbench_data::hub::{Hub, HubConfig, HubError};
use swtbench_data::{load_dataset, DatasetError, LoadOptions, SwtFilter};

fn fixture_rows() -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lite_sample.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn test_http() -> HttpConfig {
    HttpConfig {
        retries: 2,
        backoff: Duration::from_millis(5),
        connect_timeout: Duration::from_secs(5),
        read_timeout: Duration::from_secs(5),
        proxy: ProxySetting::Direct,
        ..HttpConfig::default()
    }
}

fn hub_at(endpoint: &str, cache: &Path, token: Option<&str>) -> Hub {
    Hub::new(
        HubConfig {
            endpoint: endpoint.to_string(),
            token: token.map(str::to_string),
            cache_dir: cache.to_path_buf(),
        },
        test_http(),
    )
    .unwrap()
}

/// A hub nobody listens on: connections are refused.
fn dead_hub(cache: &Path) -> Hub {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    hub_at(&format!("http://127.0.0.1:{port}"), cache, None)
}

fn opts(dataset: &str) -> LoadOptions {
    LoadOptions::new(dataset)
}

fn write_jsonl(path: &Path, rows: &[Value]) {
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// Writes the rows as Parquet the way the hub's conversion does, with two twists that must be
/// read back as JSON: FAIL_TO_PASS as a list column, PASS_TO_PASS as a large string, and
/// created_at as a timestamp.
fn write_parquet(path: &Path, rows: &[Value]) {
    let batch = parquet_batch(rows);
    let file = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn parquet_batch(rows: &[Value]) -> RecordBatch {
    let s = |k: &str| -> ArrayRef {
        Arc::new(StringArray::from(
            rows.iter()
                .map(|r| r[k].as_str().map(str::to_string))
                .collect::<Vec<_>>(),
        ))
    };
    let mut f2p = ListBuilder::new(StringBuilder::new());
    for r in rows {
        let list: Vec<String> = serde_json::from_str(r["FAIL_TO_PASS"].as_str().unwrap()).unwrap();
        for t in list {
            f2p.values().append_value(t);
        }
        f2p.append(true);
    }
    let p2p: ArrayRef = Arc::new(LargeStringArray::from(
        rows.iter()
            .map(|r| r["PASS_TO_PASS"].as_str().unwrap().to_string())
            .collect::<Vec<_>>(),
    ));
    let created: ArrayRef = Arc::new(
        TimestampSecondArray::from(vec![1_600_000_000i64; rows.len()]).with_timezone("UTC"),
    );
    RecordBatch::try_from_iter(vec![
        ("repo", s("repo")),
        ("instance_id", s("instance_id")),
        ("base_commit", s("base_commit")),
        ("patch", s("patch")),
        ("test_patch", s("test_patch")),
        ("problem_statement", s("problem_statement")),
        ("version", s("version")),
        ("environment_setup_commit", s("environment_setup_commit")),
        ("FAIL_TO_PASS", Arc::new(f2p.finish()) as ArrayRef),
        ("PASS_TO_PASS", p2p),
        ("created_at", created),
    ])
    .unwrap()
}

#[test]
fn embedded_copies_with_and_without_the_swt_filter() {
    let cache = tempfile::tempdir().unwrap();
    let hub = dead_hub(cache.path());
    for (alias, all, swt) in [("lite", 300, 276), ("VERIFIED", 500, 433)] {
        let mut o = opts(alias);
        o.offline = true;
        let d = load_dataset(&o, &hub, None).unwrap();
        assert_eq!(d.instances.len(), all, "{alias}");
        assert!(matches!(d.origin, DatasetOrigin::Embedded { .. }));
        assert!(d.problems.is_empty(), "{:?}", d.problems.first());
        assert!(d
            .instances
            .windows(2)
            .all(|w| w[0].instance_id < w[1].instance_id));
        assert!(!d.filter_applied);
        o.filter_swt = true;
        let d = load_dataset(&o, &hub, None).unwrap();
        assert_eq!(d.instances.len(), swt, "{alias} --filter-swt");
        assert_eq!(d.excluded.len(), all - swt);
        assert!(d.filter_applied);
        assert_eq!(d.layout, PatchLayout::Swebench);
        assert!(d
            .excluded
            .values()
            .all(|e| matches!(e, Exclusion::SwtFilter(_))));
    }
    let mut o = opts("verified");
    o.offline = true;
    let d = load_dataset(&o, &hub, None).unwrap();
    // Null environment_setup_commit falls back to base_commit.
    let i = d.get("pylint-dev__pylint-4551").unwrap();
    assert_eq!(i.environment_setup_commit, i.base_commit);
    assert!(!i.fail_to_pass.is_empty());
}

#[test]
fn full_offline_without_a_cached_download_is_a_clear_error() {
    let cache = tempfile::tempdir().unwrap();
    let hub = dead_hub(cache.path());
    let mut o = opts("full");
    o.offline = true;
    let e = load_dataset(&o, &hub, None).unwrap_err();
    assert!(matches!(e, DatasetError::NotOffline { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("princeton-nlp/SWE-bench") && msg.contains("no embedded copy"),
        "{msg}"
    );
}

#[test]
fn unreachable_hub_falls_back_to_the_embedded_copy_with_a_note() {
    let cache = tempfile::tempdir().unwrap();
    let hub = dead_hub(cache.path());
    let mut o = opts("princeton-nlp/SWE-bench_Lite");
    o.filter_swt = true;
    let d = load_dataset(&o, &hub, None).unwrap();
    assert_eq!(d.instances.len(), 276);
    assert!(matches!(d.origin, DatasetOrigin::Embedded { .. }));
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("could not be reached") && n.contains("embedded")),
        "{:?}",
        d.notes
    );
    // The full dataset has nothing to fall back to.
    let e = load_dataset(&opts("full"), &hub, None).unwrap_err();
    assert!(matches!(e, DatasetError::Hub { .. }), "{e}");
}

#[test]
fn local_files_in_every_format_give_the_same_instances() {
    let rows = fixture_rows();
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("sample.jsonl");
    write_jsonl(&jsonl, &rows);
    let json = dir.path().join("sample.json");
    std::fs::write(&json, serde_json::to_string(&rows).unwrap()).unwrap();
    let parquet = dir.path().join("sample.parquet");
    write_parquet(&parquet, &rows);
    let hub = dead_hub(dir.path());

    let mut loaded = Vec::new();
    for p in [&jsonl, &json, &parquet] {
        let d = load_dataset(&opts(p.to_str().unwrap()), &hub, None).unwrap();
        assert!(d.problems.is_empty(), "{p:?}: {:?}", d.problems);
        assert_eq!(d.instances.len(), 4, "{p:?}");
        assert_eq!(d.origin, DatasetOrigin::File(p.to_path_buf()));
        loaded.push(d);
    }
    let first = &loaded[0].instances;
    for d in &loaded[1..] {
        for (a, b) in first.iter().zip(&d.instances) {
            assert_eq!(a.instance_id, b.instance_id);
            assert_eq!(a.golden_code_patch, b.golden_code_patch);
            assert_eq!(a.golden_test_patch, b.golden_test_patch);
            assert_eq!(a.fail_to_pass, b.fail_to_pass);
            assert_eq!(a.pass_to_pass, b.pass_to_pass);
            assert_eq!(a.version, b.version);
        }
    }
    // Parquet timestamps come back as ISO strings.
    let pq = &loaded[2].instances[0];
    assert_eq!(pq.extra["created_at"], json!("2020-09-13T12:26:40Z"));

    // A directory holding the split's file works too.
    let sub = dir.path().join("ds/data");
    std::fs::create_dir_all(&sub).unwrap();
    write_parquet(&sub.join("test-00000-of-00001.parquet"), &rows);
    write_jsonl(&sub.join("dev.jsonl"), &rows[..1]);
    let d = load_dataset(&opts(dir.path().join("ds").to_str().unwrap()), &hub, None).unwrap();
    assert_eq!(d.instances.len(), 4);
    // A split the directory does not have: the error lists what is there.
    let mut o = opts(dir.path().join("ds").to_str().unwrap());
    o.split = "train".into();
    let e = load_dataset(&o, &hub, None).unwrap_err();
    assert!(matches!(e, DatasetError::EmptyDir { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("it has: data/dev.jsonl, data/test-00000-of-00001.parquet"),
        "{e}"
    );

    // A `datasets.save_to_disk` directory: `<split>/data-*.arrow` in the Arrow stream format.
    let saved = dir.path().join("saved");
    std::fs::create_dir_all(saved.join("test")).unwrap();
    std::fs::write(saved.join("dataset_dict.json"), r#"{"splits": ["test"]}"#).unwrap();
    std::fs::write(saved.join("test/state.json"), "{}").unwrap();
    let batch = parquet_batch(&rows);
    let file = std::fs::File::create(saved.join("test/data-00000-of-00001.arrow")).unwrap();
    let mut w = arrow_ipc::writer::StreamWriter::try_new(file, &batch.schema()).unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();
    let d = load_dataset(&opts(saved.to_str().unwrap()), &hub, None).unwrap();
    assert_eq!(d.instances.len(), 4);
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    assert_eq!(
        d.instances[0].fail_to_pass,
        loaded[0].instances[0].fail_to_pass
    );

    // --filter-swt on a file infers the list from the ids (all are Lite instances).
    let mut o = opts(jsonl.to_str().unwrap());
    o.filter_swt = true;
    let d = load_dataset(&o, &hub, None).unwrap();
    assert_eq!(d.filter, Some(SwtFilter::Lite));
    assert_eq!(d.instances.len(), 3);
    assert!(d.get("django__django-13658").is_none());
    assert!(
        d.notes.iter().any(|n| n.contains("lite filter list")),
        "{:?}",
        d.notes
    );
    o.filter_list = Some(SwtFilter::Verified);
    let d = load_dataset(&o, &hub, None).unwrap();
    assert_eq!(d.filter, Some(SwtFilter::Verified));
}

#[test]
fn broken_files_are_errors_that_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let hub = dead_hub(dir.path());
    let rows = fixture_rows();
    let p = dir.path().join("broken.jsonl");
    let mut text: String = rows[..2].iter().map(|r| format!("{r}\n")).collect();
    text.push_str("{\"instance_id\": \n");
    std::fs::write(&p, text).unwrap();
    let e = load_dataset(&opts(p.to_str().unwrap()), &hub, None).unwrap_err();
    assert!(e.to_string().contains("broken.jsonl: line 3"), "{e}");

    let missing = dir.path().join("nope.jsonl");
    let e = load_dataset(&opts(missing.to_str().unwrap()), &hub, None).unwrap_err();
    assert!(matches!(e, DatasetError::FileNotFound { .. }), "{e}");
    // A missing directory is not sent to the hub (which is dead here: that error would differ).
    let missing = dir.path().join("no such dir");
    let e = load_dataset(&opts(missing.to_str().unwrap()), &hub, None).unwrap_err();
    assert!(matches!(e, DatasetError::FileNotFound { .. }), "{e}");
    assert!(e.to_string().contains("no such dir"), "{e}");

    let p = dir.path().join("bad.parquet");
    std::fs::write(&p, b"PAR1 not really").unwrap();
    let e = load_dataset(&opts(p.to_str().unwrap()), &hub, None).unwrap_err();
    assert!(e.to_string().contains("bad.parquet: Parquet"), "{e}");
}

#[test]
fn invalid_rows_and_duplicates_are_problems_naming_instance_and_field() {
    let mut rows = fixture_rows();
    rows[1].as_object_mut().unwrap().remove("base_commit");
    rows[2]["FAIL_TO_PASS"] = json!("[broken");
    let dup = rows[0].clone();
    rows.push(dup);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.jsonl");
    write_jsonl(&p, &rows);
    let hub = dead_hub(dir.path());
    let d = load_dataset(&opts(p.to_str().unwrap()), &hub, None).unwrap();
    assert_eq!(d.instances.len(), 2);
    assert_eq!(d.problems.len(), 3, "{:?}", d.problems);
    let by_field = |f: &str| {
        d.problems
            .iter()
            .find(|p| p.field.as_deref() == Some(f))
            .unwrap()
    };
    let p = by_field("base_commit");
    assert_eq!(p.instance.as_deref(), Some("django__django-16046"));
    assert!(p.to_string().contains("d.jsonl: line 2"), "{p}");
    assert!(p.to_string().contains("`base_commit`"), "{p}");
    assert_eq!(
        by_field("FAIL_TO_PASS").instance.as_deref(),
        Some("scikit-learn__scikit-learn-13584")
    );
    let p = by_field("instance_id");
    assert!(
        p.message.contains("duplicate") && p.message.contains("line 1"),
        "{p}"
    );

    // The version hook adds instance-level problems.
    let mut d = d;
    let n = d.check("version", &|i| {
        (i.repo == "sympy/sympy").then(|| format!("version {} is not in the spec table", i.version))
    });
    assert_eq!(n, 1);
    let e = d.into_valid().unwrap_err();
    assert!(e.to_string().contains("4 invalid instance(s)"), "{e}");
}

#[test]
fn instance_id_selection() {
    let dir = tempfile::tempdir().unwrap();
    let hub = dead_hub(dir.path());
    let mut o = opts("lite");
    o.offline = true;
    o.filter_swt = true;
    o.instance_ids = vec!["sympy__sympy-20590,django__django-11099".into()];
    let d = load_dataset(&o, &hub, None).unwrap();
    let ids: Vec<&str> = d.instances.iter().map(|i| i.instance_id.as_str()).collect();
    assert_eq!(ids, ["django__django-11099", "sympy__sympy-20590"]);
    assert_eq!(d.excluded.len(), 298);

    o.instance_ids = vec!["django__django-13658".into(), "nope__nope-1".into()];
    let e = load_dataset(&o, &hub, None).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("django__django-13658 (excluded by the SWT filter list lite)"),
        "{msg}"
    );
    assert!(msg.contains("nope__nope-1"), "{msg}");

    // An empty selection (`--instance-ids "$UNSET"`) is an error, not "everything".
    o.instance_ids = vec![String::new()];
    let e = load_dataset(&o, &hub, None).unwrap_err();
    assert!(matches!(e, DatasetError::NoInstanceIds), "{e}");
    o.instance_ids = vec![" , ".into()];
    assert!(matches!(
        load_dataset(&o, &hub, None),
        Err(DatasetError::NoInstanceIds)
    ));
}

fn wrap(p: &str) -> String {
    format!("<patch>\n{p}\n</patch>")
}

#[test]
fn text_and_swapped_swt_layouts_are_detected_per_dataset() {
    let rows = fixture_rows();
    let dir = tempfile::tempdir().unwrap();
    let hub = dead_hub(dir.path());

    // SWE-bench text/RAG: `patch` wrapped, not swapped.
    let text_rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r["patch"] = json!(wrap(r["patch"].as_str().unwrap()));
            r
        })
        .collect();
    let p = dir.path().join("text.jsonl");
    write_jsonl(&p, &text_rows);
    let mut o = opts(p.to_str().unwrap());
    o.is_swt = true;
    let d = load_dataset(&o, &hub, None).unwrap();
    assert_eq!(d.layout, PatchLayout::SweText);
    let orig = &rows[0];
    let i = d.get(orig["instance_id"].as_str().unwrap()).unwrap();
    assert_eq!(i.golden_code_patch, orig["patch"].as_str().unwrap());
    assert_eq!(i.golden_test_patch, orig["test_patch"].as_str().unwrap());
    assert!(d.notes.is_empty(), "{:?}", d.notes);
    // Without --is-swt the wrapping is noticed and handled, with a note.
    let d = load_dataset(&opts(p.to_str().unwrap()), &hub, None).unwrap();
    assert_eq!(d.layout, PatchLayout::SweText);
    assert!(
        d.notes.iter().any(|n| n.contains("<patch>")),
        "{:?}",
        d.notes
    );

    // Published SWT-Bench: `patch` = wrapped gold tests, `test_patch` = gold code fix.
    let swt_rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            let mut r = r.clone();
            let code = r["patch"].as_str().unwrap().to_string();
            let tests = r["test_patch"].as_str().unwrap().to_string();
            r["patch"] = json!(wrap(&tests));
            r["test_patch"] = json!(code);
            r
        })
        .collect();
    let p = dir.path().join("swt.jsonl");
    write_jsonl(&p, &swt_rows);
    let mut o = opts(p.to_str().unwrap());
    o.is_swt = true;
    let d = load_dataset(&o, &hub, None).unwrap();
    assert_eq!(d.layout, PatchLayout::SwtSwapped);
    let i = d.get(orig["instance_id"].as_str().unwrap()).unwrap();
    assert_eq!(i.golden_code_patch, orig["patch"].as_str().unwrap());
    assert_eq!(i.golden_test_patch, orig["test_patch"].as_str().unwrap());
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("published SWT-Bench layout (4 of 4 rows)")),
        "{:?}",
        d.notes
    );

    // One wrapped row in a plain dataset: that row is a problem on `patch`, the others load.
    let mut mixed = rows.clone();
    mixed[1]["patch"] = json!(wrap(rows[1]["patch"].as_str().unwrap()));
    let p = dir.path().join("mixed.jsonl");
    write_jsonl(&p, &mixed);
    let d = load_dataset(&opts(p.to_str().unwrap()), &hub, None).unwrap();
    assert_eq!(d.layout, PatchLayout::Swebench);
    assert_eq!(d.instances.len(), 3);
    assert_eq!(d.problems.len(), 1, "{:?}", d.problems);
    assert_eq!(d.problems[0].field.as_deref(), Some("patch"));
    assert_eq!(
        d.problems[0].instance.as_deref(),
        rows[1]["instance_id"].as_str()
    );
    assert!(
        d.problems[0].to_string().contains("line 2"),
        "{}",
        d.problems[0]
    );

    // --is-swt on a plain dataset: nothing is cut off, and the user is told.
    let mut o = opts("lite");
    o.offline = true;
    o.is_swt = true;
    let d = load_dataset(&o, &hub, None).unwrap();
    assert_eq!(d.layout, PatchLayout::Swebench);
    assert!(
        d.notes.iter().any(|n| n.contains("--is-swt")),
        "{:?}",
        d.notes
    );
}

/// A fake hub: the Parquet conversion listing, two Parquet files (the split in two shards), an
/// optional token requirement, and one 503 before the first file succeeds.
fn parquet_hub(dir: &Path, token: Option<&'static str>) -> (Server, Vec<Value>) {
    let rows = fixture_rows();
    let a = dir.join("a.parquet");
    let b = dir.join("b.parquet");
    write_parquet(&a, &rows[..2]);
    write_parquet(&b, &rows[2..]);
    let a = std::fs::read(a).unwrap();
    let b = std::fs::read(b).unwrap();
    let base: Arc<std::sync::OnceLock<String>> = Arc::default();
    let base2 = base.clone();
    let server = Server::start(move |req, seen| {
        if let Some(t) = token {
            if req.headers.get("authorization").map(String::as_str) != Some(&format!("Bearer {t}"))
            {
                return Response::status(401);
            }
        }
        let base = base2.get().cloned().unwrap_or_default();
        match req.path.as_str() {
            "/api/datasets/acme/bench/parquet" => Response::ok(
                json!({"default": {
                    "test": [format!("{base}/files/test/0.parquet"), format!("{base}/files/test/1.parquet")],
                    "dev": [format!("{base}/files/dev/0.parquet")]
                }})
                .to_string(),
            )
            .header("ETag", "\"listing-1\""),
            "/files/test/0.parquet" if seen == 0 => Response::status(503),
            "/files/test/0.parquet" => Response::ok(a.clone()).header("ETag", "\"a\""),
            "/files/test/1.parquet" => Response::ok(b.clone()).header("ETag", "\"b\""),
            _ => Response::status(404),
        }
    });
    base.set(server.base.clone()).unwrap();
    (server, rows)
}

#[test]
fn hub_download_through_the_parquet_listing_with_cache_token_and_retry() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let (server, rows) = parquet_hub(dir.path(), Some("hf_test_token"));
    let hub = hub_at(&server.base, &cache, Some("hf_test_token"));

    let mut progress_calls = 0usize;
    let mut progress = |_url: &str, _done: u64, _total: Option<u64>| progress_calls += 1;
    let d = load_dataset(&opts("acme/bench"), &hub, Some(&mut progress)).unwrap();
    assert_eq!(d.instances.len(), rows.len());
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    assert!(progress_calls >= 2);
    let DatasetOrigin::Hub {
        files, from_cache, ..
    } = &d.origin
    else {
        panic!("{:?}", d.origin)
    };
    assert_eq!(files.len(), 2);
    assert!(!from_cache);
    // One 503, then success.
    assert_eq!(server.count("/files/test/0.parquet"), 2);
    assert!(server.requests().iter().all(
        |r| r.headers.get("authorization").map(String::as_str) == Some("Bearer hf_test_token")
    ));

    // Second load: everything from the cache, no request at all.
    let before = server.requests().len();
    let d2 = load_dataset(&opts("acme/bench"), &hub, None).unwrap();
    assert_eq!(d2.instances.len(), rows.len());
    assert_eq!(server.requests().len(), before);
    assert!(matches!(
        d2.origin,
        DatasetOrigin::Hub {
            from_cache: true,
            ..
        }
    ));

    // Offline works from the cache too; an uncached split offline is a clear error.
    let mut o = opts("acme/bench");
    o.offline = true;
    assert_eq!(
        load_dataset(&o, &hub, None).unwrap().instances.len(),
        rows.len()
    );
    o.split = "dev".into();
    let e = load_dataset(&o, &hub, None).unwrap_err();
    assert!(matches!(e, DatasetError::NotOffline { .. }), "{e}");
    assert_eq!(server.requests().len(), before);

    // Unknown split and unknown dataset are named.
    let mut o = opts("acme/bench");
    o.split = "train".into();
    let e = load_dataset(&o, &hub, None).unwrap_err();
    let msg = format!("{e}: {}", std::error::Error::source(&e).unwrap());
    assert!(
        msg.contains("no split \"train\"") && msg.contains("dev"),
        "{msg}"
    );
    let e = load_dataset(&opts("acme/missing"), &hub, None).unwrap_err();
    let DatasetError::Hub { source, .. } = &e else {
        panic!("{e}")
    };
    assert!(
        matches!(**source, HubError::DatasetNotFound { .. }),
        "{source}"
    );

    // Without the token the hub refuses, and the error says what to do.
    let no_token = hub_at(&server.base, &dir.path().join("cache2"), None);
    let e = load_dataset(&opts("acme/bench"), &no_token, None).unwrap_err();
    let DatasetError::Hub { source, .. } = &e else {
        panic!("{e}")
    };
    assert!(source.to_string().contains("HF_TOKEN"), "{source}");
}

#[test]
fn hub_download_from_the_repository_files_when_there_is_no_conversion() {
    let dir = tempfile::tempdir().unwrap();
    let rows = fixture_rows();
    let jsonl: String = rows.iter().map(|r| format!("{r}\n")).collect();
    let pq_path: PathBuf = dir.path().join("t.parquet");
    write_parquet(&pq_path, &rows);
    let pq = std::fs::read(&pq_path).unwrap();
    let server = Server::start(move |req, _| match req.path.as_str() {
        "/api/datasets/acme/raw" => Response::ok(
            json!({"siblings": [
                {"rfilename": "README.md"},
                {"rfilename": "data/test-00000-of-00001.parquet"},
                {"rfilename": "test.jsonl"},
                {"rfilename": "data/dev-00000-of-00001.parquet"}
            ]})
            .to_string(),
        ),
        "/datasets/acme/raw/resolve/main/data/test-00000-of-00001.parquet" => {
            Response::ok(pq.clone())
        }
        "/datasets/acme/raw/resolve/main/test.jsonl" => Response::ok(jsonl.clone()),
        _ => Response::status(404),
    });
    let hub = hub_at(&server.base, &dir.path().join("cache"), None);
    let d = load_dataset(&opts("acme/raw"), &hub, None).unwrap();
    assert_eq!(d.instances.len(), rows.len());
    // Parquet is preferred over the JSON Lines copy of the same split.
    assert_eq!(
        server.count("/datasets/acme/raw/resolve/main/data/test-00000-of-00001.parquet"),
        1
    );
    assert_eq!(
        server.count("/datasets/acme/raw/resolve/main/test.jsonl"),
        0
    );
}

#[test]
fn a_gated_data_file_is_an_access_error_naming_hf_token() {
    // The listing is public, the file behind it needs a token (gated datasets answer like this).
    let server = Server::start(|req, _| match req.path.as_str() {
        "/api/datasets/acme/gated/parquet" => Response::status(404),
        "/api/datasets/acme/gated" => {
            Response::ok(json!({"siblings": [{"rfilename": "data/test.jsonl"}]}).to_string())
        }
        _ => Response::ok("").with_status(401, "Access to this dataset is restricted"),
    });
    let dir = tempfile::tempdir().unwrap();
    let hub = hub_at(&server.base, dir.path(), None);
    let e = load_dataset(&opts("acme/gated"), &hub, None).unwrap_err();
    let DatasetError::Hub { source, .. } = &e else {
        panic!("{e}")
    };
    assert!(
        matches!(**source, HubError::AccessDenied { status: 401, .. }),
        "{source}"
    );
    assert!(source.to_string().contains("HF_TOKEN"), "{source}");
    assert_eq!(
        server.count("/datasets/acme/gated/resolve/main/data/test.jsonl"),
        1
    );
}

#[test]
fn an_unreadable_download_is_not_served_from_the_cache_again() {
    // A proxy's error page (HTML with status 200) instead of the Parquet file, once.
    let dir = tempfile::tempdir().unwrap();
    let pq_path = dir.path().join("t.parquet");
    let rows = fixture_rows();
    write_parquet(&pq_path, &rows);
    let pq = std::fs::read(&pq_path).unwrap();
    let server = Server::start(move |req, seen| match req.path.as_str() {
        "/api/datasets/acme/flaky/parquet" => Response::status(404),
        "/api/datasets/acme/flaky" => Response::ok(
            json!({"siblings": [{"rfilename": "data/test-00000-of-00001.parquet"}]}).to_string(),
        ),
        _ if seen == 0 => Response::ok("<html>proxy says no</html>"),
        _ => Response::ok(pq.clone()),
    });
    let hub = hub_at(&server.base, &dir.path().join("cache"), None);
    let e = load_dataset(&opts("acme/flaky"), &hub, None).unwrap_err();
    let cause = std::error::Error::source(&e).map(ToString::to_string);
    assert!(
        cause.as_deref().is_some_and(|c| c.contains("Parquet")),
        "{e}: {cause:?}"
    );
    let d = load_dataset(&opts("acme/flaky"), &hub, None).unwrap();
    assert_eq!(d.instances.len(), rows.len());
    assert_eq!(
        server.count("/datasets/acme/flaky/resolve/main/data/test-00000-of-00001.parquet"),
        2
    );
}
