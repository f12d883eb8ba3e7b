//! `swtbench run --instance-image` without running anything: a template is checked before any
//! dataset or engine is touched, and a bad one is an input error (exit code 2) that says what is
//! wrong and which placeholders there are.

use crate::support::cli::swtbench;

#[test]
fn a_bad_instance_image_template_is_an_input_error_with_the_placeholders() {
    let tmp = tempfile::tempdir().unwrap();
    for (template, needle) in [
        (
            "docker.io/swebench/{name}:latest",
            "unknown placeholder {name}",
        ),
        ("docker.io/swebench/img:latest", "has no placeholder"),
        ("docker.io/swebench/{id:latest", "unclosed '{'"),
    ] {
        let args = [
            "run",
            "--predictions",
            "gold",
            "--run-id",
            "r",
            "--instance-image",
            template,
            "--dry-run",
        ];
        let out = swtbench(&args, tmp.path());
        assert_eq!(out.status.code(), Some(2), "{template}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{template}: {err}");
        assert!(
            err.contains("hint: use {id} (the instance id) or {id_1776}"),
            "{template}: {err}"
        );
    }
}
