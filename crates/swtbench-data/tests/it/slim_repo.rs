//! The slim repository of one commit against a full clone of the same mirror, with the host `git`:
//! the clone/reset/remote-removal of `setup_repo.sh` run on both, then what tests can observe.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use swtbench_data::git_mirror::{GitError, GitMirror};

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
    let out = git_cmd(dir).args(args).output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn git_ok(dir: &Path, args: &[&str]) -> bool {
    git_cmd(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

fn commit(work: &Path, file: &str, text: &str, msg: &str) -> String {
    std::fs::write(work.join(file), text).unwrap();
    git(work, &["add", "-A"]);
    git(work, &["commit", "-q", "-m", msg]);
    git(work, &["rev-parse", "HEAD"])
}

struct Repo {
    _root: tempfile::TempDir,
    root: std::path::PathBuf,
    mirror: std::path::PathBuf,
    base: String,
    old: String,
    feature_blob: String,
}

/// main: c1 (v0.9) ← c2 (v1.0, annotated; v1.0-alias, a tag of that tag) ← c3 ← c4 = base ← c5
/// (v2.0) ← c6 (many files); feature off c3 with its own file (vfeat); a tag of a tree.
fn repo(detached_head: bool) -> Repo {
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_path_buf();
    let work = r.join("work");
    std::fs::create_dir_all(work.join("pkg")).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    let old = commit(&work, "pkg/a.py", "one\n", "c1");
    git(&work, &["tag", "v0.9"]);
    commit(&work, "pkg/a.py", "two\n", "c2");
    git(&work, &["tag", "-a", "v1.0", "-m", "release"]);
    git(&work, &["tag", "-a", "v1.0-alias", "-m", "alias", "v1.0"]);
    let c3 = commit(&work, "README", "read me\n", "c3");
    let base = commit(&work, "pkg/b.py", "bee\n", "c4");
    commit(&work, "pkg/a.py", "five\n", "c5");
    git(&work, &["tag", "v2.0"]);
    // Enough objects after the base commit that a full clone abbreviates longer than the slim one.
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
    git(&work, &["tag", "vfeat"]);
    git(&work, &["tag", "a-tree", &format!("{base}^{{tree}}")]);
    git(&work, &["checkout", "-q", "main"]);
    let mirror = r.join("acme__widgets.git");
    git(
        &r,
        &[
            "clone",
            "-q",
            "--mirror",
            work.to_str().unwrap(),
            mirror.to_str().unwrap(),
        ],
    );
    if detached_head {
        git(&mirror, &["update-ref", "--no-deref", "HEAD", &c3]);
    }
    Repo {
        _root: root,
        root: r,
        mirror,
        base,
        old,
        feature_blob,
    }
}

/// `setup_repo.sh`'s git steps: clone as origin, reset to the commit, remove the remote.
fn setup(root: &Path, url: &str, dir: &str, base: &str) -> std::path::PathBuf {
    git(root, &["clone", "-q", "-o", "origin", url, dir]);
    let tb = root.join(dir);
    git(&tb, &["reset", "-q", "--hard", base]);
    git(&tb, &["remote", "remove", "origin"]);
    tb
}

fn observed(tb: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("tree", git(tb, &["rev-parse", "HEAD^{tree}"])),
        ("head", git(tb, &["rev-parse", "HEAD"])),
        ("status", git(tb, &["status", "--porcelain"])),
        (
            "describe",
            git(tb, &["describe", "--tags", "--long", "--dirty"]),
        ),
        (
            "describe_always",
            git(tb, &["describe", "--tags", "--always"]),
        ),
        (
            "describe_scm",
            git(
                tb,
                &[
                    "describe", "--dirty", "--tags", "--long", "--match", "*[0-9]*",
                ],
            ),
        ),
        ("short", git(tb, &["rev-parse", "--short", "HEAD"])),
        ("branch", git(tb, &["branch", "--show-current"])),
        ("remotes", git(tb, &["remote", "-v"])),
        ("log", git(tb, &["log", "--format=%H %P %s"])),
        ("ls_files", git(tb, &["ls-files", "-s"])),
        ("diff", git(tb, &["diff", "HEAD"])),
        // versioneer's commit date, and what the commit changed (its parent's tree).
        ("date", git(tb, &["show", "-s", "--format=%ci", "HEAD"])),
        ("show", git(tb, &["show", "--stat", "--format=%H", "HEAD"])),
    ]
}

#[test]
fn slim_clone_looks_like_a_full_clone_to_tests() {
    for detached in [false, true] {
        let r = repo(detached);
        let m = GitMirror::open(&r.mirror).unwrap();
        let slim_dir = r.root.join("slim.git");
        let slim = m.write_slim_repo(&r.base, &slim_dir).unwrap();
        assert_eq!(slim.commit, r.base);
        assert_eq!(
            slim.tags,
            vec!["refs/tags/v0.9", "refs/tags/v1.0", "refs/tags/v1.0-alias"]
        );
        assert_eq!(
            slim.head_branch.as_deref(),
            (!detached).then_some("refs/heads/main")
        );
        // The full clone (17 000 more objects) abbreviates to 8, the slim one would to 7.
        assert_eq!(slim.abbrev, 8);

        let full = setup(
            &r.root,
            &format!("file://{}", r.mirror.display()),
            "full",
            &r.base,
        );
        let tb = setup(&r.root, slim_dir.to_str().unwrap(), "tb", &r.base);
        // What the image build does with the slim repository's config.
        git(&tb, &["config", "core.abbrev", &slim.abbrev.to_string()]);
        assert_eq!(observed(&tb), observed(&full), "detached HEAD: {detached}");
        assert_eq!(
            git(&tb, &["rev-parse", "--short", "HEAD"]).len(),
            slim.abbrev
        );
        // A change shows the same in both.
        for d in [&tb, &full] {
            std::fs::write(d.join("pkg/b.py"), "changed\n").unwrap();
        }
        assert_eq!(observed(&tb), observed(&full));

        // What is left out: the later history, the other branch, the older trees and blobs.
        assert!(git_ok(&full, &["cat-file", "-e", &r.feature_blob]));
        assert!(!git_ok(&tb, &["cat-file", "-e", &r.feature_blob]));
        assert!(!git_ok(&tb, &["cat-file", "-e", "refs/tags/v2.0"]));
        assert!(git_ok(&tb, &["cat-file", "-e", &r.old]));
        assert!(!git_ok(
            &tb,
            &["cat-file", "-e", &format!("{}^{{tree}}", r.old)]
        ));
        assert_eq!(git(&tb, &["tag"]), "v0.9\nv1.0\nv1.0-alias");
        assert!(git(&full, &["tag"]).contains("v2.0"));
    }
}

#[test]
fn the_slim_pack_is_small() {
    let r = repo(false);
    let m = GitMirror::open(&r.mirror).unwrap();
    let slim_dir = r.root.join("slim.git");
    let slim = m.write_slim_repo(&r.base, &slim_dir).unwrap();
    // 4 commits, 2 tag objects, the root tree, pkg/ and three files; of the parent (c3, before
    // pkg/b.py), its root tree and pkg/.
    assert_eq!(slim.objects, 13);
    let count = git(&slim_dir, &["count-objects", "-v"]);
    assert!(count.contains("in-pack: 13"), "{count}");
}

#[test]
fn an_unknown_commit_names_the_mirror_and_the_fetch() {
    let r = repo(false);
    let m = GitMirror::open(&r.mirror).unwrap();
    let missing = "0123456789abcdef0123456789abcdef01234567";
    let err = m
        .write_slim_repo(missing, &r.root.join("slim.git"))
        .unwrap_err();
    assert!(matches!(err, GitError::CommitNotFound { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(&r.mirror.canonicalize().unwrap().display().to_string()));
    assert!(text.contains("fetch"), "{text}");
    for bad in ["--all", "a\nb", ""] {
        assert!(m.write_slim_repo(bad, &r.root.join("x.git")).is_err());
    }
}

#[test]
fn a_shallow_mirror_is_refused_with_the_fetch_that_completes_it() {
    let r = repo(false);
    let shallow = r.root.join("shallow.git");
    git(
        &r.root,
        &[
            "clone",
            "-q",
            "--bare",
            "--depth",
            "2",
            &format!("file://{}", r.mirror.display()),
            shallow.to_str().unwrap(),
        ],
    );
    let m = GitMirror::open(&shallow).unwrap();
    let head = git(&shallow, &["rev-parse", "HEAD"]);
    let err = m
        .write_slim_repo(&head, &r.root.join("slim.git"))
        .unwrap_err();
    assert!(matches!(err, GitError::Shallow { .. }), "{err}");
    assert!(err.to_string().contains("fetch --unshallow"), "{err}");
}

/// A mirror that lacks objects outside the base commit's tree (a repository snapshot without its
/// largest files) still gives the slim repository, with the abbreviation a full clone would have:
/// the missing objects are counted as present.
/// A copy of `r`'s mirror named `name` (the object count is cached per mirror path), unpacked
/// into loose objects, without the object `blob`.
fn mirror_without(r: &Repo, name: &str, blob: &str) -> std::path::PathBuf {
    let broken = r.root.join(name);
    let status = Command::new("cp")
        .arg("-a")
        .arg(&r.mirror)
        .arg(&broken)
        .status()
        .unwrap();
    assert!(status.success());
    let packs: Vec<_> = std::fs::read_dir(broken.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let aside = r.root.join(format!("aside-{name}"));
    std::fs::create_dir_all(&aside).unwrap();
    for p in &packs {
        std::fs::rename(p, aside.join(p.file_name().unwrap())).unwrap();
    }
    for p in std::fs::read_dir(&aside).unwrap() {
        let p = p.unwrap().path();
        if p.extension().is_some_and(|e| e == "pack") {
            let status = git_cmd(&broken)
                .args(["unpack-objects", "-q"])
                .stdin(std::fs::File::open(&p).unwrap())
                .status()
                .unwrap();
            assert!(status.success());
        }
    }
    std::fs::remove_file(broken.join(format!("objects/{}/{}", &blob[..2], &blob[2..]))).unwrap();
    assert!(!git_ok(&broken, &["cat-file", "-e", blob]));
    broken
}

#[test]
fn a_mirror_missing_a_blob_elsewhere_in_history_still_gives_the_slim_repository() {
    let r = repo(false);
    let whole = GitMirror::open(&r.mirror)
        .unwrap()
        .write_slim_repo(&r.base, &r.root.join("whole.git"))
        .unwrap();
    // Without the feature branch's blob.
    let broken = mirror_without(&r, "broken__widgets.git", &r.feature_blob);
    assert!(!git_ok(
        &broken,
        &["rev-list", "--objects", "--branches", "--tags"]
    ));

    let m = GitMirror::open(&broken).unwrap();
    let slim = m
        .write_slim_repo(&r.base, &r.root.join("slim.git"))
        .unwrap();
    assert_eq!(slim, whole);
}

/// A mirror without a file of the commit itself (a snapshot that leaves out large files): the
/// error names the file, its object and the commit, not only git's "unable to read".
#[test]
fn a_mirror_missing_a_file_of_the_commit_names_the_file() {
    let r = repo(false);
    let ls = git(&r.mirror, &["ls-tree", "-r", &r.base]);
    let (blob, path) = ls
        .lines()
        .find_map(|l| {
            let (meta, path) = l.split_once('\t')?;
            let id = meta.split(' ').nth(2)?;
            (id != r.feature_blob).then(|| (id.to_string(), path.to_string()))
        })
        .expect("a file in the base commit");
    let broken = mirror_without(&r, "lacking__widgets.git", &blob);
    let err = GitMirror::open(&broken)
        .unwrap()
        .write_slim_repo(&r.base, &r.root.join("lacking-slim.git"))
        .unwrap_err();
    match &err {
        GitError::MissingObjects {
            commit, missing, ..
        } => {
            assert_eq!(commit, &r.base, "{err}");
            assert_eq!(missing, &vec![format!("{path} ({blob})")], "{err}");
        }
        other => panic!("expected the missing file to be named, got: {other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains(&path) && text.contains("git clone --mirror"),
        "{text}"
    );
}

#[test]
fn the_slim_repository_can_be_written_to_another_file_system() {
    // The mirror on one file system, the slim repository on another (a tmpfs): nothing may be
    // renamed from one to the other ("Invalid cross-device link").
    use std::os::unix::fs::MetadataExt;
    let r = repo(false);
    let shm = Path::new("/dev/shm");
    let dev = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).ok();
    if !shm.is_dir() || dev(shm) == dev(&r.mirror) {
        eprintln!("SKIPPED: /dev/shm is not a second file system here");
        return;
    }
    let dest_root = tempfile::tempdir_in(shm).unwrap();
    let dest = dest_root.path().join("slim.git");
    let slim = GitMirror::open(&r.mirror)
        .unwrap()
        .write_slim_repo(&r.base, &dest)
        .unwrap();
    assert_eq!(slim.objects, 13);
    let tb = setup(dest_root.path(), dest.to_str().unwrap(), "tb", &r.base);
    assert_eq!(git(&tb, &["rev-parse", "HEAD"]), r.base);
    assert_eq!(
        std::fs::read_to_string(tb.join("pkg/b.py")).unwrap(),
        "bee\n"
    );
}
