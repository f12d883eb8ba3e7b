//! The extraction cache in an instance's log directory, and reading base files from a real git
//! mirror.

use crate::common;

use std::cell::Cell;
use std::collections::BTreeMap;

use swtbench_extract::cache::{load_or_extract, KEY_FILE, PATCH_FILE, RAW_FILE};
use swtbench_extract::{
    extract, AttemptOutcome, ExtractOptions, FileSource, FuzzyStyle, GitMirrorSource, MemorySource,
    PatchType,
};

const FILE: &str = "a\nb\nc\n";
const ANSWER: &str = "--- a/x.txt\n+++ b/x.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n";

fn source() -> MemorySource {
    MemorySource::new().with("x.txt", FILE)
}

#[test]
fn reuses_the_extraction_until_the_answer_or_the_settings_change() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run/model/instance");
    let types = [PatchType::Vanilla, PatchType::Fuzzy];
    let opts = ExtractOptions::default();
    let runs = Cell::new(0);
    let run = |answer: &str, opts: &ExtractOptions| {
        load_or_extract(&log, answer, &types, opts, || {
            runs.set(runs.get() + 1);
            extract(answer, &types, &source(), None, opts)
        })
        .unwrap()
    };

    let first = run(ANSWER, &opts);
    assert!(!first.reused);
    assert_eq!(first.extraction.patch_type_used, Some(PatchType::Fuzzy));
    assert_eq!(std::fs::read_to_string(log.join(RAW_FILE)).unwrap(), ANSWER);
    assert_eq!(
        std::fs::read_to_string(log.join(PATCH_FILE)).unwrap(),
        first.extraction.patch
    );
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(log.join(KEY_FILE)).unwrap()).unwrap();
    assert_eq!(record["patch_type_used"], "fuzzy");
    assert_eq!(record["attempts"][0]["outcome"], "failed");
    assert_eq!(record["attempts"][0]["error"]["kind"], "unflushed_patch");

    // Ordinary file modes: what a plain `File::create` in the same directory gets.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let reference = log.join("reference");
        std::fs::File::create(&reference).unwrap();
        for name in [RAW_FILE, PATCH_FILE, KEY_FILE] {
            assert_eq!(mode(&log.join(name)), mode(&reference), "{name}");
        }
        std::fs::remove_file(&reference).unwrap();
    }

    let second = run(ANSWER, &opts);
    assert!(second.reused);
    assert_eq!(runs.get(), 1);
    assert_eq!(second.extraction.patch, first.extraction.patch);
    assert_eq!(second.extraction.attempts, first.extraction.attempts);

    let changed = format!("{ANSWER} \n");
    assert!(!run(&changed, &opts).reused);
    assert_eq!(runs.get(), 2);
    let other_style = ExtractOptions {
        fuzzy_style: FuzzyStyle::Fixed,
        ..opts
    };
    assert!(!run(&changed, &other_style).reused);
    assert!(run(&changed, &other_style).reused);
    assert_eq!(runs.get(), 3);

    // A diff without its key (for example one the original harness wrote) is not trusted.
    std::fs::remove_file(log.join(KEY_FILE)).unwrap();
    assert!(!run(&changed, &other_style).reused);
    assert_eq!(runs.get(), 4);
}

#[test]
fn failures_are_recorded_and_infrastructure_failures_are_retried() {
    let dir = tempfile::tempdir().unwrap();
    let types = [PatchType::Custom];
    let opts = ExtractOptions::default();
    let answer = "diff\nx.txt\ninsert\nEOF\nx = 1\nend diff\n";
    // No interpreter: an infrastructure failure, written but not keyed.
    let first = load_or_extract(dir.path(), answer, &types, &opts, || {
        extract(answer, &types, &source(), None, &opts)
    })
    .unwrap();
    assert!(!first.extraction.succeeded());
    assert_eq!(
        std::fs::read_to_string(dir.path().join(PATCH_FILE)).unwrap(),
        ""
    );
    assert!(!dir.path().join(KEY_FILE).exists());

    // A failure of the answer itself is keyed, with its reason.
    let bad = "no diff at all";
    let out = load_or_extract(dir.path(), bad, &types, &opts, || {
        extract(bad, &types, &source(), None, &opts)
    })
    .unwrap();
    assert!(matches!(
        out.extraction.attempts[0].outcome,
        AttemptOutcome::Failed { .. }
    ));
    let again = load_or_extract(dir.path(), bad, &types, &opts, || unreachable!()).unwrap();
    assert!(again.reused);
    assert_eq!(
        again.extraction.failure_summary(),
        "custom: no custom-diff block (`diff` / path / rewrite|insert / line / code / `end diff`) found in the model output"
    );
}

#[test]
fn git_mirror_source_reads_files_at_the_base_commit() {
    let files: BTreeMap<String, String> = [
        ("src/m.py".to_string(), "x = 1\n".to_string()),
        ("README".to_string(), "hi\n".to_string()),
    ]
    .into();
    let (work, commit) = common::git_repo(&files);
    // A later commit changes the file: the source must still answer for the base commit.
    std::fs::write(work.path().join("src/m.py"), "x = 2\n").unwrap();
    assert!(common::git(work.path(), &["commit", "-qam", "later"])
        .status
        .success());
    let mirror = tempfile::tempdir().unwrap();
    let bare = mirror.path().join("owner__repo.git");
    let out = common::git(
        work.path(),
        &["clone", "-q", "--mirror", ".", bare.to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let src = GitMirrorSource::new(&bare, &commit);
    assert_eq!(src.read("src/m.py").unwrap().as_deref(), Some("x = 1\n"));
    assert_eq!(src.read("src/missing.py").unwrap(), None);
    assert_eq!(
        src.read("src").unwrap_err().kind,
        swtbench_extract::SourceErrorKind::NotAFile
    );
    assert_eq!(src.read("README").unwrap().as_deref(), Some("hi\n"));

    let unknown = GitMirrorSource::new(&bare, "0123456789012345678901234567890123456789");
    let err = unknown.read("src/m.py").unwrap_err();
    assert!(
        err.detail.contains("not found; fetch it into the mirror"),
        "{err}"
    );
    assert_eq!(err.kind, swtbench_extract::SourceErrorKind::Unavailable);

    // End to end: fuzzy against the mirror.
    let answer = "--- a/src/m.py\n+++ b/src/m.py\n@@ -1,1 +1,2 @@\n x = 1\n+y = 2\n";
    let opts = ExtractOptions {
        fuzzy_style: FuzzyStyle::Fixed,
        ..ExtractOptions::default()
    };
    let ex = extract(answer, &[PatchType::Fuzzy], &src, None, &opts);
    assert_eq!(ex.files[0].new, "x = 1\ny = 2\n");
}

/// A symbolic link in the repository, or a path through one, is not a file to patch: editing the
/// link's text would retarget it, and `git apply` refuses to write beyond a link. Both sources
/// say so, and every patch type fails on it with that reason.
#[cfg(unix)]
#[test]
fn symbolic_links_and_paths_through_them_are_refused() {
    use swtbench_extract::{DirSource, SourceErrorKind};
    let files: BTreeMap<String, String> =
        [("tests/test_a.py".to_string(), "x = 1\n".to_string())].into();
    let (work, _) = common::git_repo(&files);
    std::os::unix::fs::symlink("test_a.py", work.path().join("tests/link.py")).unwrap();
    std::os::unix::fs::symlink("/etc", work.path().join("etc")).unwrap();
    std::os::unix::fs::symlink("tests", work.path().join("tlink")).unwrap();
    assert!(common::git(work.path(), &["add", "-A"]).status.success());
    assert!(common::git(work.path(), &["commit", "-qm", "links"])
        .status
        .success());
    let commit = String::from_utf8(common::git(work.path(), &["rev-parse", "HEAD"]).stdout)
        .unwrap()
        .trim()
        .to_string();
    let mirror = tempfile::tempdir().unwrap();
    let bare = mirror.path().join("owner__repo.git");
    let out = common::git(
        work.path(),
        &["clone", "-q", "--mirror", ".", bare.to_str().unwrap()],
    );
    assert!(out.status.success());

    let git_src = GitMirrorSource::new(&bare, &commit);
    let dir_src = DirSource::new(work.path());
    for src in [&git_src as &dyn FileSource, &dir_src] {
        assert_eq!(
            src.read("tests/test_a.py").unwrap().as_deref(),
            Some("x = 1\n")
        );
        let err = src.read("tests/link.py").unwrap_err();
        assert_eq!(
            (err.kind, err.detail.as_str()),
            (SourceErrorKind::NotAFile, "a symbolic link")
        );
        for (path, link) in [
            ("etc/passwd", "etc"),
            ("tlink/test_a.py", "tlink"),
            ("tlink/new.py", "tlink"),
        ] {
            let err = src.read(path).unwrap_err();
            assert_eq!(err.kind, SourceErrorKind::NotAFile, "{path}");
            assert_eq!(
                err.detail,
                format!("beyond a symbolic link ({link})"),
                "{path}"
            );
        }
        assert_eq!(src.read("tests/missing.py").unwrap(), None);
    }

    let answers = [
        "--- a/tests/link.py\n+++ b/tests/link.py\n@@ -1,1 +1,2 @@\n x = 1\n+y = 2\n",
        "--- /dev/null\n+++ b/tlink/test_new.py\n@@ -0,0 +1,1 @@\n+y = 2\n",
    ];
    // Only the fixed styles read `--- /dev/null` sections.
    let opts = ExtractOptions {
        vanilla_style: swtbench_extract::VanillaStyle::Fixed,
        fuzzy_style: swtbench_extract::FuzzyStyle::Fixed,
        ..ExtractOptions::default()
    };
    for answer in answers {
        let ex = extract(
            answer,
            &[PatchType::Vanilla, PatchType::Fuzzy],
            &git_src,
            None,
            &opts,
        );
        assert!(!ex.succeeded(), "{answer}: {}", ex.patch);
        let summary = ex.failure_summary();
        assert_eq!(summary.matches("symbolic link").count(), 2, "{summary}");
        assert!(ex.is_cacheable());
    }
}

/// git abbreviates ids by the repository's object count: a mirror of 16 400+ packed objects gets
/// 8 hex digits, and the extracted diff is the bytes `git diff` writes in a clone of it.
#[test]
fn ids_are_abbreviated_by_the_mirror_object_count_as_git_does() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("many")).unwrap();
    for i in 0..16_400 {
        std::fs::write(work.join(format!("many/{i}.txt")), format!("{i}\n")).unwrap();
    }
    std::fs::write(work.join("x.txt"), FILE).unwrap();
    assert!(common::git(&work, &["init", "-q"]).status.success());
    assert!(common::git(&work, &["add", "-A"]).status.success());
    assert!(common::git(&work, &["commit", "-qm", "base"])
        .status
        .success());
    let commit = String::from_utf8(common::git(&work, &["rev-parse", "HEAD"]).stdout)
        .unwrap()
        .trim()
        .to_string();
    let bare = dir.path().join("mirror.git");
    let clone = dir.path().join("clone");
    for args in [
        // `--no-local`: packed as a network clone is (a local clone links loose objects).
        &[
            "clone",
            "-q",
            "--no-local",
            "--mirror",
            ".",
            bare.to_str().unwrap(),
        ][..],
        &[
            "clone",
            "-q",
            "--no-local",
            bare.to_str().unwrap(),
            clone.to_str().unwrap(),
        ][..],
    ] {
        assert!(common::git(&work, args).status.success());
    }
    let src = GitMirrorSource::new(&bare, &commit);
    let count = src.object_count().unwrap();
    assert!(count > 16_384, "{count}");
    let ex = extract(
        ANSWER,
        &[PatchType::Fuzzy],
        &src,
        None,
        &ExtractOptions {
            fuzzy_style: FuzzyStyle::Fixed,
            ..ExtractOptions::default()
        },
    );
    assert!(ex.succeeded(), "{}", ex.failure_summary());
    std::fs::write(clone.join("x.txt"), &ex.files[0].new).unwrap();
    let git_diff = common::git(&clone, &["diff", "--no-color", &commit]);
    let git_diff = String::from_utf8(git_diff.stdout).unwrap();
    assert!(git_diff.contains("index de980441.."), "{git_diff}");
    assert_eq!(ex.patch, git_diff);
    // No count known (memory source): git's fallback of 7.
    let ex = extract(
        ANSWER,
        &[PatchType::Fuzzy],
        &source(),
        None,
        &ExtractOptions::default(),
    );
    assert!(ex.patch.contains("index de98044.."), "{}", ex.patch);
}
