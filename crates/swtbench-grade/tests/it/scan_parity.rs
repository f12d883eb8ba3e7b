//! [`RunScanner`] gives exactly what [`parse_run`] gives on the whole output, whatever the pieces
//! it is fed: on every log under `tests/fixtures/logs/` and the shared real logs (when present),
//! with every parser it accepts, and on hand-made outputs aimed at the section rules.

use std::path::{Path, PathBuf};

use swtbench_grade::logs::parse_run;
use swtbench_grade::scan::RunScanner;
use swtbench_grade::Parser;

const PIECES: [usize; 6] = [1, 2, 7, 100, 4096, usize::MAX];

fn scanned(bytes: &[u8], parser: Parser, piece: usize) -> Option<swtbench_grade::logs::ParsedRun> {
    let mut s = RunScanner::new(parser)?;
    for p in bytes.chunks(piece.min(bytes.len().max(1))) {
        s.push(p);
    }
    s.finish()
}

fn check(what: &str, bytes: &[u8]) -> usize {
    let mut checked = 0;
    for parser in Parser::ALL {
        if RunScanner::new(parser).is_none() {
            continue;
        }
        let whole = parse_run(Some(bytes), parser);
        for piece in PIECES {
            match scanned(bytes, parser, piece) {
                Some(got) => assert_eq!(got, whole, "{what}: {parser}, pieces of {piece}"),
                None => assert!(
                    String::from_utf8_lossy(bytes).contains(" bytes of output omitted]"),
                    "{what}: {parser} gave up without a cut marker"
                ),
            }
        }
        checked += 1;
    }
    checked
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p
            .extension()
            .is_none_or(|x| x != "json" && x != "jsonl" && x != "md")
        {
            out.push(p);
        }
    }
}

#[test]
fn fixture_logs_scan_like_they_parse() {
    let mut logs = Vec::new();
    files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs"),
        &mut logs,
    );
    assert!(!logs.is_empty());
    for log in &logs {
        check(&log.display().to_string(), &std::fs::read(log).unwrap());
    }
}

#[test]
fn shared_logs_scan_like_they_parse() {
    let dir = match std::env::var_os("SWTBENCH_SHARED_DATA") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    };
    if !dir.is_dir() {
        eprintln!("SKIPPED: shared data not found (set SWTBENCH_SHARED_DATA)");
        return;
    }
    let mut logs = Vec::new();
    files(&dir.join("logs"), &mut logs);
    let mut n = 0;
    for log in &logs {
        let bytes = std::fs::read(log).unwrap();
        // Whole-text pieces and a few sizes are enough on big logs (the small ones get all).
        if bytes.len() > 200_000 {
            for parser in [Parser::Pytest, Parser::PytestV2] {
                let whole = parse_run(Some(&bytes), parser);
                for piece in [4096, 65536] {
                    assert_eq!(
                        scanned(&bytes, parser, piece),
                        Some(whole.clone()),
                        "{}",
                        log.display()
                    );
                }
            }
            n += 1;
            continue;
        }
        n += usize::from(check(&log.display().to_string(), &bytes) > 0);
    }
    eprintln!("{n} shared logs checked");
    assert!(n > 0);
}

#[test]
fn hand_made_outputs_scan_like_they_parse() {
    let trace = "+ python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(a\\.py)' -m pytest -rA t.py";
    let cases: Vec<String> = vec![
        String::new(),
        "PASSED t.py::a".into(),
        "PASSED t.py::a\nFAILED t.py::a\n".into(),
        format!("{trace}\nPASSED t.py::first\n"),
        format!("x\n{trace}\nPASSED t.py::a\n{trace}\nPASSED t.py::b\n{trace}\nPASSED t.py::c\n"),
        format!("x\n{trace}\n{trace}\nPASSED t.py::b\n{trace}\nPASSED t.py::c\n"),
        format!("x\n{trace}\n+ cat coverage.cover\nPASSED t.py::b\n+ cat coverage.cover\nPASSED t.py::c\n"),
        format!("x\n{trace}\nPASSED t.py::b\n+ cat coverage.cover\n{{\"/testbed/a.py\": {{\"1\": 2}}}}\n+ git checkout x\n{{\"/testbed/a.py\": {{\"1\": 5}}}}\n"),
        format!("x\n{trace}"),
        format!("x\n{trace}\nPASSED t.py::a\n{trace}"),
        "trace.py --count -C coverage.cover mentioned\nPASSED t.py::a\n".into(),
        "Applied patch t.py cleanly.\nPASSED t.py::a\n>>>>> Tests Errored\n".into(),
        "APPLIED PATCH\r\nPASSED t.py::a\r\nFAILED t.py::b\rPASSED t.py::c".into(),
        "PASSED t.py::a\n+ cat coverage.cover\nPASSED t.py::hidden\n".into(),
        "+ cat coverage.cover\nPASSED t.py::first\n".into(),
        "PASSED t.py::a\n\n[swtbench: 10 bytes of output omitted]\nPASSED t.py::b\n".into(),
        "FAILED t.py::x - a - b\nSKIPPED [1] t.py:3: why\nt.py::v PASSED\n\u{1b}[32mPASSED\u{1b}[0m t.py::c\n".into(),
        "MouseButton.LEFT\nPASSED t.py::m[MouseButton.LEFT]\n".into(),
    ];
    for (i, c) in cases.iter().enumerate() {
        check(&format!("case {i}: {c:?}"), c.as_bytes());
    }
    let mut invalid = b"PASSED t.py::a\xff\xfe\nPASSED t.py::\xc3".to_vec();
    invalid.extend_from_slice(b"\nPASSED t.py::b\n");
    check("invalid UTF-8", &invalid);
}
