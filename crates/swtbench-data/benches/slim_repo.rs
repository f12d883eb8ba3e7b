//! The time to write an instance image's slim repository (`GitMirror::write_slim_repo`: the
//! history's commits, the tags in it, the trees and blobs of the base commit and its parents, packed
//! and indexed), the host's part of every instance image build from a mirror.
//!
//! `SWTBENCH_BENCH_MIRROR=/path/to/<owner>__<name>.git SWTBENCH_BENCH_COMMITS=<c1>,<c2>,…` measures a
//! real mirror at those commits (e.g. Django's at a few base commits of the benchmark); without
//! them, a generated repository (400 commits over 4,000 files). Each commit is written
//! `SWTBENCH_BENCH_REPEATS` times (default 3, the first one also counts the mirror's objects once
//! for the abbreviation length); prints the median and largest time and the pack's size.
//!
//! `cargo bench -p swtbench-data --bench slim_repo`

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use swtbench_data::git_mirror::GitMirror;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository of `commits` commits, each changing a tenth of `files` files; returns its bare
/// mirror and three commits spread over the history.
fn generated(root: &Path, commits: usize, files: usize) -> (PathBuf, Vec<String>) {
    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    let mut picked = Vec::new();
    for c in 0..commits {
        for f in (0..files).filter(|f| c == 0 || f % 10 == c % 10) {
            let dir = work.join(format!("pkg{}", f % 40));
            std::fs::create_dir_all(&dir).unwrap();
            let text: String = (0..40)
                .map(|l| format!("line {l} of file {f} at commit {c}\n"))
                .collect();
            std::fs::write(dir.join(format!("m{f}.py")), text).unwrap();
        }
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", &format!("commit {c}")]);
        if c % 50 == 0 {
            git(&work, &["tag", &format!("v0.{c}")]);
        }
        if [commits / 3, 2 * commits / 3, commits - 1].contains(&c) {
            picked.push(git(&work, &["rev-parse", "HEAD"]));
        }
    }
    let mirror = root.join("mirror.git");
    let out = Command::new("git")
        .args(["clone", "-q", "--mirror"])
        .arg(&work)
        .arg(&mirror)
        .output()
        .unwrap();
    assert!(out.status.success());
    (mirror, picked)
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let (mirror, commits) = match (
        std::env::var("SWTBENCH_BENCH_MIRROR"),
        std::env::var("SWTBENCH_BENCH_COMMITS"),
    ) {
        (Ok(m), Ok(c)) => (
            PathBuf::from(m),
            c.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
        ),
        _ => {
            println!("generating a repository (400 commits, 4,000 files)…");
            generated(tmp.path(), 400, 4000)
        }
    };
    let repeats: usize = std::env::var("SWTBENCH_BENCH_REPEATS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let m = GitMirror::open(&mirror).unwrap();
    let mut all = Vec::new();
    for commit in &commits {
        let mut times = Vec::new();
        let mut size = 0;
        for i in 0..repeats {
            let dest = tmp
                .path()
                .join(format!("slim-{}-{i}", &commit[..commit.len().min(12)]));
            let started = Instant::now();
            let slim = m.write_slim_repo(commit, &dest).unwrap();
            times.push(started.elapsed().as_secs_f64());
            size = std::fs::read_dir(dest.join("objects/pack"))
                .unwrap()
                .filter_map(|e| e.ok()?.metadata().ok())
                .map(|md| md.len())
                .sum::<u64>();
            if i == 0 {
                print!(
                    "{}: {} objects",
                    &commit[..commit.len().min(12)],
                    slim.objects
                );
            }
        }
        let first = times[0];
        all.extend(times.iter().skip(1).copied());
        times.sort_by(f64::total_cmp);
        println!(
            ", pack {:.1} MB, median {:.2} s, largest {:.2} s, first {:.2} s",
            size as f64 / 1e6,
            times[times.len() / 2],
            times[times.len() - 1],
            first
        );
    }
    all.sort_by(f64::total_cmp);
    if !all.is_empty() {
        println!(
            "all commits, repeats after the first: median {:.2} s",
            all[all.len() / 2]
        );
    }
}
