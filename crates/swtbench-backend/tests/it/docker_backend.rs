//! The Docker backend against the real engine: builds on the fixture base image, containers with
//! labels, limits, no network and an init, copy in/out, exec with timeout and output cap, cleanup,
//! and a removal that finds another one under way (through the socket proxy).
//!
//! Every test labels what it creates with its own scope; the scope's drop guard removes leftovers
//! even when an assertion fails, and each test ends by asserting that nothing with its label is left.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::support::socket_proxy::REMOVAL_UNDER_WAY_FOR;
use crate::support::{connect, engine_and_proxy, ensure_base_image, through, Scope, BASE_IMAGE};
use swtbench_backend::{
    labels, BackendError, BuildContext, BuildNetwork, BuildRequest, ContainerBackend,
    ContainerFile, DockerBackend, DockerOptions, ExecRequest, ImageBuilder, ImageRecipe,
    ImportRequest, LabelFilter, NetworkAccess, RebuildPolicy, ResourceLimits, RootfsSource,
};

/// Creates and starts a container from `spec`, returning its id.
async fn started(backend: &DockerBackend, spec: &swtbench_backend::ContainerSpec) -> String {
    let id = backend.container_create(spec).await.expect("create");
    backend.container_start(&id).await.expect("start");
    id
}

async fn sh(backend: &DockerBackend, id: &str, script: &str) -> swtbench_backend::ExecOutput {
    backend
        .exec(
            id,
            &ExecRequest::new(["/bin/sh", "-c", script]).timeout(Duration::from_secs(60)),
        )
        .await
        .expect("exec")
}

#[tokio::test]
async fn docker_unreachable_engine_is_one_clear_error_with_a_hint() {
    let err = DockerBackend::connect(DockerOptions {
        host: Some("unix:///nonexistent/swtbench-test.sock".into()),
        ..DockerOptions::default()
    })
    .await
    .expect_err("nothing listens there");
    assert!(matches!(err, BackendError::Unreachable { .. }), "{err:?}");
    assert!(
        err.to_string().contains("/nonexistent/swtbench-test.sock"),
        "{err}"
    );
    assert!(err.hint().is_some_and(|h| h.contains("DOCKER_HOST")));

    let Some(backend) = connect("docker_unreachable_engine").await else {
        return;
    };
    let info = backend.engine_info().await.expect("engine info");
    assert!(!info.version.is_empty());
    assert!(info.api_version.starts_with("1."), "{info:?}");
}

/// The engine answers a removal with 409 "removal … is already in progress" when another one is
/// under way (its auto-remove of a container that just ended, another clean-up): the removal
/// returns only once the container is gone, so that removing its image next does not fail on it.
#[tokio::test(flavor = "multi_thread")]
async fn docker_a_removal_already_under_way_is_waited_for() {
    let Some((direct, _dir, proxy)) = engine_and_proxy("docker_removal_under_way").await else {
        return;
    };
    let scope = Scope::new("removal-under-way");
    let id = started(&direct, &scope.spec(BASE_IMAGE, "under_way")).await;
    let backend = through(&proxy).await;
    proxy.answer_removals_as_under_way();
    let started_at = std::time::Instant::now();
    assert!(backend.container_remove(&id).await.expect("remove"));
    let waited = started_at.elapsed();
    scope.assert_no_leftover_containers(&direct).await;
    // The proxy forwarded the removal only after REMOVAL_UNDER_WAY_FOR: it was waited for.
    assert!(
        waited >= REMOVAL_UNDER_WAY_FOR,
        "returned after {waited:?}, before the removal under way ended"
    );
    proxy.resume();
}

/// A push tags the image with its registry name first; dropped before it ends (Ctrl-C, a
/// cancelled task), that name is removed as when the push ends, not left on the local image.
#[tokio::test(flavor = "multi_thread")]
async fn docker_a_push_dropped_unfinished_leaves_no_registry_name() {
    let Some((direct, _dir, proxy)) = engine_and_proxy("docker_push_dropped").await else {
        return;
    };
    let scope = Scope::new("push-dropped");
    // No registry listens there; the proxy holds the engine's answer to the push anyway.
    let reference = format!("127.0.0.1:9/{}", scope.tag("pushed"));
    let backend = Arc::new(through(&proxy).await);
    proxy.hold_pushes();
    let push = tokio::spawn({
        let (backend, reference) = (backend.clone(), reference.clone());
        async move { swtbench_backend::push_as(&backend, BASE_IMAGE, &reference, None, &|_| {}).await }
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !direct.image_exists(&reference).await.expect("inspect") {
        assert!(
            std::time::Instant::now() < deadline,
            "the push never tagged"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    push.abort();
    assert!(push.await.expect_err("cancelled").is_cancelled());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while direct.image_exists(&reference).await.expect("inspect") {
        if std::time::Instant::now() > deadline {
            let _ = direct.image_remove(&reference, false).await;
            panic!("the registry name {reference} stayed after the push was dropped");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(direct.image_exists(BASE_IMAGE).await.expect("inspect"));
    proxy.resume();
}

#[tokio::test]
async fn docker_build_from_context_streams_log_applies_labels_and_reports_failures() {
    let Some(backend) = connect("docker_build").await else {
        return;
    };
    ensure_base_image(&backend).await;
    let scope = Scope::new("build");

    let dockerfile = format!(
        "FROM {BASE_IMAGE}\nARG GREETING\nCOPY hello.sh /usr/local/bin/hello.sh\nRUN echo \"greeting is $GREETING\" && hello.sh > /built.txt\n"
    );
    let ctx = BuildContext::new(dockerfile)
        .with_file(
            "hello.sh",
            "#!/bin/sh\necho hello from the context\n",
            0o755,
        )
        .expect("context");
    let mut request = BuildRequest::new(scope.tag("build"), ctx);
    request.labels = scope.labels();
    request.labels.insert(labels::KIND.into(), "test".into());
    request
        .labels
        .insert("swtbench.note".into(), "say \"hi\" for $5 \\o/".into());
    request
        .build_args
        .insert("GREETING".into(), "hi-there".into());
    request.platform = Some("linux/x86_64".into());
    request.timeout = Some(Duration::from_secs(300));
    let mut log = Vec::new();
    let image = backend.image_build(request, &mut log).await.expect("build");
    let log = String::from_utf8(log).expect("utf-8 log");
    // Docker's classic builder writes "Step 4/5 : RUN …", Podman's (Buildah) "STEP 4/5: RUN …".
    assert!(
        log.to_ascii_lowercase().contains("step 4/") && log.contains(": RUN echo"),
        "{log}"
    );
    assert!(
        log.contains("greeting is hi-there"),
        "build args reach RUN: {log}"
    );
    assert!(!log.contains('\x1b'), "escapes stripped");
    assert_eq!(
        image.labels.get(labels::KIND).map(String::as_str),
        Some("test")
    );
    assert_eq!(
        image.labels.get("swtbench.note").map(String::as_str),
        Some("say \"hi\" for $5 \\o/"),
        "label values survive quoting"
    );
    assert!(image.created_unix > 1_600_000_000);
    let listed = backend
        .images_with_label(&scope.filter())
        .await
        .expect("list images");
    assert_eq!(
        listed.iter().map(|i| &i.id).collect::<Vec<_>>(),
        vec![&image.id]
    );

    let id = started(&backend, &scope.spec(&image.id, "build")).await;
    let out = backend.copy_out(&id, "/built.txt").await.expect("copy out");
    assert_eq!(out, b"hello from the context\n");
    assert!(backend.container_remove(&id).await.expect("remove"));

    // A failing step: BuildFailed with the log tail.
    let ctx = BuildContext::new(format!(
        "FROM {BASE_IMAGE}\nRUN echo about to fail && exit 7\n"
    ));
    let mut request = BuildRequest::new(scope.tag("broken"), ctx);
    request.labels = scope.labels();
    let mut log = Vec::new();
    let err = backend
        .image_build(request, &mut log)
        .await
        .expect_err("fails");
    match &err {
        BackendError::BuildFailed {
            message, log_tail, ..
        } => {
            assert!(message.contains('7'), "{message}");
            assert!(
                log_tail.iter().any(|l| l.contains("about to fail")),
                "{log_tail:?}"
            );
        }
        other => panic!("expected BuildFailed, got {other:?}"),
    }
    assert!(!backend
        .image_exists(&scope.tag("broken"))
        .await
        .expect("inspect"));

    // A build past its time limit is abandoned.
    let ctx = BuildContext::new(format!("FROM {BASE_IMAGE}\nRUN sleep 120\n"));
    let mut request = BuildRequest::new(scope.tag("slow"), ctx);
    request.labels = scope.labels();
    request.timeout = Some(Duration::from_secs(3));
    let err = backend
        .image_build(request, &mut Vec::new())
        .await
        .expect_err("times out");
    assert!(matches!(err, BackendError::BuildTimeout { .. }), "{err:?}");

    assert!(backend
        .image_remove(&image.id, true)
        .await
        .expect("remove image"));
    assert!(!backend
        .image_remove(&image.id, true)
        .await
        .expect("already gone"));
    scope.assert_no_leftover_containers(&backend).await;
}

#[tokio::test]
async fn docker_copy_in_out_and_exec_keep_modes_owners_order_and_exit_codes() {
    let Some(backend) = connect("docker_copy_exec").await else {
        return;
    };
    ensure_base_image(&backend).await;
    let scope = Scope::new("copy-exec");
    let mut spec = scope.spec(BASE_IMAGE, "pred_pre");
    spec.env = vec![("SWTBENCH_TEST_VAR".into(), "from-spec".into())];
    spec.working_dir = Some("/tmp".into());
    let id = started(&backend, &spec).await;

    backend
        .copy_in(
            &id,
            &[
                ContainerFile::new("/eval.sh", "echo out1; echo err1 >&2; echo out2; exit 3\n")
                    .mode(0o755),
                ContainerFile::new("/home/nonroot/private/notes.txt", "for nonroot only\n")
                    .mode(0o600)
                    .owner(1000, 1000),
                ContainerFile::new("/root/trace.py", "print('readable')\n").mode(0o644),
            ],
        )
        .await
        .expect("copy in");

    let out = backend
        .exec(&id, &ExecRequest::new(["/bin/bash", "/eval.sh"]))
        .await
        .expect("exec");
    assert_eq!(
        out.text(),
        "out1\nerr1\nout2\n",
        "stdout and stderr interleaved in order"
    );
    assert_eq!(out.exit_code, Some(3));
    assert!(!out.timed_out && out.omitted_bytes == 0);

    let as_nonroot = backend
        .exec(
            &id,
            &ExecRequest::new([
                "/bin/sh",
                "-c",
                "id -un; cat /home/nonroot/private/notes.txt; echo $SWTBENCH_TEST_VAR; pwd",
            ])
            .user("nonroot"),
        )
        .await
        .expect("exec as nonroot");
    assert_eq!(
        as_nonroot.text(),
        "nonroot\nfor nonroot only\nfrom-spec\n/tmp\n"
    );
    let perms = sh(
        &backend,
        &id,
        "stat -c '%a %U' /eval.sh /home/nonroot/private/notes.txt",
    )
    .await;
    assert_eq!(perms.text(), "755 root\n600 nonroot\n");
    let workdir = backend
        .exec(&id, &ExecRequest::new(["pwd"]).working_dir("/home"))
        .await
        .expect("exec");
    assert_eq!(workdir.text(), "/home\n");

    sh(&backend, &id, "printf 'line1\\nline2' > /root/result.txt").await;
    let got = backend
        .copy_out(&id, "/root/result.txt")
        .await
        .expect("copy out");
    assert_eq!(got, b"line1\nline2");
    let missing = backend
        .copy_out(&id, "/root/none.txt")
        .await
        .expect_err("missing");
    assert!(
        matches!(missing, BackendError::PathNotFound { .. }),
        "{missing:?}"
    );

    assert!(backend.container_remove(&id).await.expect("remove"));
    let gone = backend
        .copy_out(&id, "/root/result.txt")
        .await
        .expect_err("gone");
    assert!(
        matches!(gone, BackendError::ContainerNotFound(_)),
        "{gone:?}"
    );
    assert!(!backend.container_remove(&id).await.expect("remove again"));
    scope.assert_no_leftover_containers(&backend).await;
}

#[tokio::test]
async fn docker_exec_timeout_keeps_output_so_far_and_kills_the_process_tree() {
    let Some(backend) = connect("docker_exec_timeout").await else {
        return;
    };
    ensure_base_image(&backend).await;
    let scope = Scope::new("timeout");
    let id = started(&backend, &scope.spec(BASE_IMAGE, "gold_pre")).await;

    let script = "echo before the hang; (sleep 300; echo child) & sleep 301; echo never";
    let out = backend
        .exec(
            &id,
            &ExecRequest::new(["/bin/bash", "-c", script]).timeout(Duration::from_secs(2)),
        )
        .await
        .expect("exec");
    assert!(out.timed_out);
    assert_eq!(out.text(), "before the hang\n");
    assert!(
        !out.container_killed,
        "killing the process group was enough"
    );
    assert!(!out.success());

    // Neither the sleeping child nor the grandchild survived.
    let ps = sh(&backend, &id, "ps -eo comm= | grep -c '^sleep' || true").await;
    assert_eq!(ps.text().trim(), "0", "sleep processes left");

    // The container stays usable after a timeout.
    let after = sh(&backend, &id, "echo still alive").await;
    assert_eq!(after.text(), "still alive\n");

    assert!(backend.container_remove(&id).await.expect("remove"));
    scope.assert_no_leftover_containers(&backend).await;
}

#[tokio::test]
async fn docker_exec_in_a_container_killed_or_removed_meanwhile_is_an_error_not_an_output() {
    let Some(backend) = connect("docker_exec_container_dies").await else {
        return;
    };
    ensure_base_image(&backend).await;
    let backend = Arc::new(backend);
    let scope = Scope::new("dies");
    for removed in [false, true] {
        let id = started(&backend, &scope.spec(BASE_IMAGE, "pred_pre")).await;
        let killer = {
            let backend = backend.clone();
            let id = id.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(1500)).await;
                if removed {
                    backend.container_remove(&id).await.map(|_| ())
                } else {
                    backend.container_kill(&id).await
                }
            })
        };
        let script = "echo started; sleep 60; echo never";
        let out = backend
            .exec(
                &id,
                &ExecRequest::new(["/bin/sh", "-c", script]).timeout(Duration::from_secs(30)),
            )
            .await;
        killer.await.expect("killer task").expect("kill or remove");
        match out {
            Err(BackendError::ContainerStopped { id: got, reason }) => {
                assert_eq!(got, id);
                // A removal kills first: the engine may still show the stopped container.
                let ok = reason.contains("exited") || (removed && reason.contains("removed"));
                assert!(ok, "{reason}");
            }
            other => panic!("removed={removed}: expected ContainerStopped, got {other:?}"),
        }
        backend.container_remove(&id).await.expect("remove");
    }
    scope.assert_no_leftover_containers(&backend).await;
}

#[tokio::test]
async fn docker_exec_output_cap_keeps_head_and_tail() {
    let Some(backend) = connect("docker_output_cap").await else {
        return;
    };
    ensure_base_image(&backend).await;
    let scope = Scope::new("cap");
    let id = started(&backend, &scope.spec(BASE_IMAGE, "pred_post")).await;

    let out = backend
        .exec(
            &id,
            &ExecRequest::new(["seq", "1", "200000"]).output_limit(1000),
        )
        .await
        .expect("exec");
    let text = out.text();
    let full_len: u64 = (1..=200_000u64)
        .map(|n| n.to_string().len() as u64 + 1)
        .sum();
    // At most 1000 bytes kept, cut back to whole lines.
    let marker = swtbench_backend::output::truncation_marker(out.omitted_bytes);
    let kept = text.len() - marker.len();
    assert_eq!(out.omitted_bytes + kept as u64, full_len);
    assert!(kept <= 1000 && kept > 980, "{kept}");
    assert!(text.starts_with("1\n2\n3\n"), "{}", &text[..40]);
    assert!(text.ends_with("199999\n200000\n"));
    let (head, tail) = text.split_once(marker.as_str()).expect("marker");
    for line in head.lines().chain(tail.lines()) {
        let n: u64 = line
            .parse()
            .unwrap_or_else(|_| panic!("a cut line {line:?}"));
        assert!((1..=200_000).contains(&n));
    }
    assert_eq!(out.exit_code, Some(0));

    assert!(backend.container_remove(&id).await.expect("remove"));
    scope.assert_no_leftover_containers(&backend).await;
}

#[tokio::test]
async fn docker_containers_have_no_network_by_default_and_an_opt_in() {
    let Some(backend) = connect("docker_network").await else {
        return;
    };
    ensure_base_image(&backend).await;
    let scope = Scope::new("network");
    let offline = started(&backend, &scope.spec(BASE_IMAGE, "base_pre")).await;
    let out = backend
        .exec(
            &offline,
            &ExecRequest::new([
                "python3",
                "-c",
                "import socket; socket.create_connection(('1.1.1.1', 80), 3)",
            ])
            .timeout(Duration::from_secs(30)),
        )
        .await
        .expect("exec");
    assert_ne!(
        out.exit_code,
        Some(0),
        "the connection must fail: {}",
        out.text()
    );
    assert!(
        out.text().contains("OSError") || out.text().contains("unreachable"),
        "{}",
        out.text()
    );
    let ifaces = sh(&backend, &offline, "ls /sys/class/net").await;
    assert_eq!(ifaces.text(), "lo\n");

    let mut spec = scope.spec(BASE_IMAGE, "base_post");
    spec.network = NetworkAccess::Enabled;
    let online = started(&backend, &spec).await;
    let ifaces = sh(&backend, &online, "ls /sys/class/net").await;
    assert!(
        ifaces.text().lines().any(|l| l != "lo"),
        "{}",
        ifaces.text()
    );

    for id in [&offline, &online] {
        assert!(backend.container_remove(id).await.expect("remove"));
    }
    scope.assert_no_leftover_containers(&backend).await;
}

/// `--no-network`: containers on the engine's internal network have an interface, but their
/// packets are dropped (a connection times out rather than failing at once, as some repositories'
/// own tests expect), and two of them cannot reach each other.
#[tokio::test]
async fn docker_isolated_containers_time_out_and_cannot_reach_each_other() {
    let Some(backend) = connect("docker_isolated").await else {
        return;
    };
    ensure_base_image(&backend).await;
    let scope = Scope::new("isolated");
    let mut spec = scope.spec(BASE_IMAGE, "pred_pre");
    spec.network = NetworkAccess::Isolated;
    let a = started(&backend, &spec).await;
    let mut spec = scope.spec(BASE_IMAGE, "pred_post");
    spec.network = NetworkAccess::Isolated;
    let b = started(&backend, &spec).await;

    // A documentation address (TEST-NET-1): nothing leaves the internal network anyway.
    let out = backend
        .exec(
            &a,
            &ExecRequest::new([
                "python3",
                "-c",
                "import socket, time\nt = time.time()\ntry:\n    socket.create_connection(('192.0.2.1', 80), 3)\n    print('connected')\nexcept OSError as e:\n    print(type(e).__name__, e, round(time.time() - t, 1))",
            ])
            .timeout(Duration::from_secs(60)),
        )
        .await
        .expect("exec");
    let text = out.text();
    assert!(
        text.contains("timed out") && !text.contains("unreachable"),
        "a dropped packet times out: {text}"
    );
    let secs: f64 = text
        .split_whitespace()
        .last()
        .and_then(|t| t.parse().ok())
        .unwrap_or(0.0);
    assert!(secs >= 2.5, "{text}");
    let ifaces = sh(&backend, &a, "ls /sys/class/net").await;
    assert!(
        ifaces.text().lines().any(|l| l != "lo"),
        "{}",
        ifaces.text()
    );

    // b listens; a cannot reach it.
    let listen = sh(
        &backend,
        &b,
        "nohup python3 -m http.server 8000 >/dev/null 2>&1 & sleep 1; python3 -c 'import socket; print(socket.gethostbyname(socket.gethostname()))'",
    )
    .await;
    let b_ip = listen.text().trim().to_string();
    assert!(b_ip.split('.').count() == 4, "{}", listen.text());
    let local = sh(
        &backend,
        &b,
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', 8000), 3); print('ok')\"",
    )
    .await;
    assert_eq!(local.text().trim(), "ok", "the server listens");
    let across = sh(
        &backend,
        &a,
        &format!(
            "python3 -c \"import socket\ntry:\n    socket.create_connection(('{b_ip}', 8000), 3)\n    print('reached')\nexcept OSError as e:\n    print('refused', e)\""
        ),
    )
    .await;
    assert!(
        across.text().starts_with("refused"),
        "containers of the isolated network reach each other: {}",
        across.text()
    );

    for id in [&a, &b] {
        assert!(backend.container_remove(id).await.expect("remove"));
    }
    scope.assert_no_leftover_containers(&backend).await;
}

#[tokio::test]
async fn docker_init_is_pid_one_and_forwards_stop_signals() {
    let Some(backend) = connect("docker_init").await else {
        return;
    };
    ensure_base_image(&backend).await;
    let scope = Scope::new("init");
    let id = started(&backend, &scope.spec(BASE_IMAGE, "gold_post")).await;

    let pid1 = sh(&backend, &id, "cat /proc/1/comm").await;
    assert_ne!(
        pid1.text().trim(),
        "tail",
        "PID 1 must be an init, not the keep-alive command"
    );
    // SIGTERM to the init ends the container at once (tail as PID 1 would ignore it and a stop
    // would wait out its grace period).
    let _ = backend
        .exec(
            &id,
            &ExecRequest::new(["kill", "-TERM", "1"]).timeout(Duration::from_secs(10)),
        )
        .await;
    let filter = scope.filter();
    let mut state = String::new();
    for _ in 0..100 {
        state = backend.containers_with_label(&filter).await.expect("list")[0]
            .state
            .clone();
        if state == "exited" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(state, "exited");

    // Kill on a stopped container is fine; remove works in any state.
    backend.container_kill(&id).await.expect("kill stopped");
    assert!(backend.container_remove(&id).await.expect("remove"));
    scope.assert_no_leftover_containers(&backend).await;
}

#[tokio::test]
async fn docker_labels_and_limits_are_applied_and_cleanup_by_label_leaves_nothing() {
    let Some(backend) = connect("docker_labels_limits").await else {
        return;
    };
    ensure_base_image(&backend).await;
    let scope = Scope::new("labels");

    let mut spec = scope.spec(BASE_IMAGE, "pred_pre");
    spec.limits = ResourceLimits {
        memory_bytes: Some(256 * 1024 * 1024),
        pids: Some(64),
        nano_cpus: Some(500_000_000),
        disk_bytes: Some(8 << 20),
        file_bytes: Some(1 << 20),
    };
    let limited = started(&backend, &spec).await;
    let limits = sh(
        &backend,
        &limited,
        "cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max; \
         cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes; \
         cat /sys/fs/cgroup/cpu.max 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us",
    )
    .await;
    let text = limits.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "64", "{lines:?}");
    assert_eq!(lines[1], (256 * 1024 * 1024).to_string(), "{lines:?}");
    assert!(lines[2].starts_with("50000"), "half a CPU: {lines:?}");

    // The largest file: a bigger write fails, and what was written is measured.
    let write = sh(
        &backend,
        &limited,
        "head -c 3000000 /dev/zero > /tmp/big 2>/dev/null; echo $?; wc -c < /tmp/big",
    )
    .await;
    let text = write.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_ne!(lines[0], "0", "the write over 1 MiB must fail: {lines:?}");
    assert_eq!(lines[1].trim(), (1 << 20).to_string(), "{lines:?}");
    let written = backend
        .container_written_bytes(&limited)
        .await
        .expect("measure")
        .expect("a size");
    assert!(written.total >= 1 << 20, "written {written:?}");
    assert_eq!(
        written.largest,
        Some(1 << 20),
        "the file at the limit: {written:?}"
    );
    // The disk watch ends a command that writes more than its disk limit in all.
    let mut request = ExecRequest::new([
        "/bin/sh",
        "-c",
        "i=0; while [ $i -lt 40 ]; do head -c 1000000 /dev/zero > /tmp/f$i; i=$((i+1)); done; sleep 30; echo not-stopped",
    ])
    .timeout(Duration::from_secs(25));
    request.disk_limit = Some(8 << 20);
    let out = backend.exec(&limited, &request).await.expect("exec");
    assert!(out.disk_limit_hit, "{out:?}");
    assert!(
        !out.timed_out && !out.text().contains("not-stopped"),
        "{out:?}"
    );

    // Two more containers of the same run, not started.
    let mut ids = vec![limited];
    for run in ["pred_post", "gold_pre"] {
        ids.push(
            backend
                .container_create(&scope.spec(BASE_IMAGE, run))
                .await
                .expect("create"),
        );
    }
    let by_run = backend
        .containers_with_label(&LabelFilter::run_id(&scope.value).and(labels::RUN, "pred_post"))
        .await
        .expect("list");
    assert_eq!(by_run.len(), 1);
    assert_eq!(by_run[0].id, ids[1]);
    assert_eq!(
        by_run[0]
            .labels
            .get(labels::INSTANCE_ID)
            .map(String::as_str),
        Some("test__instance-1")
    );
    assert_eq!(by_run[0].state, "created");

    let all = backend
        .containers_with_label(&LabelFilter::run_id(&scope.value))
        .await
        .expect("list");
    assert_eq!(all.len(), 3);
    for c in all {
        assert!(backend.container_remove(&c.id).await.expect("remove"));
    }
    scope.assert_no_leftover_containers(&backend).await;
    let empty = backend.containers_with_label(&LabelFilter::default()).await;
    assert!(
        empty.is_err(),
        "an empty filter would match everything and is refused"
    );
}

#[tokio::test]
async fn docker_import_turns_a_rootfs_tarball_into_a_labelled_image() {
    let Some(backend) = connect("docker_import").await else {
        return;
    };
    let scope = Scope::new("import");
    let mut tar = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(6);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, "etc/marker", &b"marker"[..])
        .expect("tar");
    let bytes = tar.into_inner().expect("tar");

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rootfs.tar");
    std::fs::write(&path, &bytes).expect("write");
    let mut labels = scope.labels();
    labels.insert("swtbench.note".into(), "a value with spaces".into());
    let image = backend
        .image_import(ImportRequest {
            tag: scope.tag("import"),
            rootfs: RootfsSource::File(path),
            labels,
            changes: vec!["ENV FROM_IMPORT=1".into()],
        })
        .await
        .expect("import");
    assert_eq!(
        image.labels.get("swtbench.note").map(String::as_str),
        Some("a value with spaces")
    );
    // Podman qualifies short names (`docker.io/library/…`).
    assert!(
        image.tags.iter().any(|t| t.ends_with(&scope.tag("import"))),
        "{:?}",
        image.tags
    );
    let again = backend
        .image_import(ImportRequest {
            tag: scope.tag("import2"),
            rootfs: RootfsSource::Bytes(bytes),
            labels: scope.labels(),
            changes: Vec::new(),
        })
        .await
        .expect("import from memory");
    for id in [&image.id, &again.id] {
        assert!(backend.image_remove(id, true).await.expect("remove"));
    }
    assert!(backend
        .images_with_label(&scope.filter())
        .await
        .expect("list")
        .is_empty());
}

/// The image builder on the real engine: the host CA bundle and proxy settings are carried into the
/// build so that pip reaches PyPI through a TLS-intercepting proxy, and concurrent asks build once.
#[tokio::test]
async fn docker_builder_passes_the_ca_bundle_so_pip_works_behind_the_proxy() {
    let Some(backend) = connect("docker_builder_pip").await else {
        return;
    };
    ensure_base_image(&backend).await;
    let scope = Scope::new("pip");
    let network = BuildNetwork::from_vars(None, |k| std::env::var(k).ok()).expect("read CA bundle");
    if !network.has_ca_bundle() {
        eprintln!("note: no SSL_CERT_FILE on this host; building without a CA bundle");
    }
    let backend = Arc::new(backend);
    let builder = Arc::new(ImageBuilder::new(backend.clone(), 2, network));
    let log_dir = tempfile::tempdir().expect("tempdir");
    let dockerfile = format!(
        "FROM {BASE_IMAGE}\nRUN python3 -m venv /venv && /venv/bin/pip download --no-deps --retries 2 --timeout 30 -d /wheels six && ls /wheels\n"
    );
    let mut request = BuildRequest::new(scope.tag("pip"), BuildContext::new(dockerfile.clone()));
    request.labels = scope.labels();
    request.timeout = Some(Duration::from_secs(600));
    let recipe = ImageRecipe {
        request,
        log_dir: Some(log_dir.path().join("pip")),
    };
    let (a, b) = tokio::join!(
        builder.ensure(&recipe, RebuildPolicy::Reuse, None),
        builder.ensure(&recipe, RebuildPolicy::Reuse, None)
    );
    let log =
        std::fs::read_to_string(log_dir.path().join("pip/build_image.log")).unwrap_or_default();
    let a = a.unwrap_or_else(|e| panic!("pip build failed: {e}\n{log}"));
    assert_eq!(a, b.expect("second waiter"));
    assert!(a.was_built());
    assert!(log.contains("six-"), "the wheel was downloaded: {log}");
    assert_eq!(
        std::fs::read_to_string(log_dir.path().join("pip/Dockerfile")).expect("Dockerfile"),
        dockerfile,
        "the recorded Dockerfile is the pristine one"
    );

    let id = started(&backend, &scope.spec(&a.image.id, "pip")).await;
    let env = sh(
        &backend,
        &id,
        "echo \"[$SSL_CERT_FILE][$PIP_CERT]\"; ls /wheels",
    )
    .await;
    assert!(
        env.text().starts_with("[][]\n"),
        "build args do not leak into the image: {}",
        env.text()
    );
    assert!(env.text().contains("six-"));
    assert!(backend.container_remove(&id).await.expect("remove"));

    assert!(backend
        .image_remove(&a.image.id, true)
        .await
        .expect("remove image"));
    scope.assert_no_leftover_containers(&backend).await;
}

#[tokio::test]
async fn docker_labels_passed_to_run_containers_are_found_by_run_id() {
    let Some(backend) = connect("docker_run_labels").await else {
        return;
    };
    ensure_base_image(&backend).await;
    let scope = Scope::new("runlabels");
    let spec = scope.spec(BASE_IMAGE, "base_pre");
    let id = backend.container_create(&spec).await.expect("create");
    let found = backend
        .containers_with_label(&LabelFilter::run_id(&scope.value))
        .await
        .expect("list");
    assert_eq!(found.len(), 1);
    // The container carries every label of its spec (plus whatever its image carries).
    let missing: BTreeMap<&String, &String> = spec
        .labels
        .iter()
        .filter(|(k, v)| found[0].labels.get(*k) != Some(*v))
        .collect();
    assert!(missing.is_empty(), "labels missing: {missing:?}");
    assert!(
        found[0].labels.contains_key(labels::RUN)
            && found[0].labels.contains_key(labels::INSTANCE_ID)
    );
    assert!(backend.container_remove(&id).await.expect("remove"));
    scope.assert_no_leftover_containers(&backend).await;
}

/// A failed build's step images are the build cache of other builds running at the same time
/// (same base, same first instructions). Removing them while such a build runs can pull the parent
/// from under its next commit (`failed to set parent …: unknown parent image ID`), so they wait
/// until no build of the connection runs, and are removed then.
#[tokio::test]
async fn docker_a_failed_builds_step_images_wait_for_the_builds_still_running() {
    let Some(backend) = connect("docker_steps").await else {
        return;
    };
    ensure_base_image(&backend).await;
    let scope = Scope::new("steps");
    let marker = scope.tag("shared");
    let good_ctx = BuildContext::new(format!(
        "FROM {BASE_IMAGE}\nRUN echo '{marker}' > /shared\nRUN sleep 15 && echo good > /good\n"
    ));
    let bad_ctx = BuildContext::new(format!(
        "FROM {BASE_IMAGE}\nRUN echo '{marker}' > /shared\nRUN echo bad > /bad\nRUN exit 3\n"
    ));
    let mut good_req = BuildRequest::new(scope.tag("good"), good_ctx);
    good_req.labels = scope.labels();
    let mut bad_req = BuildRequest::new(scope.tag("bad"), bad_ctx);
    bad_req.labels = scope.labels();

    let (mut good_log, mut bad_log) = (Vec::new(), Vec::new());
    let good = backend.image_build(good_req, &mut good_log);
    let bad = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let result = backend.image_build(bad_req, &mut bad_log).await;
        // The good build is still in its 15 s step: the failed build's own step images stay.
        let mut waiting = Vec::new();
        for id in backend.pending_step_images() {
            if let Some(info) = backend.image_inspect(&id).await.expect("inspect") {
                if info.tags.is_empty() {
                    waiting.push(id);
                }
            }
        }
        (result, waiting)
    };
    let (good, (bad, waiting)) = tokio::join!(good, bad);
    let good = good.unwrap_or_else(|e| {
        panic!(
            "the good build failed: {e}\n{}",
            String::from_utf8_lossy(&good_log)
        )
    });
    assert!(
        matches!(bad, Err(BackendError::BuildFailed { .. })),
        "{bad:?}"
    );
    // Its newest step (`echo bad`, which no other build shares) at least; the shared step too
    // unless the good build had committed it first (then it is the good image's parent).
    let own = waiting.last().cloned().unwrap_or_else(|| {
        panic!(
            "the failed build's step images were not kept while the other build ran\n{}",
            String::from_utf8_lossy(&bad_log)
        )
    });
    // Both ended: nothing waits, the failed build's own step is gone, the good image is whole.
    assert!(backend.pending_step_images().is_empty());
    assert!(
        backend
            .image_inspect(&own)
            .await
            .expect("inspect")
            .is_none(),
        "step image {own} left behind"
    );
    assert!(backend.image_exists(&good.id).await.expect("inspect"));
    assert!(backend.image_remove(&good.id, true).await.expect("remove"));
    scope.assert_no_leftover_containers(&backend).await;
}

/// Processes that start at once each make the isolated network when the engine has none, and
/// engines before API 1.44 keep every one of them under the same name. Containers must still
/// start (joined by id, never by the then ambiguous name), all on the same network, and the
/// duplicates be gone afterwards. Found by CI: "network swtbench-isolated is ambiguous (2 matches
/// found on name)" when two test processes started their first isolated container together.
#[tokio::test]
async fn docker_isolated_network_made_by_many_processes_at_once_is_one_network() {
    let Some(probe) = connect("docker_isolated_race").await else {
        return;
    };
    ensure_base_image(&probe).await;
    let scope = Scope::new("isolated-race");
    // One name for every run, so a failed run's networks are removed by the next.
    let name = "swtbench-isolated-race-test".to_string();
    let raw = bollard::Docker::connect_with_local_defaults().expect("docker client");
    let of_name = |listed: Vec<bollard::models::Network>| -> Vec<String> {
        listed
            .into_iter()
            .filter(|n| n.name.as_deref() == Some(name.as_str()))
            .filter_map(|n| n.id)
            .collect()
    };
    let list = || async {
        raw.list_networks(None::<bollard::query_parameters::ListNetworksOptions>)
            .await
            .expect("list networks")
    };
    for id in of_name(list().await) {
        raw.remove_network(&id)
            .await
            .expect("remove a stale test network");
    }

    // Round 1: none exists, eight connections make it at once. Round 2: two exist already
    // (made here the way two racing processes leave them, where the engine lets them).
    for round in 1..=2 {
        let mut made_twice = false;
        if round == 2 {
            for id in of_name(list().await) {
                raw.remove_network(&id).await.expect("remove");
            }
            for _ in 0..2 {
                let request = bollard::models::NetworkCreateRequest {
                    name: name.clone(),
                    internal: Some(true),
                    ..Default::default()
                };
                made_twice |= raw.create_network(request).await.is_ok();
            }
            made_twice = made_twice && of_name(list().await).len() == 2;
            if !made_twice {
                eprintln!(
                    "this engine refuses a second network of the same name: round 2 checks one"
                );
            }
        }
        // A container of a process that picked the other one holds it: the duplicate cannot be
        // removed while the containers below are made and started.
        let mut holder = None;
        if made_twice {
            let probe_options = DockerOptions {
                isolated_network: name.clone(),
                ..crate::support::engine_options()
            };
            let picker = DockerBackend::connect(probe_options)
                .await
                .expect("connect");
            let mut spec = scope.spec(BASE_IMAGE, "holder");
            spec.network = NetworkAccess::Isolated;
            spec.command = vec!["sleep".into(), "300".into()];
            let picked = {
                let id = picker.container_create(&spec).await.expect("create");
                picker.container_remove(&id).await.expect("remove");
                let left = of_name(list().await);
                assert_eq!(left.len(), 1, "an unused duplicate is removed: {left:?}");
                left[0].clone()
            };
            let other = bollard::models::NetworkCreateRequest {
                name: name.clone(),
                internal: Some(true),
                ..Default::default()
            };
            let other = raw.create_network(other).await.expect("second network").id;
            let body = bollard::models::ContainerCreateBody {
                image: Some(BASE_IMAGE.into()),
                cmd: Some(vec!["sleep".into(), "300".into()]),
                labels: Some(spec.labels.clone().into_iter().collect()),
                host_config: Some(bollard::models::HostConfig {
                    network_mode: Some(other.clone()),
                    ..Default::default()
                }),
                networking_config: Some(bollard::models::NetworkingConfig {
                    endpoints_config: Some(std::collections::HashMap::from([(
                        other.clone(),
                        bollard::models::EndpointSettings {
                            network_id: Some(other.clone()),
                            ..Default::default()
                        },
                    )])),
                }),
                ..Default::default()
            };
            let id = raw
                .create_container(
                    None::<bollard::query_parameters::CreateContainerOptions>,
                    body,
                )
                .await
                .expect("holder")
                .id;
            raw.start_container(
                &id,
                None::<bollard::query_parameters::StartContainerOptions>,
            )
            .await
            .expect("start the holder");
            assert_ne!(picked, other);
            holder = Some((id, picked));
        }
        let mut tasks = Vec::new();
        for k in 0..8 {
            let options = DockerOptions {
                isolated_network: name.clone(),
                ..crate::support::engine_options()
            };
            let mut spec = scope.spec(BASE_IMAGE, &format!("pred_post_{round}_{k}"));
            spec.network = NetworkAccess::Isolated;
            tasks.push(tokio::spawn(async move {
                let backend = DockerBackend::connect(options).await.expect("connect");
                let id = backend
                    .container_create(&spec)
                    .await
                    .map_err(|e| e.to_string())?;
                let started = backend
                    .container_start(&id)
                    .await
                    .map_err(|e| e.to_string());
                Ok::<_, String>((backend, id, started))
            }));
        }
        let mut joined = std::collections::BTreeSet::new();
        for task in tasks {
            let (backend, id, started) = task.await.expect("task").unwrap_or_else(|e| {
                panic!("round {round}: a container on the isolated network: {e}")
            });
            let inspected = raw
                .inspect_container(
                    &id,
                    None::<bollard::query_parameters::InspectContainerOptions>,
                )
                .await
                .expect("inspect");
            backend.container_remove(&id).await.expect("remove");
            started.unwrap_or_else(|e| panic!("round {round}: starting {id}: {e}"));
            let networks = inspected
                .network_settings
                .and_then(|s| s.networks)
                .unwrap_or_default();
            assert_eq!(networks.len(), 1, "round {round}: {networks:?}");
            joined.extend(networks.values().filter_map(|e| e.network_id.clone()));
        }
        let left = of_name(list().await);
        assert_eq!(
            joined.len(),
            1,
            "round {round} (two made beforehand: {made_twice}): containers joined {joined:?}; networks of the name: {left:?}"
        );
        if let Some((id, picked)) = holder {
            assert_eq!(
                joined.iter().next(),
                Some(&picked),
                "the oldest network is joined"
            );
            assert_eq!(left.len(), 2, "the held duplicate stays: {left:?}");
            raw.remove_container(
                &id,
                Some(
                    bollard::query_parameters::RemoveContainerOptionsBuilder::default()
                        .force(true)
                        .build(),
                ),
            )
            .await
            .expect("remove the holder");
            // The next process removes the duplicate no one holds any more.
            let options = DockerOptions {
                isolated_network: name.clone(),
                ..crate::support::engine_options()
            };
            let next = DockerBackend::connect(options).await.expect("connect");
            let mut spec = scope.spec(BASE_IMAGE, "next");
            spec.network = NetworkAccess::Isolated;
            let id = next.container_create(&spec).await.expect("create");
            next.container_remove(&id).await.expect("remove");
        }
        assert_eq!(
            of_name(list().await),
            joined.iter().cloned().collect::<Vec<_>>(),
            "round {round}: the duplicate is removed, the one joined stays"
        );
    }
    for id in of_name(list().await) {
        raw.remove_network(&id)
            .await
            .expect("remove the test network");
    }
    scope.assert_no_leftover_containers(&probe).await;
}

#[tokio::test]
async fn docker_an_images_own_size_leaves_out_the_layers_it_shares() {
    let Some(backend) = connect("docker_own_size").await else {
        return;
    };
    ensure_base_image(&backend).await;
    let scope = Scope::new("own-size");
    let build = |tag: String, dockerfile: String| {
        let mut request = BuildRequest::new(tag, BuildContext::new(dockerfile));
        request.labels = scope.labels();
        request.timeout = Some(Duration::from_secs(300));
        request
    };
    // A parent with 3 MiB of its own, a child with 1 MiB more (random: no compression helps).
    let parent = backend
        .image_build(
            build(
                scope.tag("parent"),
                format!("FROM {BASE_IMAGE}\nRUN head -c 3145728 /dev/urandom > /parent.bin\n"),
            ),
            &mut Vec::new(),
        )
        .await
        .expect("parent");
    let child = backend
        .image_build(
            build(
                scope.tag("child"),
                format!(
                    "FROM {}\nRUN head -c 1048576 /dev/urandom > /child.bin\n",
                    scope.tag("parent")
                ),
            ),
            &mut Vec::new(),
        )
        .await
        .expect("child");
    let sized = backend
        .images_with_own_size(&scope.filter())
        .await
        .expect("list with sizes");
    let own = |id: &str| sized.iter().find(|(i, _)| i.id == id).unwrap().1;
    const MIB: u64 = 1 << 20;
    assert!(
        (MIB..2 * MIB).contains(&own(&child.id)),
        "the child holds its 1 MiB: {sized:?}"
    );
    // The parent's layers are shared with the child: nothing of them counts as its own where
    // the engine computes shared sizes, its own 3 MiB (over the base image) where it does not.
    assert!(own(&parent.id) < 4 * MIB, "{sized:?}");
    for image in [&child.id, &parent.id] {
        assert!(backend.image_remove(image, true).await.expect("remove"));
    }
    scope.assert_no_leftover_containers(&backend).await;
}
