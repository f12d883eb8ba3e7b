//! An instance image built from a repository mirror on the real engine: the image clones the small
//! repository made for the base commit, and inside the container the tree, `git status`,
//! `git describe` (also as the install step saw it), the abbreviated hash, the branch, the remotes
//! and the history's commits are what a full clone reset to the base commit gives; objects only
//! the later history or another branch reach are not there.
//!
//! Needs Docker and the local base image `swtbench-fixture-base:bookworm` (`scripts/base-image`).
//! The env and instance images it builds are its own (an env entry no other test has) and are
//! removed at the end, like the output directory.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::engine_fixture::*;

fn git_cmd(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1");
    c
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_cmd(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn commit(work: &Path, file: &str, text: &str, msg: &str) -> String {
    std::fs::write(work.join(file), text).unwrap();
    git(work, &["add", "-A"]);
    git(work, &["commit", "-q", "-m", msg]);
    git(work, &["rev-parse", "HEAD"])
}

/// Removes the images named when dropped (also when the test fails).
struct Images(Vec<String>);

impl Drop for Images {
    fn drop(&mut self) {
        for tag in &self.0 {
            let _ = Command::new("docker")
                .args(["image", "rm", "-f", tag])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

fn image_exists(tag: &str) -> bool {
    Command::new("docker")
        .args(["image", "inspect", tag])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// The lines tests could look at, in the order of [`PROBE`].
const PROBE: &str = "cd /testbed && \
    echo tree=$(git rev-parse 'HEAD^{tree}') && echo head=$(git rev-parse HEAD) && \
    echo status=[$(git status --porcelain)] && \
    echo describe=$(git describe --tags --long --dirty) && \
    echo describe_always=$(git describe --tags --always) && \
    echo short=$(git rev-parse --short HEAD) && \
    echo branch=$(git branch --show-current) && echo remotes=[$(git remote -v)] && \
    echo log=$(git log --format=%H | tr '\\n' ' ') && \
    echo tags=$(git tag | tr '\\n' ' ')";

#[test]
fn engine_mirror_image_holds_what_a_full_clone_shows() {
    require_engine!();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let work = root.join("work");
    std::fs::create_dir_all(work.join("pkg")).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    let old = commit(&work, "pkg/a.py", "one\n", "c1");
    git(&work, &["tag", "-a", "v1.0", "-m", "release"]);
    commit(&work, "pkg/a.py", "two\n", "c2");
    let c3 = commit(&work, "README", "read me\n", "c3");
    let base = commit(&work, "pkg/b.py", "bee\n", "c4");
    commit(&work, "pkg/a.py", "later\n", "c5");
    git(&work, &["tag", "v2.0"]);
    // Enough objects after the base commit that a full clone abbreviates longer (8) than a
    // clone of the base commit's history alone would (7).
    let mut fi = git_cmd(&work)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let w = fi.stdin.as_mut().unwrap();
        writeln!(w, "commit refs/heads/main\ncommitter t <t@example.com> 1700000000 +0000\ndata 2\nc6\nfrom refs/heads/main^0").unwrap();
        for i in 0..17_000 {
            let data = format!("file {i}\n");
            writeln!(
                w,
                "M 100644 inline many/{i}.txt\ndata {}\n{data}",
                data.len()
            )
            .unwrap();
        }
    }
    assert!(fi.wait().unwrap().success());
    git(&work, &["checkout", "-q", "-b", "feature", &c3]);
    commit(&work, "feature.txt", "only on the feature branch\n", "feat");
    let feature_blob = git(&work, &["rev-parse", "HEAD:feature.txt"]);
    let feature_commit = git(&work, &["rev-parse", "HEAD"]);
    git(&work, &["checkout", "-q", "main"]);
    let mirrors = root.join("mirrors");
    let mirror = mirrors.join("swtfix__slimcheck.git");
    std::fs::create_dir_all(&mirrors).unwrap();
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

    // The reference: setup_repo.sh's git steps on a full clone.
    git(
        root,
        &[
            "clone",
            "-q",
            "-o",
            "origin",
            &format!("file://{}", mirror.display()),
            "full",
        ],
    );
    let full = root.join("full");
    git(&full, &["reset", "-q", "--hard", &base]);
    git(&full, &["remote", "remove", "origin"]);
    let probe = Command::new("bash")
        .args([
            "-c",
            &PROBE.replace("cd /testbed", &format!("cd {}", full.display())),
        ])
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(probe.status.success());
    let want = String::from_utf8(probe.stdout).unwrap();
    assert!(want.contains("describe=v1.0-3-g"), "{want}");
    assert!(
        want.lines()
            .any(|l| l.len() == "short=".len() + 8 && l.starts_with("short=")),
        "{want}"
    );

    let row = serde_json::json!({
        "repo": "swtfix/slimcheck", "instance_id": "swtfix__slimcheck-1",
        "base_commit": base, "environment_setup_commit": base, "version": "0.1",
        "patch": "", "test_patch": "", "problem_statement": "", "hints_text": "",
        "created_at": "2024-01-01T00:00:00Z", "FAIL_TO_PASS": "[]", "PASS_TO_PASS": "[]",
    });
    let dataset = root.join("dataset.jsonl");
    std::fs::write(&dataset, format!("{row}\n")).unwrap();
    let table = root.join("table.toml");
    std::fs::write(
        &table,
        format!(
            "format = 1\n[repos.\"swtfix/slimcheck\"]\ntest_command = \"true\"\nlog_parser = \"pytest\"\n\
             [[repos.\"swtfix/slimcheck\".specs]]\nversions = [\"0.1\"]\npython = \"3.11\"\n\
             provider = \"venv\"\nbase_image = \"{}\"\n\
             install = \"git describe --tags --long --dirty > /root/describe-at-install\"\n",
            base_image()
        ),
    )
    .unwrap();
    let spec_dir = root.join("spec");
    let spec_out = crate::engine_fixture::swtbench_command()
        .args(["spec", "--dataset"])
        .arg(&dataset)
        .arg("--spec-table")
        .arg(&table)
        .arg("--repo-mirror")
        .arg(&mirrors)
        .arg("--out")
        .arg(&spec_dir)
        .output()
        .unwrap();
    assert!(
        spec_out.status.success(),
        "spec: {}",
        String::from_utf8_lossy(&spec_out.stderr)
    );
    let keys: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(spec_dir.join("swtfix__slimcheck-1/keys.json")).unwrap(),
    )
    .unwrap();
    let keys = (
        keys["env"].as_str().unwrap().to_string(),
        keys["instance"].as_str().unwrap().to_string(),
    );
    let mut images = Images(Vec::new());
    for k in [&keys.1, &keys.0] {
        if !image_exists(k) {
            images.0.push(k.clone());
        }
    }
    assert!(
        images.0.contains(&keys.1),
        "the instance image {} exists already",
        keys.1
    );

    let out = crate::engine_fixture::swtbench_command()
        .args(["images", "build", "--dataset"])
        .arg(&dataset)
        .arg("--repo-mirror")
        .arg(&mirrors)
        .arg("--spec-table")
        .arg(&table)
        .arg("--output-dir")
        .arg(root.join("out"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "images build: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let run = |script: &str| {
        let o = Command::new("docker")
            .args([
                "run",
                "--rm",
                "--network",
                "none",
                "--label",
                "swtbench.test=engine_mirror",
            ])
            .arg(&keys.1)
            .args(["bash", "-c", script])
            .output()
            .unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (ok, got, err) = run(PROBE);
    assert!(ok, "{err}");
    // Tags pointing past the base commit are not in the image; everything else is the same.
    let strip_tags = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with("tags="))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip_tags(&got), strip_tags(&want));
    assert!(got.lines().any(|l| l == "tags=v1.0"), "{got}");
    let describe = want
        .lines()
        .find_map(|l| l.strip_prefix("describe="))
        .unwrap();
    let (ok, at_install, err) = run("cat /root/describe-at-install");
    assert!(ok, "{err}");
    assert_eq!(at_install.trim(), describe);

    // Not there: what only the feature branch or the later history reach, older trees; and no
    // trace of the build's repository or redirect.
    let check = format!(
        "cd /testbed; for o in {feature_blob} {feature_commit} v2.0 {old}^{{tree}}; do \
           git cat-file -e $o 2>/dev/null && echo present $o; done; \
         git cat-file -e {old} || echo missing-old-commit; \
         test -e /root/swtbench-mirror.git && echo mirror-left; \
         test -e $HOME/.gitconfig && echo gitconfig-left; \
         git config --get-regexp '^url\\.' && echo redirect-left; \
         echo abbrev=$(git config core.abbrev)"
    );
    let (ok, got, err) = run(&check);
    assert!(ok, "{err}");
    assert_eq!(got.trim(), "abbrev=8", "{got}");
}
