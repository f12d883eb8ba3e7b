//! `swtbench dataset retrieve|build|swt` on a repository the test creates and mirrors, then the
//! result read back the way `--is-swt` reads it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Map, Value};
use swtbench_textgen::tokens::{Cl100k, TokenCounter};

use crate::support::layer;

fn swtbench(args: &[&str], home: &Path) -> Output {
    crate::support::binary::command()
        .args(args)
        .env("HF_HOME", home.join("hf"))
        .env("HOME", home)
        .env_remove("SWTBENCH_REPO_MIRROR")
        .env_remove("HF_ENDPOINT")
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

use crate::support::git;

const OPS: &str = "\"\"\"Arithmetic operations.\"\"\"\n\n\ndef add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    # Dividing by zero raises ZeroDivisionError from Python itself.\n    return a / b\n";
const OPS_FIXED: &str = "\"\"\"Arithmetic operations.\"\"\"\n\n\ndef add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    if b == 0:\n        raise ValueError(\"divide: division by zero\")\n    return a / b\n";
const TESTS: &str = "from calc.ops import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n";
const TESTS_NEW: &str = "import pytest\n\nfrom calc.ops import add, divide\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_divide_by_zero():\n    with pytest.raises(ValueError):\n        divide(1, 0)\n";

struct Fixture {
    home: tempfile::TempDir,
    mirrors: PathBuf,
    dataset: PathBuf,
    code_patch: String,
    test_patch: String,
}

/// A repository `acme/calc` with two commits (the second adds a file that is not UTF-8), its bare
/// mirror, and a two-instance dataset whose gold patches are real diffs of it.
fn fixture() -> Fixture {
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("work");
    std::fs::create_dir_all(work.join("calc")).unwrap();
    std::fs::create_dir_all(work.join("tests")).unwrap();
    let w = |p: &str, c: &[u8]| std::fs::write(work.join(p), c).unwrap();
    w("README.md", b"# calc\r\nA tiny calculator.\r\n");
    w("calc/__init__.py", b"");
    w("calc/ops.py", OPS.as_bytes());
    w("calc/parse.py", b"def parse(text):\n    \"\"\"Parse an expression such as 1 + 2.\"\"\"\n    return text.split()\n");
    w("calc/fmt.py", b"def fmt(x):\n    return f\"{x:.2f}\"\n");
    // A large file about division that outranks everything but does not fit under 27,000 tokens.
    let big: String = (0..3000)
        .map(|i| format!("def case_{i}(a, b):\n    # divide by zero raises ZeroDivisionError, should raise ValueError\n    return a / b\n"))
        .collect();
    w("calc/division_cases.py", big.as_bytes());
    w("tests/test_ops.py", TESTS.as_bytes());
    w("docs.txt", b"divide zero divide zero");
    git(&work, &["init", "-q", "-b", "main"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "one"]);
    let c1 = git(&work, &["rev-parse", "HEAD"]);
    w("calc/legacy.py", b"# caf\xe9\nx = 1\n");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "two"]);
    let c2 = git(&work, &["rev-parse", "HEAD"]);

    // Gold patches: made by git from real edits.
    w("calc/ops.py", OPS_FIXED.as_bytes());
    let code_patch = git(&work, &["diff", "--", "calc/ops.py"]) + "\n";
    w("tests/test_ops.py", TESTS_NEW.as_bytes());
    let test_patch = git(&work, &["diff", "--", "tests/test_ops.py"]) + "\n";
    git(&work, &["checkout", "-q", "--", "."]);

    let mirrors = home.path().join("mirrors");
    std::fs::create_dir_all(&mirrors).unwrap();
    git(
        home.path(),
        &[
            "clone",
            "-q",
            "--mirror",
            work.to_str().unwrap(),
            mirrors.join("acme__calc.git").to_str().unwrap(),
        ],
    );

    let row = |id: &str, commit: &str| {
        json!({
            "repo": "acme/calc",
            "instance_id": id,
            "base_commit": commit,
            "patch": code_patch,
            "test_patch": test_patch,
            "problem_statement": "divide() by zero gives an unhelpful error\r\n\r\nCalling divide(1, 0) raises ZeroDivisionError; it should raise ValueError saying division by zero.\r\n",
            "hints_text": "See calc/ops.py",
            "created_at": "2024-01-02T03:04:05Z",
            "version": "1.0",
            "FAIL_TO_PASS": "[\"tests/test_ops.py::test_divide_by_zero\"]",
            "PASS_TO_PASS": ["tests/test_ops.py::test_add"],
            "environment_setup_commit": commit,
        })
        .to_string()
    };
    let dataset = home.path().join("calc.jsonl");
    std::fs::write(
        &dataset,
        format!(
            "{}\n{}\n",
            row("acme__calc-1", &c1),
            row("acme__calc-2", &c2)
        ),
    )
    .unwrap();
    Fixture {
        home,
        mirrors,
        dataset,
        code_patch,
        test_patch,
    }
}

fn read_jsonl(p: &Path) -> Vec<Map<String, Value>> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn retrieve_build_swt_and_read_back_with_is_swt() {
    let f = fixture();
    let h = f.home.path();
    let hits = h.join("out/hits.jsonl");

    // retrieve: instance 2 has a file that is not UTF-8, which fails it (as in the original)...
    let o = swtbench(
        &[
            "dataset",
            "retrieve",
            "--dataset",
            p(&f.dataset),
            "--repo-mirror",
            p(&f.mirrors),
            "--include-tests",
            "--out",
            p(&hits),
        ],
        h,
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("calc/legacy.py: not valid UTF-8 (byte 5)"),
        "{}",
        stderr(&o)
    );
    let lines = read_jsonl(&hits);
    assert_eq!(lines.len(), 1);
    // ...and a second run resumes: only instance 2, now skipping the file.
    let o = swtbench(
        &[
            "dataset",
            "retrieve",
            "--dataset",
            p(&f.dataset),
            "--repo-mirror",
            p(&f.mirrors),
            "--include-tests",
            "--skip-undecodable",
            "--out",
            p(&hits),
        ],
        h,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 of 2 instances already done, 1 to go"),
        "{}",
        stderr(&o)
    );
    let lines = read_jsonl(&hits);
    assert_eq!(
        lines
            .iter()
            .map(|l| l["instance_id"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["acme__calc-1", "acme__calc-2"]
    );
    for l in &lines {
        let docs: Vec<&str> = l["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["docid"].as_str().unwrap())
            .collect();
        let scores: Vec<f64> = l["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["score"].as_f64().unwrap())
            .collect();
        assert!(scores.windows(2).all(|w| w[0] > w[1]), "{scores:?}");
        // The issue is about divide and zero: the file full of them ranks first, then ops.py.
        assert_eq!(
            &docs[..2],
            ["calc/division_cases.py", "calc/ops.py"],
            "{docs:?}"
        );
        assert!(docs.contains(&"tests/test_ops.py"));
        assert!(!docs.contains(&"docs.txt") && !docs.contains(&"calc/legacy.py"));
    }
    // Without --include-tests, test files are not documents.
    let hits_nt = h.join("out/hits-no-tests.jsonl");
    let o = swtbench(
        &[
            "dataset",
            "retrieve",
            "--dataset",
            p(&f.dataset),
            "--repo-mirror",
            p(&f.mirrors),
            "--skip-undecodable",
            "--instance-ids",
            "acme__calc-1",
            "--out",
            p(&hits_nt),
        ],
        h,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let nt = read_jsonl(&hits_nt);
    assert!(!nt[0]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .any(|h| h["docid"] == "tests/test_ops.py"));

    // build: style-3 text under the 27,000-token cap.
    let text = h.join("out/text.jsonl");
    let o = swtbench(
        &[
            "dataset",
            "build",
            "--dataset",
            p(&f.dataset),
            "--hits",
            p(&hits),
            "--repo-mirror",
            p(&f.mirrors),
            "--style",
            "3",
            "--max-tokens",
            "27000",
            "--out",
            p(&text),
        ],
        h,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = read_jsonl(&text);
    assert_eq!(rows.len(), 2);
    let source: Vec<Map<String, Value>> = read_jsonl(&f.dataset);
    for (row, src) in rows.iter().zip(&source) {
        assert_eq!(
            row.keys().collect::<Vec<_>>(),
            [
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
                "environment_setup_commit"
            ]
        );
        assert!(row.values().all(Value::is_string));
        for same in [
            "instance_id",
            "repo",
            "base_commit",
            "problem_statement",
            "hints_text",
            "created_at",
            "test_patch",
            "version",
            "FAIL_TO_PASS",
            "environment_setup_commit",
        ] {
            assert_eq!(row[same], src[same], "{same}");
        }
        assert_eq!(row["PASS_TO_PASS"], "[\"tests/test_ops.py::test_add\"]");
        assert_eq!(
            row["patch"].as_str().unwrap(),
            format!("<patch>\n{}\n</patch>", f.code_patch)
        );
        let t = row["text"].as_str().unwrap();
        // The issue verbatim (CRLF kept), the README with universal newlines, numbered files.
        assert!(t.contains(
            "<issue>\ndivide() by zero gives an unhelpful error\r\n\r\nCalling divide(1, 0)"
        ));
        assert!(t.contains("<code>\n[start of README.md]\n1 # calc\n2 A tiny calculator.\n3 \n[end of README.md]\n"));
        assert!(t.contains("[start of calc/ops.py]\n1 \"\"\"Arithmetic operations.\"\"\"\n2 \n3 \n4 def add(a, b):\n"));
        assert!(t.contains("[start of tests/test_ops.py]\n1 from calc.ops import add\n"));
        // The best-ranked file is too big for the cap and is skipped; smaller ones still get in.
        assert!(!t.contains("[start of calc/division_cases.py]"));
        // Files appear in path order, whatever their rank.
        let ops = t.find("[start of calc/ops.py]").unwrap();
        let parse = t.find("[start of calc/parse.py]").unwrap();
        let tst = t.find("[start of tests/test_ops.py]").unwrap();
        assert!(ops < parse && parse < tst);
        assert!(t.ends_with("\n\n") && !t.ends_with("\n\n\n"));
        assert!(Cl100k.count(t) < 27_000);
    }

    // swt: our ZeroShotPlus prompt, swapped patches.
    let swt = h.join("out/swt.jsonl");
    let o = swtbench(
        &[
            "dataset",
            "swt",
            "--input",
            p(&text),
            "--mode",
            "zsp",
            "--filter-swt",
            "none",
            "--out",
            p(&swt),
        ],
        h,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let srows = read_jsonl(&swt);
    assert_eq!(srows.len(), 2);
    let zsp = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/prompts/swt-zsp.txt"),
    )
    .unwrap();
    let (premise, prompt) = zsp.split_once("{{body}}").unwrap();
    for (s, t) in srows.iter().zip(&rows) {
        assert_eq!(s.keys().collect::<Vec<_>>(), t.keys().collect::<Vec<_>>());
        let text = s["text"].as_str().unwrap();
        assert!(text.starts_with(premise), "{text}");
        assert!(text.ends_with(&format!("</code>{prompt}")));
        // splitlines turned the issue's CRLF into LF.
        assert!(text.contains(
            "<issue>\ndivide() by zero gives an unhelpful error\n\nCalling divide(1, 0)"
        ));
        assert!(text.contains("[start of calc/ops.py]\n1 \"\"\"Arithmetic operations.\"\"\""));
        assert!(!text.contains("Answer below:"));
        assert_eq!(
            s["patch"].as_str().unwrap(),
            format!("<patch>\n{}\n</patch>", f.test_patch)
        );
        assert_eq!(s["test_patch"].as_str().unwrap(), f.code_patch);
        for same in [
            "instance_id",
            "repo",
            "base_commit",
            "problem_statement",
            "hints_text",
            "created_at",
            "version",
            "FAIL_TO_PASS",
            "PASS_TO_PASS",
            "environment_setup_commit",
        ] {
            assert_eq!(s[same], t[same], "{same}");
        }
    }

    // zsb to parquet, read back as rows.
    let swt_pq = h.join("out/swt-zsb.parquet");
    let o = swtbench(
        &[
            "dataset",
            "swt",
            "--input",
            p(&text),
            "--mode",
            "zsb",
            "--filter-swt",
            "none",
            "--out",
            p(&swt_pq),
        ],
        h,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!h.join("out/swt-zsb.parquet.partial.jsonl").exists());
    let (pq_rows, _) = swtbench_data::rows::read_file(&swt_pq, "test").unwrap();
    assert_eq!(pq_rows.len(), 2);
    let first = pq_rows[0].value.as_object().unwrap();
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        srows[0].keys().collect::<Vec<_>>()
    );
    assert!(first["text"]
        .as_str()
        .unwrap()
        .contains("```diff\n--- a/tests/test_shapes.py"));
    assert_eq!(first["test_patch"], srows[0]["test_patch"]);

    // --is-swt reads the swapped layout back: the gold patches map to the right roles.
    for file in [&swt, &swt_pq] {
        let mut options = swtbench_data::LoadOptions::new(p(file));
        options.is_swt = true;
        options.offline = true;
        let hub = swtbench_data::hub::Hub::new(
            swtbench_data::hub::HubConfig::from_env(&|_: &str| None),
            swtbench_data::http::HttpConfig::default(),
        )
        .unwrap();
        let loaded = swtbench_data::load_dataset(&options, &hub, None).unwrap();
        assert_eq!(
            loaded.layout,
            swtbench_core::PatchLayout::SwtSwapped,
            "{:?}",
            loaded.notes
        );
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        assert_eq!(loaded.instances.len(), 2);
        for inst in &loaded.instances {
            assert_eq!(inst.golden_code_patch, f.code_patch);
            assert_eq!(inst.golden_test_patch, f.test_patch);
            assert_eq!(
                inst.fail_to_pass,
                ["tests/test_ops.py::test_divide_by_zero"]
            );
        }
    }
}

#[test]
fn swt_reports_rows_without_a_code_section_and_converts_the_others() {
    let h = tempfile::tempdir().unwrap();
    let input = h.path().join("text.jsonl");
    let good = json!({"instance_id": "a__b-1", "text": "premise\n<issue>\ni\n</issue>\n\n<code>\n\n\n</code>\n\ntail\n", "patch": "<patch>\nP\n</patch>", "test_patch": "T\n"});
    let bad = json!({"instance_id": "a__b-2", "text": "premise\nno code here\n", "patch": "<patch>\nP\n</patch>", "test_patch": "T\n"});
    std::fs::write(&input, format!("{good}\n{bad}\n")).unwrap();
    let out = h.path().join("swt.jsonl");
    let o = swtbench(
        &[
            "dataset",
            "swt",
            "--input",
            p(&input),
            "--mode",
            "zsb",
            "--filter-swt",
            "none",
            "--out",
            p(&out),
        ],
        h.path(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("a__b-2: `text` has no line starting with `</code>`"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("a__b-2: a__b-2"), "{}", stderr(&o));
    let rows = read_jsonl(&out);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["patch"], "<patch>\nT\n\n</patch>");
    assert_eq!(rows[0]["test_patch"], "P");

    // A user template replaces ours.
    let tpl = h.path().join("mine.txt");
    std::fs::write(&tpl, "MY PREMISE\n{{body}}\nMY PROMPT\n").unwrap();
    let out2 = h.path().join("swt2.jsonl");
    let o = swtbench(
        &[
            "dataset",
            "swt",
            "--input",
            p(&input),
            "--mode",
            "zsb",
            "--filter-swt",
            "none",
            "--template",
            p(&tpl),
            "--instance-ids",
            "a__b-1",
            "--out",
            p(&out2),
        ],
        h.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        read_jsonl(&out2)[0]["text"],
        "MY PREMISE\n<issue>\ni\n</issue>\n\n<code>\n\n\n</code>\nMY PROMPT\n"
    );
    // A template without the placeholder is refused up front.
    std::fs::write(&tpl, "no slot").unwrap();
    let o = swtbench(
        &[
            "dataset",
            "swt",
            "--input",
            p(&input),
            "--template",
            p(&tpl),
            "--out",
            p(&h.path().join("x.jsonl")),
        ],
        h.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`{{body}}` must appear exactly once"),
        "{}",
        stderr(&o)
    );
    // A missing input is named once, without its cause repeated.
    let missing = h.path().join("missing.jsonl");
    let o = swtbench(
        &[
            "dataset",
            "swt",
            "--input",
            p(&missing),
            "--out",
            p(&h.path().join("y.jsonl")),
        ],
        h.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("missing.jsonl: cannot read"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("caused by"), "{}", stderr(&o));
}

#[test]
fn swt_filter_defaults_to_the_list_of_the_rows_benchmark() {
    let h = tempfile::tempdir().unwrap();
    let row = |id: &str| json!({"instance_id": id, "repo": "o/r", "base_commit": "x", "version": "1", "text": "p\n<code>\n</code>\n", "patch": "<patch>\ndiff --git a/src/x.py b/src/x.py\n</patch>", "test_patch": "diff --git a/tests/test_x.py b/tests/test_x.py\n"});
    let (lite, verified, full) = (
        swtbench_data::SwtFilter::Lite,
        swtbench_data::SwtFilter::Verified,
        swtbench_data::SwtFilter::Full,
    );
    // (rows, the list that must be inferred, the ids it keeps). psf__requests-1963 is removed by
    // the Lite list but not by the Full one; astropy__astropy-7166 only by the Verified one.
    let cases = [
        (
            ["astropy__astropy-12907", "psf__requests-1963"],
            "lite",
            ["astropy__astropy-12907"],
        ),
        (
            ["astropy__astropy-12907", "astropy__astropy-7166"],
            "verified",
            ["astropy__astropy-12907"],
        ),
    ];
    assert!(lite.contains("psf__requests-1963") && !full.contains("psf__requests-1963"));
    assert!(
        verified.contains("astropy__astropy-7166")
            && !lite.contains("astropy__astropy-7166")
            && !full.contains("astropy__astropy-7166")
    );
    for (n, (ids, list, kept)) in cases.iter().enumerate() {
        let input = h.path().join(format!("text{n}.jsonl"));
        std::fs::write(&input, format!("{}\n{}\n", row(ids[0]), row(ids[1]))).unwrap();
        let out = h.path().join(format!("swt{n}.jsonl"));
        let o = swtbench(
            &["dataset", "swt", "--input", p(&input), "--out", p(&out)],
            h.path(),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("using the {list} filter list")),
            "{}",
            stderr(&o)
        );
        let got: Vec<String> = read_jsonl(&out)
            .iter()
            .map(|r| r["instance_id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(&got, kept);
        // --filter-swt none keeps both; naming a list uses it.
        let out = h.path().join(format!("swt{n}-none.jsonl"));
        let o = swtbench(
            &[
                "dataset",
                "swt",
                "--input",
                p(&input),
                "--filter-swt",
                "none",
                "--out",
                p(&out),
            ],
            h.path(),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(read_jsonl(&out).len(), 2);
        let out = h.path().join(format!("swt{n}-full.jsonl"));
        let o = swtbench(
            &[
                "dataset",
                "swt",
                "--input",
                p(&input),
                "--filter-swt",
                "full",
                "--out",
                p(&out),
            ],
            h.path(),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(read_jsonl(&out).len(), 2);
    }
}

#[test]
fn parquet_output_resumes_and_keeps_dataset_order() {
    let f = fixture();
    let h = f.home.path();
    let hits = h.join("hits.jsonl");
    let o = swtbench(
        &[
            "dataset",
            "retrieve",
            "--dataset",
            p(&f.dataset),
            "--repo-mirror",
            p(&f.mirrors),
            "--skip-undecodable",
            "--max-workers",
            "1",
            "--out",
            p(&hits),
        ],
        h,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = h.join("text.parquet");
    let build = |extra: &[&str]| {
        let mut args = vec![
            "dataset",
            "build",
            "--dataset",
            p(&f.dataset),
            "--hits",
            p(&hits),
            "--repo-mirror",
            p(&f.mirrors),
            "--out",
            p(&text),
        ];
        args.extend_from_slice(extra);
        swtbench(&args, h)
    };
    let o = build(&["--instance-ids", "acme__calc-2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (rows, _) = swtbench_data::rows::read_file(&text, "test").unwrap();
    assert_eq!(rows.len(), 1);
    let o = build(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 of 2 instances already done, 1 to go"),
        "{}",
        stderr(&o)
    );
    assert!(!h.join("text.parquet.partial.jsonl").exists());
    // The parquet file gets an ordinary file mode (as a file the test writes itself), not the
    // private one of the temporary file it is renamed from.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let plain = h.join("plain.txt");
        std::fs::write(&plain, "x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&text), mode(&plain));
    }
    let (rows, _) = swtbench_data::rows::read_file(&text, "test").unwrap();
    let ids: Vec<&str> = rows
        .iter()
        .map(|r| r.value["instance_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["acme__calc-1", "acme__calc-2"]);
    assert_eq!(rows[0].value.as_object().unwrap().len(), 13);
}

/// The local base image the engine tests build on (`scripts/base-image`).
const BASE_IMAGE: &str = "swtbench-fixture-base:bookworm";

/// Why the engine test cannot run here, if it cannot.
fn engine_missing() -> Option<String> {
    let info = Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output();
    if !info.is_ok_and(|o| o.status.success()) {
        return Some("no reachable Docker engine (`docker info` failed)".into());
    }
    let base = Command::new("docker")
        .args(["image", "inspect", BASE_IMAGE])
        .output();
    if !base.is_ok_and(|o| o.status.success()) {
        return Some(format!(
            "the base image {BASE_IMAGE} is missing (build it with scripts/base-image)"
        ));
    }
    None
}

/// The end-to-end check of the dataset builder: the SWT rows it writes, read back with
/// `--is-swt` and evaluated with their gold tests by `swtbench run` in containers, resolve (the
/// gold test fails before the gold fix and passes after it). Needs Docker and the local base
/// image; without them it prints why it is skipped.
#[test]
fn engine_swt_rows_evaluate_with_gold_predictions() {
    if let Some(why) = engine_missing() {
        layer::skip(&why);
        return;
    }
    let f = fixture();
    let h = f.home.path();
    let hits = h.join("hits.jsonl");
    let text = h.join("text.jsonl");
    let swt = h.join("swt.jsonl");
    // The environment is the fixture benchmark's (a venv with pytest on the local base image, so
    // its env image is shared with the engine tests); the repository has no packaging, so the
    // tests import it from the checkout.
    let table = h.join("spec-table.toml");
    std::fs::write(
        &table,
        format!(
            "format = 1\n\n[repos.\"acme/calc\"]\ntest_command = \"pytest -rA --tb=no -p no:cacheprovider\"\nlog_parser = \"pytest\"\n\n[[repos.\"acme/calc\".specs]]\nversions = [\"1.0\"]\npython = \"3.11\"\nprovider = \"venv\"\nbase_image = \"{BASE_IMAGE}\"\npip_packages = [\"pytest==8.3.3\"]\neval_commands = [\"export PYTHONPATH=/testbed\"]\n"
        ),
    )
    .unwrap();
    let out_dir = h.join("run");
    let run_id = format!("dataset-loop-{}", std::process::id());
    for args in [
        vec![
            "dataset",
            "retrieve",
            "--dataset",
            p(&f.dataset),
            "--repo-mirror",
            p(&f.mirrors),
            "--include-tests",
            "--skip-undecodable",
            "--out",
            p(&hits),
        ],
        vec![
            "dataset",
            "build",
            "--dataset",
            p(&f.dataset),
            "--hits",
            p(&hits),
            "--repo-mirror",
            p(&f.mirrors),
            "--out",
            p(&text),
        ],
        vec![
            "dataset",
            "swt",
            "--input",
            p(&text),
            "--mode",
            "zsp",
            "--filter-swt",
            "none",
            "--out",
            p(&swt),
        ],
        vec![
            "run",
            "--is-swt",
            "--dataset",
            p(&swt),
            "--predictions",
            "gold",
            "--repo-mirror",
            p(&f.mirrors),
            "--spec-table",
            p(&table),
            "--run-id",
            &run_id,
            "--output-dir",
            p(&out_dir),
            "--timeout",
            "120",
            "--max-workers",
            "2",
            "--no-html",
        ],
    ] {
        let o = swtbench(&args, h);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
    for id in ["acme__calc-1", "acme__calc-2"] {
        let path = out_dir
            .join("run_instance_swt_logs")
            .join(&run_id)
            .join("gold")
            .join(id)
            .join("report.json");
        let report: Value = serde_json::from_str(
            &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        )
        .unwrap();
        let r = &report[id];
        assert_eq!(r["patch_successfully_applied"], true, "{id}: {report}");
        assert_eq!(r["resolved"], true, "{id}: {report}");
        // The gold test file of the swapped rows is the one the runs executed.
        let f2p = r["tests_pred"]["FAIL_TO_PASS"].to_string();
        assert!(f2p.contains("test_divide_by_zero"), "{id}: {report}");
    }
}
