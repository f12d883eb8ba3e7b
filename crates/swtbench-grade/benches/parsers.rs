//! Parser throughput: every shared real log (37 MB, 854 logs; falls back to the crate's fixture
//! logs when `../shared/data` is absent), pre-processed and parsed with its repository's parser,
//! as grading does. Reported as bytes per second on one core. Plus inputs that would make a
//! naive scan quadratic (`pathological`).
#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde_json::Value;
use swtbench_grade::logs::{parse_log, parser_for, ExecMode};
use swtbench_grade::Parser;

fn load() -> Vec<(Parser, Vec<u8>)> {
    let shared = std::env::var_os("SWTBENCH_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"))
        .join("logs");
    let (dir, index) = if shared.join("expected_parser_output.jsonl").is_file() {
        (shared.clone(), shared.join("expected_parser_output.jsonl"))
    } else {
        let f = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs");
        eprintln!("shared logs not found; benchmarking the fixture logs only");
        (f.clone(), f.join("expected.jsonl"))
    };
    std::fs::read_to_string(index)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let parser = parser_for(v["repo"].as_str().unwrap(), ExecMode::UnitTest).unwrap();
            (
                parser,
                std::fs::read(dir.join(v["log"].as_str().unwrap())).unwrap(),
            )
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let logs = load();
    let total: usize = logs.iter().map(|(_, b)| b.len()).sum();
    let mut g = c.benchmark_group("parse_logs");
    g.throughput(Throughput::Bytes(total as u64));
    g.sample_size(20);
    g.bench_function(
        BenchmarkId::new("all", format!("{} logs", logs.len())),
        |b| {
            b.iter(|| {
                let mut n = 0;
                for (p, bytes) in &logs {
                    n += parse_log(Some(bytes), *p).tests.len();
                }
                n
            })
        },
    );
    for parser in [
        Parser::Django,
        Parser::Sympy,
        Parser::PytestV2,
        Parser::Pytest,
        Parser::Matplotlib,
    ] {
        let subset: Vec<&(Parser, Vec<u8>)> = logs.iter().filter(|(p, _)| *p == parser).collect();
        let bytes: usize = subset.iter().map(|(_, b)| b.len()).sum();
        if bytes == 0 {
            continue;
        }
        g.throughput(Throughput::Bytes(bytes as u64));
        g.bench_function(
            BenchmarkId::new(parser.name(), format!("{} logs", subset.len())),
            |b| {
                b.iter(|| {
                    let mut n = 0;
                    for (p, bytes) in &subset {
                        n += parse_log(Some(bytes), *p).tests.len();
                    }
                    n
                })
            },
        );
    }
    g.finish();
}

/// Inputs on which a scan ahead from every candidate start would be quadratic: a megabyte without
/// the character the name patterns look for (the original's sympy parser takes minutes on this).
fn pathological(c: &mut Criterion) {
    let cases = [
        (Parser::Django, "test_x (".repeat(128 * 1024)),
        (Parser::Django, "test.".repeat(200 * 1024)),
        (Parser::Sympy, "test_".repeat(200 * 1024)),
    ];
    let mut g = c.benchmark_group("pathological");
    g.sample_size(10);
    for (i, (parser, text)) in cases.iter().enumerate() {
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(BenchmarkId::new(parser.name(), i), |b| {
            b.iter(|| parse_log(Some(text.as_bytes()), *parser).tests.len())
        });
    }
    g.finish();
}

criterion_group!(benches, bench, pathological);
criterion_main!(benches);
