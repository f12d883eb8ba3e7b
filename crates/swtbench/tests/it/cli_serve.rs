//! `swtbench serve`'s refusals before it loads or listens (no engine needed): a non-loopback
//! address without tokens, run flags it cannot take, a token file that holds no digest.

fn serve(args: &[&str]) -> (Option<i32>, String) {
    let out = crate::support::binary::command()
        .arg("serve")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn serve_refuses_what_it_cannot_serve_before_it_starts() {
    let (code, err) = serve(&["--listen", "0.0.0.0:8799", "--", "--dataset", "lite"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("not a loopback address, without --token-file"),
        "{err}"
    );
    assert!(
        !err.contains("Hugging Face"),
        "refused before the dataset is loaded: {err}"
    );

    let (code, err) = serve(&["--", "--dataset", "lite", "--offline", "--dry-run"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--dry-run cannot be given to the service"),
        "{err}"
    );

    let (code, err) = serve(&["--", "--no-such-flag"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("the run flags after `--`"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "secret-in-clear\n").unwrap();
    let t = tokens.display().to_string();
    let (code, err) = serve(&["--token-file", &t, "--", "--dataset", "lite", "--offline"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("line 1: not a SHA-256 digest"), "{err}");
}
