//! The git mirror reader against real bare repositories created here with the host `git`.

use std::path::Path;
use std::process::Command;

use swtbench_data::git_mirror::{mirror_dir_name, GitError, GitMirror};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A work tree with two commits, pushed into `<mirrors>/acme__widgets.git` (bare).
/// Returns (mirrors dir guard, first commit, second commit).
fn fixture() -> (tempfile::TempDir, String, String) {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    std::fs::create_dir_all(work.join("requirements")).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    std::fs::write(work.join("requirements/base.txt"), "numpy==1.0\n").unwrap();
    std::fs::write(work.join("setup.py"), "print('v1')\n").unwrap();
    std::fs::write(work.join("name with space.txt"), "spaced\n").unwrap();
    std::fs::write(work.join("binary.dat"), [0u8, 1, 2, b'\n', 255, 0]).unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "one"]);
    let c1 = git(&work, &["rev-parse", "HEAD"]);
    std::fs::write(work.join("setup.py"), "print('v2')\n").unwrap();
    std::fs::remove_file(work.join("requirements/base.txt")).unwrap();
    std::fs::write(work.join("environment.yml"), "name: testbed\n").unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "two"]);
    let c2 = git(&work, &["rev-parse", "HEAD"]);
    let mirrors = root.path().join("mirrors");
    std::fs::create_dir_all(&mirrors).unwrap();
    let bare = mirrors.join(mirror_dir_name("acme/widgets"));
    git(
        root.path(),
        &[
            "clone",
            "-q",
            "--mirror",
            work.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    (root, c1, c2)
}

#[test]
fn locate_show_and_missing_paths() {
    let (root, c1, c2) = fixture();
    let mirrors = root.path().join("mirrors");
    assert_eq!(mirror_dir_name("acme/widgets"), "acme__widgets.git");
    assert!(GitMirror::locate(&mirrors, "acme/gadgets")
        .unwrap()
        .is_none());
    let m = GitMirror::locate(&mirrors, "acme/widgets")
        .unwrap()
        .unwrap();

    assert_eq!(m.show(&c1, "setup.py").unwrap().unwrap(), b"print('v1')\n");
    assert_eq!(m.show(&c2, "setup.py").unwrap().unwrap(), b"print('v2')\n");
    assert_eq!(
        m.show(&c1, "requirements/base.txt").unwrap().unwrap(),
        b"numpy==1.0\n"
    );
    // Deleted at c2, added at c2: absence is None, not an error.
    assert_eq!(m.show(&c2, "requirements/base.txt").unwrap(), None);
    assert_eq!(m.show(&c1, "environment.yml").unwrap(), None);
    assert_eq!(
        m.show(&c1, "name with space.txt").unwrap().unwrap(),
        b"spaced\n"
    );
    assert_eq!(
        m.show(&c1, "binary.dat").unwrap().unwrap(),
        vec![0u8, 1, 2, b'\n', 255, 0]
    );
    // Short shas and leading ./ work.
    assert_eq!(
        m.show(&c1[..10], "./setup.py").unwrap().unwrap(),
        b"print('v1')\n"
    );
}

#[test]
fn errors_name_mirror_commit_and_path() {
    let (root, c1, _) = fixture();
    let m = GitMirror::locate(&root.path().join("mirrors"), "acme/widgets")
        .unwrap()
        .unwrap();
    let unknown = "0123456789abcdef0123456789abcdef01234567";
    let e = m.show(unknown, "setup.py").unwrap_err();
    assert!(matches!(e, GitError::CommitNotFound { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("acme__widgets.git") && msg.contains(unknown),
        "{msg}"
    );
    assert!(msg.contains("fetch"), "{msg}");

    let e = m.show(&c1, "requirements").unwrap_err();
    assert!(matches!(e, GitError::NotAFile { .. }), "{e}");
    assert!(e.to_string().contains(&format!("{c1}:requirements")), "{e}");

    let e = m.show(&c1, "a\nb").unwrap_err();
    assert!(matches!(e, GitError::InvalidName { .. }), "{e}");

    assert!(m.list_files(unknown).is_err());
    let not_git = tempfile::tempdir().unwrap();
    let e = GitMirror::open(not_git.path()).unwrap_err();
    assert!(matches!(e, GitError::NotARepository { .. }), "{e}");
}

#[test]
fn list_files_and_batch_reads() {
    let (root, c1, c2) = fixture();
    let m = GitMirror::locate(&root.path().join("mirrors"), "acme/widgets")
        .unwrap()
        .unwrap();
    assert_eq!(
        m.list_files(&c1).unwrap(),
        vec![
            "binary.dat",
            "name with space.txt",
            "requirements/base.txt",
            "setup.py"
        ]
    );
    assert_eq!(
        m.list_files(&c2).unwrap(),
        vec![
            "binary.dat",
            "environment.yml",
            "name with space.txt",
            "setup.py"
        ]
    );
    assert!(m.has_commit(&c1).unwrap());
    assert!(!m.has_commit("feedface").unwrap());

    let files = m
        .read_files(
            &c2,
            &["setup.py", "environment.yml", "requirements/base.txt"],
        )
        .unwrap();
    assert_eq!(files.len(), 3);
    assert_eq!(files["setup.py"].as_deref(), Some(&b"print('v2')\n"[..]));
    assert_eq!(
        files["environment.yml"].as_deref(),
        Some(&b"name: testbed\n"[..])
    );
    assert_eq!(files["requirements/base.txt"], None);

    // One process, many commits, many reads.
    let mut batch = m.batch().unwrap();
    for _ in 0..50 {
        assert_eq!(
            batch.read(&c1, "setup.py").unwrap().unwrap(),
            b"print('v1')\n"
        );
        assert_eq!(
            batch.read(&c2, "setup.py").unwrap().unwrap(),
            b"print('v2')\n"
        );
        assert_eq!(batch.read(&c2, "nope.txt").unwrap(), None);
    }
}
