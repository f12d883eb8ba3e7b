//! The Docker backend against an engine that stops answering: a Unix-socket proxy
//! (`support/socket_proxy.rs`) sits in front of `/var/run/docker.sock` and, switched to holding, keeps connections open and
//! forwards nothing. A silent command of a live engine is waited for (the probe answers); once the
//! engine hangs, a silent command and a short call are both [`BackendError::EngineHung`] within
//! the quiet period (or the deadline) plus the probe, and an answer after the resume clears the
//! lost state. Small deadlines keep it short.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::{engine_and_proxy, Scope, BASE_IMAGE};
use swtbench_backend::{BackendError, ContainerBackend, DockerBackend, DockerOptions, ExecRequest};

async fn through(proxy: &Path) -> DockerBackend {
    DockerBackend::connect(DockerOptions {
        host: Some(format!("unix://{}", proxy.display())),
        request_timeout: Duration::from_secs(3),
        probe_deadline: Duration::from_secs(1),
        quiet_probe: Duration::from_secs(2),
        ..DockerOptions::default()
    })
    .await
    .expect("connect through the proxy")
}

#[tokio::test]
async fn docker_hung_engine_is_engine_hung_for_streams_and_calls_and_a_quiet_command_is_not() {
    let Some((direct, _dir, proxy)) = engine_and_proxy("docker_hung_engine").await else {
        return;
    };
    let scope = Scope::new("hung");
    let backend = through(&proxy.path).await;
    let id = backend
        .container_create(&scope.spec(BASE_IMAGE, "pred_pre"))
        .await
        .expect("create");
    backend.container_start(&id).await.expect("start");

    // Live engine: a command silent for longer than the quiet period is a result, not a hang.
    let quiet =
        ExecRequest::new(["/bin/sh", "-c", "sleep 5; echo done"]).timeout(Duration::from_secs(60));
    let out = backend.exec(&id, &quiet).await.expect("quiet command");
    assert_eq!(out.text(), "done\n");

    // The engine hangs while a silent command runs.
    let silent = ExecRequest::new(["/bin/sh", "-c", "sleep 120"]).timeout(Duration::from_secs(600));
    let running = {
        let (backend, id) = (backend.clone(), id.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            (backend.exec(&id, &silent).await, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy.hang();
    let (result, took) = running.await.unwrap();
    eprintln!("silent command on a hung engine: {result:?} after {took:.1?}");
    match result {
        Err(BackendError::EngineHung { operation, .. }) => {
            assert!(operation.contains("waiting for the output"), "{operation}");
        }
        other => panic!("expected EngineHung, got {other:?}"),
    }
    // quiet 2 s + probe 1 s after the last output; generous for a loaded machine.
    assert!(took < Duration::from_secs(8), "{took:?}");

    // A short call now gets only the probe's deadline; the error says what to do.
    let started = Instant::now();
    let err = backend.image_inspect(BASE_IMAGE).await.expect_err("hung");
    let took = started.elapsed();
    eprintln!("short call on a lost engine: {err} after {took:.1?}");
    assert!(matches!(err, BackendError::EngineHung { .. }), "{err:?}");
    assert!(err.hint().is_some_and(|h| h.contains("docker info")));
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(matches!(
        backend.engine_info().await,
        Err(BackendError::EngineHung { .. })
    ));

    // Back: the first answer clears the lost state.
    proxy.resume();
    backend.engine_info().await.expect("engine answers again");
    assert!(backend.image_exists(BASE_IMAGE).await.expect("inspect"));
    assert!(direct.container_remove(&id).await.expect("remove"));
    scope.assert_no_leftover_containers(&direct).await;
}
