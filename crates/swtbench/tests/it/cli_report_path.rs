//! `swtbench report PATH` where PATH is one level too high (the run directory instead of
//! `<run>/<model>`): an input error that names the model directories to pass, instead of a table
//! of zeros; a model directory without any report.json gets a warning.

use std::path::Path;
use std::process::Output;

fn swtbench(args: &[&str], cwd: &Path) -> Output {
    crate::support::binary::command()
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env("HF_HOME", cwd.join("hf"))
        .env("SWTBENCH_OFFLINE", "true")
        .output()
        .unwrap()
}

#[test]
fn a_run_directory_given_as_path_is_an_input_error_naming_the_model_directory() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("logs/my-run");
    for sub in [
        "pred_pre__org__m/psf__requests-1",
        "pred_post__org__m/psf__requests-1",
        "org__m/psf__requests-1",
    ] {
        std::fs::create_dir_all(run.join(sub)).unwrap();
    }
    let out = swtbench(&["report", "logs/my-run", "--format", "json"], dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(stderr.contains("run directory"), "{stderr}");
    assert!(stderr.contains("logs/my-run/org__m"), "{stderr}");
}

#[test]
fn a_model_directory_without_reports_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("logs/my-run/org__m/psf__requests-1")).unwrap();
    let out = swtbench(
        &["report", "logs/my-run/org__m", "--format", "json"],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("no report.json"), "{stderr}");
}
