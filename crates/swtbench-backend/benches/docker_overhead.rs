//! Harness overhead of one run on the real engine, test time excluded: create a container (labels,
//! limits, no network, init) → start → copy an eval script and a patch in → exec `true` → remove.
//! Also measures each step alone so a regression can be located.
//!
//! Needs a running engine and the fixture base image (`scripts/base-image`); without them it says
//! so and measures nothing. Target: well under 1 s per run.

#![allow(clippy::print_stderr, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use swtbench_backend::{
    labels, ContainerBackend, ContainerFile, ContainerSpec, DockerBackend, DockerOptions,
    ExecRequest, LabelFilter, ResourceLimits,
};

const BASE_IMAGE: &str = "swtbench-fixture-base:bookworm";
const RUN_ID: &str = "bench-overhead";

fn spec() -> ContainerSpec {
    let mut spec = ContainerSpec::new(BASE_IMAGE);
    spec.labels = labels::run_labels(RUN_ID, "bench__instance-1", "pred_pre");
    spec.limits = ResourceLimits {
        memory_bytes: Some(2 << 30),
        pids: Some(1024),
        nano_cpus: None,
        disk_bytes: Some(4 << 30),
        file_bytes: Some(1 << 30),
    };
    spec
}

fn files() -> Vec<ContainerFile> {
    vec![
        ContainerFile::new(
            "/eval.sh",
            "#!/bin/bash\nset -uxo pipefail\ntrue\n".repeat(20),
        )
        .mode(0o755),
        ContainerFile::new("/root/model_patch.diff", "+x\n".repeat(2000)),
    ]
}

async fn one_run(backend: &DockerBackend) -> [Duration; 5] {
    let mut t = Instant::now();
    let mut lap = || {
        let d = t.elapsed();
        t = Instant::now();
        d
    };
    let id = backend.container_create(&spec()).await.unwrap();
    let create = lap();
    backend.container_start(&id).await.unwrap();
    let start = lap();
    backend.copy_in(&id, &files()).await.unwrap();
    let copy = lap();
    let out = backend
        .exec(
            &id,
            &ExecRequest::new(["true"]).timeout(Duration::from_secs(30)),
        )
        .await
        .unwrap();
    assert_eq!(out.exit_code, Some(0));
    let exec = lap();
    backend.container_remove(&id).await.unwrap();
    let remove = lap();
    [create, start, copy, exec, remove]
}

fn overhead(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let Some(backend) = rt.block_on(async {
        let backend = DockerBackend::connect(DockerOptions {
            host: std::env::var("DOCKER_HOST").ok(),
            ..DockerOptions::default()
        })
        .await
        .ok()?;
        backend
            .image_exists(BASE_IMAGE)
            .await
            .ok()?
            .then_some(backend)
    }) else {
        eprintln!(
            "skipped: docker_overhead needs a running engine and {BASE_IMAGE} (scripts/base-image)"
        );
        return;
    };

    // A breakdown first, over a few runs, so the numbers say where the time goes.
    let rounds = 10;
    let mut sums = [Duration::ZERO; 5];
    rt.block_on(async {
        one_run(&backend).await; // warm-up
        for _ in 0..rounds {
            for (s, d) in sums.iter_mut().zip(one_run(&backend).await) {
                *s += d;
            }
        }
    });
    let names = ["create", "start", "copy in", "exec true", "remove"];
    let total: Duration = sums.iter().sum::<Duration>() / rounds;
    eprintln!(
        "harness overhead per run (mean of {rounds}): {:.0} ms",
        total.as_secs_f64() * 1e3
    );
    for (n, s) in names.iter().zip(sums) {
        eprintln!("  {n:>10}: {:>6.1} ms", (s / rounds).as_secs_f64() * 1e3);
    }

    let mut group = c.benchmark_group("run_overhead");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("create_start_copy_exec_remove", |b| {
        b.iter(|| rt.block_on(one_run(&backend)))
    });
    group.finish();

    rt.block_on(async {
        let left = backend
            .containers_with_label(&LabelFilter::run_id(RUN_ID))
            .await
            .unwrap();
        for c in &left {
            let _ = backend.container_remove(&c.id).await;
        }
        assert!(
            left.is_empty(),
            "the benchmark left containers behind: {left:?}"
        );
    });
}

criterion_group!(benches, overhead);
criterion_main!(benches);
