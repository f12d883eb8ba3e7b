//! BM25 retrieval throughput over a generated repository the size of Django at a SWE-bench base
//! commit (about 2,700 Python files, 400,000 lines), test files included as for SWT-Bench.
//!
//! Run with `cargo bench -p swtbench-textgen --bench retrieval`; files/s is printed as the
//! throughput ("elements" are files).
#![allow(clippy::print_stderr)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use swtbench_textgen::retrieve::{decode_source, rank, DEFAULT_TOP_K};

const FILES: usize = 2_700;
const LINES: usize = 400_000;

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "query",
    "model",
    "field",
    "form",
    "request",
    "response",
    "cache",
    "session",
    "template",
    "context",
    "render",
    "value",
    "values",
    "instance",
    "queryset",
    "filter",
    "exclude",
    "order",
    "related",
    "manager",
    "migration",
    "schema",
    "database",
    "connection",
    "cursor",
    "backend",
    "expression",
    "aggregate",
    "annotation",
    "lookup",
    "transform",
    "widget",
    "validator",
    "error",
    "errors",
    "message",
    "messages",
    "user",
    "permission",
    "group",
    "admin",
    "site",
    "view",
    "url",
    "path",
    "pattern",
    "resolver",
    "middleware",
    "signal",
    "handler",
    "storage",
    "file",
    "upload",
    "serializer",
    "timezone",
    "date",
    "datetime",
    "decimal",
    "integer",
    "string",
    "encoding",
    "translation",
    "locale",
    "format",
    "settings",
    "config",
    "default",
    "option",
    "argument",
    "command",
    "output",
    "input",
    "parse",
    "parser",
    "token",
    "node",
    "compile",
    "state",
    "operation",
    "constraint",
    "index",
    "unique",
    "primary",
    "foreign",
    "key",
    "table",
    "column",
    "alias",
    "join",
    "where",
    "clause",
    "subquery",
    "select",
    "insert",
    "update",
    "delete",
    "bulk",
    "create",
    "get",
    "set",
    "add",
    "remove",
    "clear",
    "check",
    "clean",
    "validate",
    "save",
    "load",
    "dump",
    "test",
    "assert",
    "equal",
    "raises",
    "mock",
    "patch",
];

/// Identifiers of the generated code base: 30,000 names of one to three words, used with a
/// skewed frequency (a few very common, a long tail), as in real code.
struct Vocabulary(Vec<String>);

impl Vocabulary {
    fn new(rng: &mut Rng) -> Self {
        let names = (0..30_000)
            .map(|_| {
                let parts = 1 + rng.below(3);
                (0..parts)
                    .map(|_| WORDS[rng.below(WORDS.len())])
                    .collect::<Vec<_>>()
                    .join("_")
            })
            .collect();
        Vocabulary(names)
    }
}

fn ident(rng: &mut Rng) -> String {
    VOCABULARY.with(|v| {
        let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        let i = (u * u * u * v.0.len() as f64) as usize;
        v.0[i.min(v.0.len() - 1)].clone()
    })
}

thread_local! {
    static VOCABULARY: Vocabulary = Vocabulary::new(&mut Rng(0xC0FF_EE00_1234_5678));
}

fn line(rng: &mut Rng) -> String {
    let indent = "    ".repeat(rng.below(3));
    match rng.below(8) {
        0 => format!(
            "{indent}def {}(self, {}, {}=None):",
            ident(rng),
            ident(rng),
            ident(rng)
        ),
        1 => format!("{indent}class {}({}):", ident(rng), ident(rng)),
        2 => format!(
            "{indent}# {} {} the {} of {}",
            ident(rng),
            WORDS[rng.below(WORDS.len())],
            ident(rng),
            ident(rng)
        ),
        3 => format!(
            "{indent}return self.{}({}.{})",
            ident(rng),
            ident(rng),
            ident(rng)
        ),
        4 => format!(
            "{indent}if {} is not None and {} in {}:",
            ident(rng),
            ident(rng),
            ident(rng)
        ),
        5 => String::new(),
        6 => format!(
            "{indent}from django.{}.{} import {}",
            ident(rng),
            ident(rng),
            ident(rng)
        ),
        _ => format!(
            "{indent}{} = {}.{}(\"{}\", {})",
            ident(rng),
            ident(rng),
            ident(rng),
            ident(rng),
            rng.below(1000)
        ),
    }
}

/// (path, bytes) for a Django-sized repository.
fn repository() -> Vec<(String, Vec<u8>)> {
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let mut files = Vec::with_capacity(FILES);
    let per_file = LINES / FILES;
    for i in 0..FILES {
        let dir = if i % 3 == 0 { "tests" } else { "django" };
        let path = format!("{dir}/{}/{}_{i}.py", ident(&mut rng), ident(&mut rng));
        let n = per_file / 4 + rng.below(per_file * 3 / 2 + 1);
        let mut text = String::new();
        for _ in 0..n {
            text.push_str(&line(&mut rng));
            text.push('\n');
        }
        files.push((path, text.into_bytes()));
    }
    files
}

const ISSUE: &str = "QuerySet.filter() with a subquery annotation raises an error\n\n\
Description\n\nWhen I annotate a queryset with an aggregate over a related model and then \
filter on the annotation, the generated SQL has the wrong alias in the WHERE clause:\n\n\
```\nqs = Book.objects.annotate(n=Count('authors')).filter(n__gt=1)\n```\n\n\
raises django.db.utils.OperationalError. The compiler resolves the lookup against the join \
table. This used to work in 3.2; it broke when expressions started to be compiled lazily.";

fn bench(c: &mut Criterion) {
    let repo = repository();
    let lines: usize = repo
        .iter()
        .map(|(_, b)| b.iter().filter(|&&x| x == b'\n').count())
        .sum();
    let bytes: usize = repo.iter().map(|(_, b)| b.len()).sum();
    eprintln!(
        "generated repository: {} files, {lines} lines, {} MiB",
        repo.len(),
        bytes >> 20
    );
    let mut group = c.benchmark_group("retrieval");
    group.sample_size(10);
    group.throughput(Throughput::Elements(repo.len() as u64));
    group.bench_function("decode_and_rank_django_sized", |b| {
        b.iter(|| {
            let docs: Vec<(String, String)> = repo
                .iter()
                .map(|(p, bytes)| {
                    (
                        p.clone(),
                        decode_source(p, bytes.clone()).unwrap_or_default(),
                    )
                })
                .collect();
            rank(
                ISSUE,
                docs.iter().map(|(p, c)| (p.as_str(), c.as_str())),
                DEFAULT_TOP_K,
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
