//! `swtbench spec`, run as the built binary: the offline Lite rendering, requirement files from
//! test-made git mirrors and from a local stand-in for GitHub raw (with its cache), predictions,
//! reproduction mode and the per-instance error files.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use swtbench_core::hash::sha256_hex;
use swtbench_spec::SpecTable;

const FILES: [&str; 15] = [
    "base.Dockerfile",
    "directives.json",
    "env.Dockerfile",
    "eval/base_post.sh",
    "eval/base_pre.sh",
    "eval/gold_post.sh",
    "eval/gold_pre.sh",
    "eval/pred_post.sh",
    "eval/pred_pre.sh",
    "instance.Dockerfile",
    "keys.json",
    "setup_env.sh",
    "setup_repo.sh",
    // What env.Dockerfile copies in at its end: the tracer's native line counter.
    "swtbench-tracer/build-native.sh",
    "swtbench-tracer/swtbench_lines.c",
];

/// Runs the binary with private cache directories and no proxies or mirror settings.
fn swtbench(args: &[&str], home: &Path, extra_env: &[(&str, &str)]) -> Output {
    let mut cmd = crate::support::binary::command();
    cmd.args(args)
        .env("HOME", home)
        .env("HF_HOME", home.join("hf"))
        .env("SWTBENCH_CACHE_DIR", home.join("cache"))
        .env_remove("XDG_CACHE_HOME")
        .env_remove("SWTBENCH_REPO_MIRROR")
        .env_remove("SWTBENCH_GITHUB_RAW")
        .env_remove("SWTBENCH_OFFLINE")
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("HF_ENDPOINT");
    for k in [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn files_under(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn read(dir: &Path, f: &str) -> String {
    std::fs::read_to_string(dir.join(f)).unwrap()
}

/// The keys in keys.json follow the SHA-256 rule over the rendered scripts (conda entries).
fn assert_keys(dir: &Path) {
    let keys: Value = serde_json::from_str(&read(dir, "keys.json")).unwrap();
    let env = &sha256_hex(read(dir, "setup_env.sh"))[..22];
    let repo = &sha256_hex(read(dir, "setup_repo.sh"))[..22];
    assert_eq!(keys["base"], "exec.base.x86_64:latest", "{}", dir.display());
    assert_eq!(keys["env"], format!("exec.env.x86_64.{env}:latest"));
    assert_eq!(
        keys["instance"],
        format!("exec.eval.x86_64.{env}.{repo}:latest")
    );
}

fn spec_snapshots() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../swtbench-spec/tests/snapshots")
}

#[test]
fn offline_lite_renders_every_instance_that_needs_no_download() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = swtbench(
        &[
            "spec",
            "--dataset",
            "lite",
            "--offline",
            "--arch",
            "x86_64",
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let table = SpecTable::embedded();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut rendered = 0;
    let mut failed = 0;
    for line in stdout.lines() {
        let (id, what) = line.split_once('\t').unwrap();
        let dir = out.join(id);
        if what == "error" {
            assert_eq!(files_under(&dir), vec!["error.txt"]);
            let e = read(&dir, "error.txt");
            assert!(e.contains("offline") && e.contains("hint: "), "{e}");
            failed += 1;
        } else {
            assert_eq!(files_under(&dir), FILES.to_vec(), "{id}");
            assert_keys(&dir);
            let keys: Value = serde_json::from_str(&read(&dir, "keys.json")).unwrap();
            assert_eq!(keys["instance"], what);
            rendered += 1;
        }
    }
    assert_eq!(rendered + failed, 300);
    // Exactly the instances whose packages style needs a file from the repository failed.
    let lite = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/datasets/swebench_lite_test.jsonl"),
    );
    if let Ok(text) = lite {
        let mut needs_files = 0;
        for l in text.lines() {
            let row: Value = serde_json::from_str(l).unwrap();
            let e = table
                .lookup(
                    row["repo"].as_str().unwrap(),
                    row["version"].as_str().unwrap(),
                )
                .unwrap();
            let fetches = matches!(
                e.spec.packages.as_deref(),
                Some("requirements.txt") | Some("environment.yml")
            );
            let id = row["instance_id"].as_str().unwrap();
            assert_eq!(out.join(id).join("error.txt").exists(), fetches, "{id}");
            needs_files += usize::from(fetches);
        }
        assert_eq!(failed, needs_files);
    }
    assert_eq!(rendered, 148);
    // The instances that are also in the spec crate's snapshots are byte-identical to them (the
    // snapshots were produced by the original's code).
    let mut compared = 0;
    for entry in std::fs::read_dir(spec_snapshots()).unwrap() {
        let snap = entry.unwrap().path();
        let id = snap.file_name().unwrap().to_string_lossy().into_owned();
        let ours = out.join(&id);
        if !ours.join("keys.json").exists() {
            continue;
        }
        // Apart from the build of the tracer's native line counter that swtbench adds at the end
        // of env.Dockerfile, and the two files it copies in.
        let native = &FILES[13..];
        let ours_files: Vec<String> = files_under(&ours)
            .into_iter()
            .filter(|f| !native.contains(&f.as_str()))
            .collect();
        assert_eq!(files_under(&snap), ours_files, "{id}");
        for f in files_under(&snap) {
            let mut expected = read(&snap, &f);
            if f == "env.Dockerfile" {
                expected.push_str(&swtbench_tracer::native_dockerfile_lines());
            }
            assert_eq!(expected, read(&ours, &f), "{id}/{f}");
        }
        compared += 1;
    }
    assert!(compared >= 6, "only {compared} snapshot instances compared");
}

use crate::support::git;

/// A repository with `files` committed, mirrored (bare) to `mirrors/<owner>__<name>.git`.
/// Returns the commit.
fn make_mirror(root: &Path, repo: &str, files: &[(&str, &str)]) -> String {
    let work = root.join("work").join(repo.replace('/', "__"));
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    for (path, text) in files {
        let p = work.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "init"]);
    let commit = git(&work, &["rev-parse", "HEAD"]);
    let mirror = root
        .join("mirrors")
        .join(format!("{}.git", repo.replace('/', "__")));
    git(
        root,
        &[
            "clone",
            "-q",
            "--mirror",
            work.to_str().unwrap(),
            mirror.to_str().unwrap(),
        ],
    );
    commit
}

fn row(id: &str, repo: &str, version: &str, commit: &str) -> String {
    json!({
        "instance_id": id, "repo": repo, "version": version, "base_commit": commit,
        "environment_setup_commit": commit,
        "patch": "diff --git a/pkg/core.py b/pkg/core.py\n--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -1 +1 @@\n-a\n+b\n",
        "test_patch": "diff --git a/tests/test_core.py b/tests/test_core.py\n--- a/tests/test_core.py\n+++ b/tests/test_core.py\n@@ -1 +1 @@\n-a\n+b\n",
        "FAIL_TO_PASS": "[]", "PASS_TO_PASS": "[]",
    })
    .to_string()
}

const TABLE: &str = r#"
[repos."acme/widget"]
test_command = "pytest -rA"
requirements_paths = ["requirements/missing.txt", "requirements/dev.txt"]

[[repos."acme/widget".specs]]
versions = ["1.0"]
python = "3.11"
packages = "requirements.txt"
install = "python -m pip install -e ."

[repos."acme/gadget"]
test_command = "pytest -rA"
environment_yml_paths = ["ci/environment.yml", "environment.yml"]

[[repos."acme/gadget".specs]]
versions = ["2.0"]
python = "3.10"
packages = "environment.yml"
no_use_env = true
install = "python -m pip install -e ."
"#;

#[test]
fn requirement_files_come_from_test_made_mirrors() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let widget = make_mirror(
        root,
        "acme/widget",
        &[
            (
                "requirements/dev.txt",
                "# dev\n-r base.txt\n-e .\npytest>=7\n",
            ),
            ("requirements/base.txt", "numpy\n# pinned\nattrs==23.1\n"),
            ("pkg/core.py", "a\n"),
        ],
    );
    let gadget = make_mirror(
        root,
        "acme/gadget",
        &[(
            "environment.yml",
            "name: gadget-dev\ndependencies:\n  - numpy\n",
        )],
    );
    let dataset = root.join("data.jsonl");
    std::fs::write(
        &dataset,
        [
            row("acme__widget-1", "acme/widget", "1.0", &widget),
            row("acme__gadget-1", "acme/gadget", "2.0", &gadget),
            // A commit the mirror does not have, and offline: cannot be determined.
            row(
                "acme__widget-2",
                "acme/widget",
                "1.0",
                "0123456789abcdef0123456789abcdef01234567",
            ),
            // A version the table does not know.
            row("acme__widget-3", "acme/widget", "9.9", &widget),
        ]
        .join("\n")
            + "\n",
    )
    .unwrap();
    let table = root.join("table.toml");
    std::fs::write(&table, TABLE).unwrap();
    let out = root.join("out");
    let o = swtbench(
        &[
            "spec",
            "--dataset",
            dataset.to_str().unwrap(),
            "--spec-table",
            table.to_str().unwrap(),
            "--repo-mirror",
            root.join("mirrors").to_str().unwrap(),
            "--offline",
            "--arch",
            "x86_64",
            "--out",
            out.to_str().unwrap(),
        ],
        root,
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));

    let w = out.join("acme__widget-1");
    assert_eq!(files_under(&w), FILES.to_vec());
    assert_eq!(
        read(&w, "setup_env.sh"),
        "#!/bin/bash\nset -euxo pipefail\nsource /opt/miniconda3/bin/activate\n\
         conda create -n testbed python=3.11 -y\n\
         cat <<'EOF_59812759871' > $HOME/requirements.txt\nnumpy\nattrs==23.1\n\npytest>=7\n\nEOF_59812759871\n\
         conda activate testbed && python -m pip install -r $HOME/requirements.txt\n\
         rm $HOME/requirements.txt\nconda activate testbed\n"
    );
    assert_keys(&w);
    assert_eq!(
        serde_json::from_str::<Value>(&read(&w, "directives.json")).unwrap(),
        json!(["tests/test_core.py"])
    );

    let g = out.join("acme__gadget-1");
    assert!(read(&g, "setup_env.sh").contains(
        "cat <<'EOF_59812759871' > environment.yml\nname: testbed\ndependencies:\n  - numpy\n\nEOF_59812759871\n\
         conda create -c conda-forge -n testbed python=3.10 -y\nconda env update -f environment.yml\nrm environment.yml\n"
    ));
    assert_keys(&g);

    let e = read(&out.join("acme__widget-2"), "error.txt");
    assert!(
        e.contains("acme/widget")
            && e.contains("0123456789abcdef0123456789abcdef01234567")
            && e.contains("requirements/missing.txt"),
        "{e}"
    );
    let e = read(&out.join("acme__widget-3"), "error.txt");
    assert!(
        e.contains("9.9") && e.contains("known versions: 1.0") && e.contains("--spec-table"),
        "{e}"
    );

    // A repository whose files are missing at the commit: the error names every path tried.
    let bare = make_mirror(root, "acme/bare", &[("README", "x\n")]);
    let table2 = root.join("table2.toml");
    std::fs::write(
        &table2,
        "[repos.\"acme/bare\"]\ntest_command = \"pytest\"\nrequirements_paths = [\"a.txt\", \"b/c.txt\"]\n\
         [[repos.\"acme/bare\".specs]]\nversions = [\"1\"]\npython = \"3.9\"\npackages = \"requirements.txt\"\n",
    )
    .unwrap();
    let ds2 = root.join("bare.jsonl");
    std::fs::write(&ds2, row("acme__bare-1", "acme/bare", "1", &bare) + "\n").unwrap();
    let o = swtbench(
        &[
            "spec",
            "--dataset",
            ds2.to_str().unwrap(),
            "--spec-table",
            table2.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--offline",
        ],
        root,
        &[(
            "SWTBENCH_REPO_MIRROR",
            root.join("mirrors").to_str().unwrap(),
        )],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = read(&out.join("acme__bare-1"), "error.txt");
    assert!(
        e.contains("acme/bare") && e.contains(&bare) && e.contains("a.txt, b/c.txt"),
        "{e}"
    );
}

/// A minimal HTTP/1.1 server answering GETs from a map of paths; counts requests.
fn serve(files: BTreeMap<String, String>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/", listener.local_addr().unwrap());
    let log = Arc::new(Mutex::new(Vec::new()));
    let log2 = log.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
            }
            let path = request.split(' ').nth(1).unwrap_or("/").to_string();
            log2.lock().unwrap().push(path.clone());
            let resp = match files.get(path.trim_start_matches('/')) {
                Some(body) => format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                ),
                None => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_string(),
            };
            let _ = stream.write_all(resp.as_bytes());
        }
    });
    (base, log)
}

#[test]
fn requirement_files_come_from_github_raw_and_its_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let commit = "c0ffee0000000000000000000000000000000000";
    let mut files = BTreeMap::new();
    files.insert(
        format!("acme/widget/{commit}/requirements/dev.txt"),
        // The original slices `-r` off the unstripped line, so the indented include asks for
        // `requirements/-r opt.txt`: a 404 (the space percent-encoded), not a failure.
        "-r base.txt\nflask\n  -r opt.txt\n".to_string(),
    );
    files.insert(
        format!("acme/widget/{commit}/requirements/base.txt"),
        "click\n".to_string(),
    );
    let (base, log) = serve(files);
    let dataset = root.join("data.jsonl");
    std::fs::write(
        &dataset,
        row("acme__widget-1", "acme/widget", "1.0", commit) + "\n",
    )
    .unwrap();
    let table = root.join("table.toml");
    std::fs::write(&table, TABLE).unwrap();
    let out = root.join("out");
    let args = [
        "spec",
        "--dataset",
        dataset.to_str().unwrap(),
        "--spec-table",
        table.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let o = swtbench(&args, root, &[("SWTBENCH_GITHUB_RAW", &base)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let env = read(&out.join("acme__widget-1"), "setup_env.sh");
    assert!(
        env.contains("> $HOME/requirements.txt\nclick\n\nflask\n\nEOF_59812759871\n"),
        "{env}"
    );
    let requested = log.lock().unwrap().clone();
    assert_eq!(
        requested,
        vec![
            format!("/acme/widget/{commit}/requirements/missing.txt"),
            format!("/acme/widget/{commit}/requirements/dev.txt"),
            format!("/acme/widget/{commit}/requirements/base.txt"),
            format!("/acme/widget/{commit}/requirements/-r%20opt.txt"),
        ]
    );
    // Offline, the cache answers (including the remembered 404) and renders the same text.
    std::fs::remove_dir_all(&out).unwrap();
    let mut offline = args.to_vec();
    offline.push("--offline");
    let o = swtbench(&offline, root, &[("SWTBENCH_GITHUB_RAW", &base)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(read(&out.join("acme__widget-1"), "setup_env.sh"), env);
    assert_eq!(
        log.lock().unwrap().len(),
        4,
        "offline must not touch the network"
    );
}

#[test]
fn predictions_and_reproduction_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let dataset = root.join("data.jsonl");
    let req_rows = ["psf__requests-1", "psf__requests-2"]
        .iter()
        .map(|id| row(id, "psf/requests", "2.3", "abc"))
        .collect::<Vec<_>>();
    std::fs::write(&dataset, req_rows.join("\n") + "\n").unwrap();
    let preds = root.join("preds.jsonl");
    let model_patch = "diff --git a/repro.py b/repro.py\nnew file mode 100644\n--- /dev/null\n+++ b/repro.py\n@@ -0,0 +1 @@\n+import requests\n";
    std::fs::write(
        &preds,
        json!({"instance_id": "psf__requests-1", "model_name_or_path": "org/model", "model_patch": model_patch})
            .to_string()
            + "\n",
    )
    .unwrap();
    let out = root.join("out");
    let base_args = [
        "spec",
        "--dataset",
        dataset.to_str().unwrap(),
        "--predictions",
        preds.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--offline",
        "--exec_mode",
        "reproduction_script",
    ];
    // The script name is required in reproduction mode.
    let o = swtbench(&base_args, root, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--reproduction-script-name"),
        "{}",
        stderr(&o)
    );

    let mut args = base_args.to_vec();
    args.extend(["--reproduction-script-name", "repro.py", "--no-coverage"]);
    let o = swtbench(&args, root, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Only the instance with a prediction is rendered.
    assert!(out.join("psf__requests-1").is_dir());
    assert!(!out.join("psf__requests-2").exists());
    let pre = read(&out.join("psf__requests-1"), "eval/pred_pre.sh");
    assert!(pre.contains(&format!(
        "git apply -v - <<'EOF_114329324912'\n{model_patch}\nEOF_114329324912\npython3 /testbed/repro.py\necho $?\ngit checkout abc\n"
    )), "{pre}");
    let gold = read(&out.join("psf__requests-1"), "eval/gold_pre.sh");
    assert!(gold.contains("diff --git a/tests/test_core.py"), "{gold}");
    assert!(!gold.contains("coverage.cover"));

    // The fixed tracer mode exports its switch just before the traced test command.
    let fixed_out = root.join("fixed");
    let mut args: Vec<&str> = base_args.to_vec();
    let at = args.iter().position(|a| *a == "--out").unwrap();
    args[at + 1] = fixed_out.to_str().unwrap();
    args.extend([
        "--reproduction-script-name",
        "repro.py",
        "--tracer-mode",
        "fixed",
    ]);
    let o = swtbench(&args, root, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let pre = read(&fixed_out.join("psf__requests-1"), "eval/pred_pre.sh");
    assert!(
        pre.contains("\nexport SWTBENCH_TRACE_COMPAT=0\npython3 /root/trace.py --count"),
        "{pre}"
    );
    // The fixed mode is a mode of the tracer: without coverage it is refused.
    args.push("--no-coverage");
    let o = swtbench(&args, root, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--tracer-mode fixed needs the coverage tracer"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_empty_prediction_is_rendered_with_a_note_that_run_does_not_execute_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let dataset = root.join("data.jsonl");
    std::fs::write(
        &dataset,
        row("psf__requests-1", "psf/requests", "2.3", "abc") + "\n",
    )
    .unwrap();
    let preds = root.join("preds.jsonl");
    std::fs::write(
        &preds,
        json!({"instance_id": "psf__requests-1", "model_name_or_path": "org/model", "model_patch": ""})
            .to_string()
            + "\n",
    )
    .unwrap();
    let out = root.join("out");
    let o = swtbench(
        &[
            "spec",
            "--dataset",
            dataset.to_str().unwrap(),
            "--predictions",
            preds.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--offline",
        ],
        root,
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("psf__requests-1: the prediction has no usable patch"),
        "{}",
        stderr(&o)
    );
    assert!(out.join("psf__requests-1/eval/pred_pre.sh").is_file());
}

/// Each entry of the embedded lock (assets/environments/uv.lock) names, as `unlocked_env`, the
/// environment its instances get today without the lock: a change of what goes into an env image
/// key (a spec entry, the Python image, the tracer's build lines) that is not carried into the
/// lock leaves every locked environment installed unlocked, with other packages. The instances'
/// rows and the requirement files their packages style reads come from
/// fixtures/embedded-lock/ (served as GitHub raw would).
#[test]
fn the_embedded_lock_names_the_environments_rendered_today() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let workspace = crate::support::cli::workspace();
    let fixtures = workspace.join("fixtures/embedded-lock");
    let raw = fixtures.join("raw");
    let served: BTreeMap<String, String> = files_under(&raw)
        .into_iter()
        .map(|f| (f.clone(), read(&raw, &f)))
        .collect();
    let (base, _) = serve(served);
    let lock = std::fs::read_to_string(workspace.join("assets/environments/uv.lock")).unwrap();
    // (instance, unlocked_env) of every entry.
    let mut expected: BTreeMap<String, String> = BTreeMap::new();
    for block in lock.split("\n[[env]]\n").skip(1) {
        let field = |name: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name} = ")))
                .unwrap_or_else(|| panic!("an entry without {name}: {block}"))
                .to_string()
        };
        let env = field("unlocked_env").trim_matches('"').to_string();
        let instances: Vec<String> = serde_json::from_str(&field("instances")).unwrap();
        for i in instances {
            expected.insert(i, env.clone());
        }
    }
    assert!(expected.len() >= 9, "{expected:?}");
    let dataset = fixtures.join("dataset.jsonl");
    let ids: Vec<&str> = expected.keys().map(String::as_str).collect();
    let ids = ids.join(",");
    for locked in [false, true] {
        let out = root.join(if locked { "locked" } else { "unlocked" });
        let mut args = vec![
            "spec",
            "--dataset",
            dataset.to_str().unwrap(),
            "--env-provider",
            "uv",
            "--instance-ids",
            &ids,
            "--out",
            out.to_str().unwrap(),
        ];
        if !locked {
            args.push("--no-env-lock");
        }
        let o = swtbench(&args, root, &[("SWTBENCH_GITHUB_RAW", &base)]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(
            !stderr(&o).contains("made from other inputs"),
            "{}",
            stderr(&o)
        );
        for (id, env) in &expected {
            let keys: Value = serde_json::from_str(&read(&out.join(id), "keys.json")).unwrap();
            if !locked {
                assert_eq!(
                    keys["env"].as_str(),
                    Some(env.as_str()),
                    "{id}: the embedded lock's unlocked_env is not the environment rendered today; \
                     write the lock's keys again (docs/environments.md, \"The lock compiled in\")"
                );
            } else {
                assert_ne!(keys["env"].as_str(), Some(env.as_str()), "{id}: not locked");
                assert!(
                    read(&out.join(id), "setup_env.sh").contains("--no-deps"),
                    "{id}: the locked environment installs its pins"
                );
            }
        }
    }
}
