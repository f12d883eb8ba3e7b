//! `swtbench validate` and `swtbench datasets`, run as the built binary.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

/// Runs the binary with a clean, private environment for the hub cache and no proxies.
fn swtbench(args: &[&str], home: &Path) -> Output {
    crate::support::binary::command()
        .args(args)
        .env("HF_HOME", home.join("hf"))
        .env("HOME", home)
        .env_remove("HF_ENDPOINT")
        .env_remove("HF_TOKEN")
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("SWTBENCH_OFFLINE")
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .env_remove("HTTP_PROXY")
        .env_remove("http_proxy")
        .env_remove("ALL_PROXY")
        .env_remove("all_proxy")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn sample_rows() -> Vec<Value> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../swtbench-data/tests/fixtures/lite_sample.jsonl");
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) -> PathBuf {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
    path.to_path_buf()
}

fn pred(id: &str) -> String {
    json!({"instance_id": id, "model_name_or_path": "acme/model", "model_patch": "diff --git a/t.py b/t.py\n"})
        .to_string()
}

#[test]
fn lite_gold_filtered_offline_has_276_instances() {
    let home = tempfile::tempdir().unwrap();
    let o = swtbench(
        &[
            "validate",
            "--dataset",
            "lite",
            "--predictions",
            "gold",
            "--filter-swt",
            "--offline",
        ],
        home.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("instances:     276 (24 excluded by the SWT filter list lite)"),
        "{out}"
    );
    assert!(out.contains("matched:       276 of 276"), "{out}");
    assert!(out.contains("problems:      0"), "{out}");
}

#[test]
fn verified_gold_filtered_offline_has_433_instances() {
    let home = tempfile::tempdir().unwrap();
    let o = swtbench(
        &[
            "validate",
            "--dataset",
            "verified",
            "--predictions",
            "gold",
            "--filter-swt",
            "--offline",
            "--json",
        ],
        home.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["instances"], 433);
    assert_eq!(v["excluded_by_filter"], 67);
    assert_eq!(v["rows"], 500);
    assert_eq!(v["predictions"]["matched"], 433);
    assert_eq!(v["predictions"]["model"], "gold");
    assert_eq!(v["problems"], json!([]));
}

#[test]
fn snake_case_aliases_work() {
    let home = tempfile::tempdir().unwrap();
    let o = swtbench(
        &[
            "validate",
            "--dataset_name",
            "lite",
            "--predictions_path",
            "gold",
            "--offline",
            "--filter_swt",
            "--instance_ids",
            "django__django-11099",
            "sympy__sympy-20590",
            "--is_swt",
            "false",
        ],
        home.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("instances:     2 (24 excluded by the SWT filter list lite, 274 not among --instance-ids)"), "{}", stdout(&o));
    let o = swtbench(
        &[
            "validate",
            "--dataset_name",
            "lite",
            "--predictions_path",
            "gold",
            "--offline",
        ],
        home.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("instances:     300\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn predictions_with_a_broken_third_line_fail_naming_line_3() {
    let home = tempfile::tempdir().unwrap();
    let p = write_lines(
        &home.path().join("preds.jsonl"),
        &[
            pred("django__django-11099"),
            pred("sympy__sympy-20590"),
            "{\"instance_id\": ".into(),
        ],
    );
    let o = swtbench(
        &[
            "validate",
            "--dataset",
            "lite",
            "--offline",
            "--predictions",
            p.to_str().unwrap(),
        ],
        home.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("preds.jsonl: line 3: not valid JSON"), "{err}");
    assert!(
        err.starts_with("error: ") && err.contains("hint: "),
        "{err}"
    );
}

#[test]
fn unknown_ids_warn_and_strict_fails() {
    let home = tempfile::tempdir().unwrap();
    let p = write_lines(
        &home.path().join("preds.jsonl"),
        &[pred("django__django-11099"), pred("nobody__nothing-7")],
    );
    let args = [
        "validate",
        "--dataset",
        "lite",
        "--offline",
        "--predictions",
        p.to_str().unwrap(),
    ];
    let o = swtbench(&args, home.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("warning: ") && stderr(&o).contains("nobody__nothing-7"));
    assert!(
        stdout(&o).contains("matched:       1 of 300"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("unknown ids:   1"), "{}", stdout(&o));
    let mut strict = args.to_vec();
    strict.push("--strict");
    assert_eq!(swtbench(&strict, home.path()).status.code(), Some(1));
}

#[test]
fn invalid_rows_and_unknown_versions_are_problems_with_exit_1() {
    let home = tempfile::tempdir().unwrap();
    let mut rows = sample_rows();
    rows[0].as_object_mut().unwrap().remove("base_commit");
    rows[1]["version"] = json!("99.9");
    let lines: Vec<String> = rows.iter().map(Value::to_string).collect();
    let d = write_lines(&home.path().join("data.jsonl"), &lines);
    let o = swtbench(
        &[
            "validate",
            "--dataset",
            d.to_str().unwrap(),
            "--predictions",
            "gold",
        ],
        home.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let id0 = rows[0]["instance_id"].as_str().unwrap();
    let id1 = rows[1]["instance_id"].as_str().unwrap();
    assert!(
        err.lines()
            .any(|l| l.contains(id0) && l.contains("line 1") && l.contains("`base_commit`")),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.contains(id1) && l.contains("\"99.9\"") && l.contains("spec table")),
        "{err}"
    );
    assert!(stdout(&o).contains("problems:      2"), "{}", stdout(&o));
}

#[test]
fn full_offline_is_an_environment_error_with_a_hint() {
    let home = tempfile::tempdir().unwrap();
    let o = swtbench(&["validate", "--dataset", "full", "--offline"], home.path());
    // README exit codes: 3 = the environment is not usable (network needed while offline).
    assert_eq!(o.status.code(), Some(3));
    let err = stderr(&o);
    assert!(
        err.contains("not available offline") && err.contains("hint: run once without --offline"),
        "{err}"
    );
    // HF_HUB_OFFLINE takes the values the Hugging Face libraries accept, e.g. ON.
    let o = crate::support::binary::command()
        .args(["validate", "--dataset", "full"])
        .env("HF_HOME", home.path().join("hf"))
        .env("HF_HUB_OFFLINE", "ON")
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not available offline"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn selections_and_paths_that_name_nothing_are_input_errors_with_hints() {
    let home = tempfile::tempdir().unwrap();
    let base = ["validate", "--dataset", "lite", "--offline", "--filter-swt"];
    let run = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        swtbench(&args, home.path())
    };
    // An id the SWT filter removed, and one that does not exist.
    let o = run(&["--instance-ids", "django__django-13658,nope__nope-1"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("django__django-13658 (excluded by the SWT filter list lite)")
            && err.contains("nope__nope-1")
            && err.contains("without --filter-swt"),
        "{err}"
    );
    // The hint's advice works: --json lists the ids.
    let o = run(&["--json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let ids = v["instance_ids"].as_array().unwrap();
    assert_eq!(ids.len(), 276);
    assert!(ids.contains(&json!("django__django-11099")));
    assert!(!ids.contains(&json!("django__django-13658")));
    // An empty value is not "all instances".
    let o = run(&["--instance-ids", ""]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("names no instance"), "{}", stderr(&o));
    // A local path that does not exist is not looked up on the hub.
    let missing = home.path().join("no such dir");
    let o = swtbench(
        &["validate", "--dataset", missing.to_str().unwrap()],
        home.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no such dir") && stderr(&o).contains("does not exist"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn predictions_errors_get_hints_that_fit() {
    let home = tempfile::tempdir().unwrap();
    let p = write_lines(
        &home.path().join("mixed.jsonl"),
        &[
            pred("django__django-11099"),
            json!({"instance_id": "sympy__sympy-20590", "model_name_or_path": "other", "model_patch": ""}).to_string(),
        ],
    );
    let o = swtbench(
        &[
            "validate",
            "--dataset",
            "lite",
            "--offline",
            "--predictions",
            p.to_str().unwrap(),
        ],
        home.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("line 1 has \"acme/model\", line 2 has \"other\"")
            && err.contains("hint: split the file by `model_name_or_path`"),
        "{err}"
    );
    let o = swtbench(
        &[
            "validate",
            "--dataset",
            "lite",
            "--offline",
            "--predictions",
            "Gold",
        ],
        home.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("`gold` (lower case)"), "{}", stderr(&o));
}

#[test]
fn datasets_lists_aliases_and_embedded_copies() {
    let home = tempfile::tempdir().unwrap();
    let o = swtbench(&["datasets"], home.path());
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(out.contains("princeton-nlp/SWE-bench_Verified"), "{out}");
    assert!(out.contains("swe_bench_lite"), "{out}");
    let o = swtbench(&["datasets", "--json"], home.path());
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let lite = v["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["key"] == "lite")
        .unwrap();
    assert_eq!(lite["swt_test_rows"], 276);
    assert_eq!(lite["embedded_splits"], json!(["test"]));
    assert_eq!(v["embedded"].as_array().unwrap().len(), 2);
}

/// Request paths and their Authorization headers, in arrival order.
type RequestLog = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A one-dataset hub serving `test.jsonl` from the repository files; records each request's
/// path and Authorization header.
fn start_hub(rows: &[Value]) -> (String, RequestLog) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let log: RequestLog = Arc::default();
    let log2 = log.clone();
    let jsonl: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let mut auth = None;
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                    break;
                }
                if let Some(v) = h
                    .strip_prefix("authorization: ")
                    .or(h.strip_prefix("Authorization: "))
                {
                    auth = Some(v.trim().to_string());
                }
            }
            log2.lock().unwrap().push((path.clone(), auth));
            let (status, body) = match path.as_str() {
                "/api/datasets/acme/bench" => (
                    200,
                    json!({"siblings": [{"rfilename": "README.md"}, {"rfilename": "test.jsonl"}]})
                        .to_string(),
                ),
                "/datasets/acme/bench/resolve/main/test.jsonl" => (200, jsonl.clone()),
                _ => (404, "not found".to_string()),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (base, log)
}

#[test]
fn hub_datasets_use_hf_endpoint_token_and_cache() {
    let home = tempfile::tempdir().unwrap();
    let rows = sample_rows();
    let (base, log) = start_hub(&rows);
    let run = |extra: &[&str]| {
        let mut args = vec![
            "validate",
            "--dataset",
            "acme/bench",
            "--predictions",
            "gold",
            "--filter-swt",
        ];
        args.extend_from_slice(extra);
        let mut cmd = crate::support::binary::command();
        cmd.args(&args)
            .env("HF_HOME", home.path().join("hf"))
            .env("HF_ENDPOINT", &base)
            .env("HF_TOKEN", "hf_cli_token")
            .env("NO_PROXY", "127.0.0.1")
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy");
        cmd.output().unwrap()
    };
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The sample's ids are SWE-bench Lite ids, one of them in the Lite filter list.
    assert!(
        stdout(&o).contains("instances:     3 (1 excluded by the SWT filter list lite)"),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("using the lite filter list"),
        "{}",
        stderr(&o)
    );
    // Not a terminal: the download is announced on one line (a bar on a terminal).
    assert!(
        stderr(&o).contains("downloading test.jsonl ("),
        "{}",
        stderr(&o)
    );
    let requests = log.lock().unwrap().clone();
    assert!(requests
        .iter()
        .any(|(p, _)| p == "/datasets/acme/bench/resolve/main/test.jsonl"));
    assert!(
        requests
            .iter()
            .all(|(_, a)| a.as_deref() == Some("Bearer hf_cli_token")),
        "{requests:?}"
    );
    // The cache under HF_HOME serves the next runs, offline included.
    assert!(home.path().join("hf/swtbench/hub").is_dir());
    let n = log.lock().unwrap().len();
    let o = run(&["--offline"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(log.lock().unwrap().len(), n);
    assert!(!stderr(&o).contains("downloading"), "{}", stderr(&o));
}

/// A model name that cannot name the run's directories fails `validate` as it fails `run`, with
/// the same message, before any engine is contacted; `validate --run-id` checks the pair.
#[test]
fn model_names_run_refuses_are_refused_by_validate_too() {
    let home = tempfile::tempdir().unwrap();
    let named = |file: &str, model: &str| {
        let line = json!({"instance_id": "django__django-11099", "model_name_or_path": model,
                          "model_patch": "diff --git a/t.py b/t.py\n"})
        .to_string();
        write_lines(&home.path().join(file), &[line])
    };
    for (file, model, why) in [
        ("long.jsonl", "x".repeat(300), "is too long"),
        ("multi.jsonl", "model\nv2".to_string(), "control character"),
    ] {
        let p = named(file, &model);
        let p = p.to_str().unwrap();
        let v = swtbench(
            &[
                "validate",
                "--dataset",
                "lite",
                "--offline",
                "--predictions",
                p,
            ],
            home.path(),
        );
        let r = crate::support::binary::command()
            .args(["run", "--dataset", "lite", "--offline", "--predictions", p])
            .args(["--run-id", "r1", "--dry-run"])
            .env("HOME", home.path())
            .env("HF_HOME", home.path().join("hf"))
            .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
            .output()
            .unwrap();
        for (what, o) in [("validate", &v), ("run", &r)] {
            assert_eq!(o.status.code(), Some(2), "{what} {file}: {}", stderr(o));
            let err = stderr(o);
            assert!(
                err.contains("`model_name_or_path`") && err.contains(why),
                "{what}: {err}"
            );
        }
        // (`run --dry-run` may warn first that it plans without the engine.)
        let error_line = |o: &Output| {
            stderr(o)
                .lines()
                .find(|l| l.starts_with("error: "))
                .unwrap_or_default()
                .to_string()
        };
        assert!(!error_line(&v).is_empty());
        assert_eq!(error_line(&v), error_line(&r), "the same message");
    }

    // 240 bytes fit on their own, but not with a 20-byte run id.
    let p = named("l240.jsonl", &"m".repeat(240));
    let p = p.to_str().unwrap();
    let base = [
        "validate",
        "--dataset",
        "lite",
        "--offline",
        "--predictions",
        p,
    ];
    let ok = swtbench(&base, home.path());
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let with_id = [&base[..], &["--run-id", "a-twenty-byte-run-id"]].concat();
    let o = swtbench(&with_id, home.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("longer than 255 bytes"),
        "{}",
        stderr(&o)
    );
    let bad_id = [&base[..], &["--run-id", "a/b"]].concat();
    let o = swtbench(&bad_id, home.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot name a directory"),
        "{}",
        stderr(&o)
    );
}

/// A typo of an alias (`liet`) is an input error naming the alias, made before any hub request,
/// for `validate` and `run`; a name with `/` and a bare name far from every alias still go to the
/// hub, and a path to the file system, as before.
#[test]
fn a_typo_of_an_alias_is_refused_with_the_alias_before_the_hub_is_asked() {
    let home = tempfile::tempdir().unwrap();
    let (base, log) = start_hub(&sample_rows());
    let run = |args: &[&str]| {
        crate::support::binary::command()
            .args(args)
            .current_dir(home.path())
            .env("HF_HOME", home.path().join("hf"))
            .env("HF_ENDPOINT", &base)
            .env("NO_PROXY", "127.0.0.1")
            .env("DOCKER_HOST", crate::support::cli::NO_ENGINE)
            .output()
            .unwrap()
    };
    // Whether the hub was asked about the dataset `name` (listing or file).
    let asked = |name: &str| {
        let requests = log.lock().unwrap().clone();
        requests.iter().any(|(p, _)| {
            p.starts_with(&format!("/api/datasets/{name}/"))
                || p == &format!("/api/datasets/{name}")
                || p.starts_with(&format!("/datasets/{name}/"))
        })
    };
    for (args, suggestion) in [
        (vec!["validate", "--dataset", "liet"], "lite"),
        (
            vec!["validate", "--dataset", "Verifed", "--offline"],
            "verified",
        ),
        (
            vec![
                "run",
                "--dataset",
                "liet",
                "--predictions",
                "gold",
                "--run-id",
                "r",
                "--dry-run",
            ],
            "lite",
        ),
    ] {
        let o = run(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("did you mean \"{suggestion}\"?"))
                && err.contains(&format!("hint: use --dataset {suggestion}")),
            "{args:?}: {err}"
        );
    }
    assert!(
        !asked("liet") && !asked("Verifed"),
        "{:?}",
        log.lock().unwrap()
    );
    // `owner/name` is a hub name whatever it looks like: asked, and not found there.
    let o = run(&["validate", "--dataset", "acme/liet"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(asked("acme/liet"), "{:?}", log.lock().unwrap());
    assert!(!stderr(&o).contains("did you mean"), "{}", stderr(&o));
    // A bare name far from every alias is a hub name too.
    let o = run(&["validate", "--dataset", "squad"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(asked("squad"), "{:?}", log.lock().unwrap());
    // A path is read from the disk, even one that looks like a typo.
    std::fs::create_dir(home.path().join("liet")).unwrap();
    let o = run(&["validate", "--dataset", "liet"]);
    assert!(
        stderr(&o).contains("directory liet holds no"),
        "{}",
        stderr(&o)
    );
    let o = run(&["validate", "--dataset", "./liet.jsonl"]);
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    assert!(!asked("liet"), "{:?}", log.lock().unwrap());
}
