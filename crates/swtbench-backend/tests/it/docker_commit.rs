//! Commit builds against the real engine: the same Dockerfile built step by step and by commit
//! gives images with the same files and settings; the commit image is one layer without what its
//! steps removed, build arguments stay out of it, and a failing step is a `BuildFailed` with the
//! log's tail and no container left behind, also when the build is cancelled while the engine is
//! creating its container; a build may leave its container's removal to the connection, which
//! `settle_background` waits for.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{connect, engine_and_proxy, ensure_base_image, through, Scope, BASE_IMAGE};
use swtbench_backend::{BackendError, BuildContext, BuildRequest, ContainerBackend};

fn docker(args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(args)
        .output()
        .expect("docker CLI");
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// What a container of `image` shows: every file under the directories the recipe touches, with
/// its mode, size and content hash, and the directories themselves.
fn tree(image: &str) -> String {
    docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        "--entrypoint",
        "/bin/sh",
        image,
        "-c",
        "cd / && find root w opt/made tmp -printf '%p %y %m %s\\n' | sort && find root w opt/made -type f -exec sha256sum {} + | sort",
    ])
}

fn config(image: &str, field: &str) -> String {
    docker(&[
        "image",
        "inspect",
        "-f",
        &format!("{{{{json .Config.{field}}}}}"),
        image,
    ])
}

/// The layers `image` has above `parent`, and the bytes they hold (the images' sizes apart).
fn own_layers(image: &str, parent: &str) -> (usize, u64) {
    let layers = |name: &str| {
        docker(&[
            "image",
            "inspect",
            "-f",
            "{{range .RootFS.Layers}}{{println .}}{{end}}",
            name,
        ])
        .lines()
        .count()
    };
    let size = |name: &str| -> u64 {
        docker(&["image", "inspect", "-f", "{{.Size}}", name])
            .trim()
            .parse()
            .expect("image size")
    };
    (layers(image) - layers(parent), size(image) - size(parent))
}

fn recipe(scope: &Scope, name: &str, by_commit: bool) -> BuildRequest {
    // A directory copied in and removed again (as the repository mirror of an instance build),
    // an argument used by a step, a working directory, an environment variable and a label.
    let dockerfile = format!(
        "FROM {BASE_IMAGE}\n\
         ARG GREETING\n\
         COPY ./blob.git /root/blob.git\n\
         COPY setup.sh /root/\n\
         RUN mkdir -p /opt/made && cp /root/blob.git/objects/big /opt/made/copy \\\n \
         && echo \"greeting=$GREETING\" > /opt/made/greeting && /bin/bash /root/setup.sh\n\
         RUN rm -rf /root/blob.git\n\
         WORKDIR /w/\n\
         ENV MADE_BY=swtbench\n\
         RUN echo in-workdir > here.txt && echo \"$MADE_BY\" >> here.txt\n"
    );
    let big: Vec<u8> = (0..6_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut ctx = BuildContext::new(dockerfile)
        .with_file(
            "setup.sh",
            "set -e\necho setup ran > /opt/made/setup.txt\nchmod 0750 /opt/made/setup.txt\n",
            0o755,
        )
        .expect("context");
    ctx.add_bulk_dir("blob.git/refs").expect("dir");
    ctx.add_bulk_file("blob.git/objects/big", big, 0o444)
        .expect("file");
    ctx.add_bulk_file("blob.git/HEAD", "ref: refs/heads/main\n", 0o644)
        .expect("file");
    let mut r = BuildRequest::new(scope.tag(name), ctx);
    r.labels = scope.labels();
    r.labels.insert("swtbench.kind".into(), "instance".into());
    r.build_args.insert("GREETING".into(), "hi-there".into());
    r.timeout = Some(Duration::from_secs(600));
    r.by_commit = by_commit;
    r
}

/// A build by commit of `dockerfile` into this scope's image `name`, with its labels.
fn commit_request(scope: &Scope, name: &str, dockerfile: String) -> BuildRequest {
    let mut request = BuildRequest::new(scope.tag(name), BuildContext::new(dockerfile));
    request.labels = scope.labels();
    request.by_commit = true;
    request
}

#[tokio::test]
async fn docker_a_commit_build_holds_what_the_step_build_holds_in_one_layer() {
    let Some(backend) = connect("docker_commit_build").await else {
        return;
    };
    ensure_base_image(&backend).await;
    let scope = Scope::new("commit-build");

    let mut step_log = Vec::new();
    let stepped = backend
        .image_build(recipe(&scope, "stepped", false), &mut step_log)
        .await
        .expect("step build");
    let mut commit_log = Vec::new();
    let committed = backend
        .image_build(recipe(&scope, "committed", true), &mut commit_log)
        .await
        .expect("commit build");
    let commit_log = String::from_utf8(commit_log).expect("utf-8");
    eprintln!("{commit_log}");
    assert!(
        commit_log.contains("committed once at the end"),
        "{commit_log}"
    );
    assert!(
        commit_log.contains("Step 6/9 : RUN rm -rf /root/blob.git"),
        "{commit_log}"
    );
    assert!(
        commit_log.contains("Successfully built by commit"),
        "{commit_log}"
    );
    let (s, c) = (scope.tag("stepped"), scope.tag("committed"));

    // The same files, modes and contents; the copied directory is gone in both.
    let (ts, tc) = (tree(&s), tree(&c));
    assert_eq!(ts, tc, "file trees differ");
    assert!(tc.contains("opt/made/copy f 444 6000000"), "{tc}");
    assert!(tc.contains("opt/made/setup.txt f 750"), "{tc}");
    assert!(tc.contains("root/setup.sh f 755"), "{tc}");
    assert!(tc.contains("w/here.txt f"), "{tc}");
    assert!(!tc.contains("blob.git"), "{tc}");
    let greeting = docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        &c,
        "cat",
        "/opt/made/greeting",
        "/w/here.txt",
    ]);
    assert_eq!(greeting, "greeting=hi-there\nin-workdir\nswtbench\n");

    // The same settings; the build argument is not in the environment.
    for field in ["Cmd", "Entrypoint", "WorkingDir", "Env", "User", "Labels"] {
        assert_eq!(config(&s, field), config(&c, field), "Config.{field}");
    }
    assert!(
        !config(&c, "Env").contains("GREETING"),
        "{}",
        config(&c, "Env")
    );
    assert!(config(&c, "Env").contains("MADE_BY=swtbench"));
    assert_eq!(config(&c, "WorkingDir").trim(), "\"/w/\"");
    assert_eq!(
        committed.labels.get("swtbench.kind").map(String::as_str),
        Some("instance")
    );
    assert_ne!(stepped.id, committed.id);

    // One layer of its own, without the 6 MB blob the step build keeps in its COPY layer.
    let (layers, bytes) = own_layers(&c, BASE_IMAGE);
    assert_eq!(layers, 1, "one layer above the base");
    // The copy the RUN step made (6 MB) is in it; the removed original is not (it would double it).
    assert!(bytes > 6_000_000 && bytes < 9_000_000, "{bytes}");
    let (stepped_layers, stepped_bytes) = own_layers(&s, BASE_IMAGE);
    assert!(stepped_layers > 1, "{stepped_layers}");
    assert!(
        stepped_bytes > 12_000_000,
        "the step build keeps the removed blob: {stepped_bytes}"
    );

    scope.assert_no_leftover_containers(&backend).await;
}

#[tokio::test]
async fn docker_a_failing_commit_step_is_build_failed_with_the_tail_and_leaves_nothing() {
    let Some(backend) = connect("docker_commit_failure").await else {
        return;
    };
    ensure_base_image(&backend).await;
    let scope = Scope::new("commit-failure");
    let request = commit_request(
        &scope,
        "broken",
        format!(
            "FROM {BASE_IMAGE}\nRUN echo first step\nRUN echo about to fail && exit 7\nRUN echo never\n"
        ),
    );
    let mut log = Vec::new();
    let err = backend
        .image_build(request, &mut log)
        .await
        .expect_err("fails");
    let log = String::from_utf8(log).expect("utf-8");
    match &err {
        BackendError::BuildFailed {
            message, log_tail, ..
        } => {
            assert!(message.contains("returned a non-zero code: 7"), "{message}");
            assert!(
                log_tail.iter().any(|l| l == "about to fail"),
                "{log_tail:?}"
            );
        }
        other => panic!("expected BuildFailed, got {other:?}"),
    }
    assert!(
        log.contains("first step") && !log.contains("never\n"),
        "{log}"
    );
    assert!(!backend
        .image_exists(&scope.tag("broken"))
        .await
        .expect("inspect"));
    scope.assert_no_leftover_containers(&backend).await;

    // A step that outlives the build's time limit: BuildTimeout, and nothing left either.
    let mut request = commit_request(
        &scope,
        "slow",
        format!("FROM {BASE_IMAGE}\nRUN sleep 120\n"),
    );
    request.timeout = Some(Duration::from_secs(3));
    let err = backend
        .image_build(request, &mut Vec::new())
        .await
        .expect_err("times out");
    assert!(matches!(err, BackendError::BuildTimeout { .. }), "{err:?}");
    scope.assert_no_leftover_containers(&backend).await;
}

#[tokio::test]
async fn docker_a_commit_build_cancelled_while_its_container_is_created_leaves_nothing() {
    let Some((direct, _dir, proxy)) = engine_and_proxy("docker_commit_cancel_create").await else {
        return;
    };
    let scope = Scope::new("commit-cancel-create");
    let backend = through(&proxy).await;
    // The engine makes the build container, the build never hears of it: cancelled then (Ctrl-C
    // in that moment), it must still remove the container.
    proxy.hold_creations();
    let mut request = commit_request(
        &scope,
        "cancelled",
        format!("FROM {BASE_IMAGE}\nRUN echo never\n"),
    );
    request.timeout = Some(Duration::from_secs(300));
    let build = tokio::spawn(async move { backend.image_build(request, &mut Vec::new()).await });
    let deadline = Instant::now() + Duration::from_secs(60);
    while direct
        .containers_with_label(&scope.filter())
        .await
        .expect("list")
        .is_empty()
    {
        assert!(Instant::now() < deadline, "no build container appeared");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    build.abort();
    assert!(build.await.expect_err("cancelled").is_cancelled());
    scope.assert_no_leftover_containers(&direct).await;
    proxy.resume();
    assert!(!direct
        .image_exists(&scope.tag("cancelled"))
        .await
        .expect("inspect"));
}

/// A build cancelled (Ctrl-C) while the engine is slow to create its container: the container
/// appears after the build is gone, later than the dropped build's own look for it by name; the
/// creation's task removes it once made, and `settle_background` (the clean-up after a Ctrl-C)
/// waits for that. Its owner label is on it meanwhile, and the image it would have made carries
/// none.
#[tokio::test(flavor = "multi_thread")]
async fn docker_a_commit_build_cancelled_before_a_slow_creation_leaves_no_container() {
    let Some((direct, _dir, proxy)) = engine_and_proxy("docker_commit_slow_create").await else {
        return;
    };
    let scope = Scope::new("commit-slow-create");
    let mut options = crate::support::engine_options();
    options.host = Some(proxy.host());
    options.owner = Some("test-host/1/1".into());
    let backend = swtbench_backend::DockerBackend::connect(options)
        .await
        .expect("connect through the proxy");
    proxy.delay_creations(Duration::from_secs(8));
    let mut request = commit_request(
        &scope,
        "slow-create",
        format!("FROM {BASE_IMAGE}\nRUN echo never\n"),
    );
    request.timeout = Some(Duration::from_secs(300));
    let building = backend.clone();
    let build = tokio::spawn(async move { building.image_build(request, &mut Vec::new()).await });
    let deadline = Instant::now() + Duration::from_secs(60);
    while proxy.creations_seen() == 0 {
        assert!(Instant::now() < deadline, "no creation was asked for");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let asked = Instant::now();
    build.abort();
    assert!(build.await.expect_err("cancelled").is_cancelled());
    // The engine has not made it yet.
    scope.assert_no_leftover_containers(&direct).await;
    tokio::time::timeout(Duration::from_secs(60), backend.settle_background())
        .await
        .expect("settle_background ends");
    scope.assert_no_leftover_containers(&direct).await;
    // Nothing turns up later either, once the engine has had the request (the build's own look
    // for it by name gave up before).
    tokio::time::sleep((asked + Duration::from_secs(12)).saturating_duration_since(Instant::now()))
        .await;
    scope.assert_no_leftover_containers(&direct).await;
    assert!(!direct
        .image_exists(&scope.tag("slow-create"))
        .await
        .expect("inspect"));
}

/// A commit build's container names the connection's owner while it runs; the image it makes
/// names none (the empty value), so a container made from the image is nobody's leftover.
#[tokio::test]
async fn docker_a_commit_build_container_carries_its_owner_and_its_image_does_not() {
    let Some((direct, _dir, proxy)) = engine_and_proxy("docker_commit_owner").await else {
        return;
    };
    let scope = Scope::new("commit-owner");
    let mut options = crate::support::engine_options();
    options.host = Some(proxy.host());
    options.owner = Some("test-host/42/7".into());
    let backend = swtbench_backend::DockerBackend::connect(options)
        .await
        .expect("connect through the proxy");
    // The build's container is made and waits (its answer held) while its labels are read.
    proxy.hold_creations();
    let request = commit_request(
        &scope,
        "owned",
        format!("FROM {BASE_IMAGE}\nRUN echo owned > /owned.txt\n"),
    );
    let building = backend.clone();
    let build = tokio::spawn(async move { building.image_build(request, &mut Vec::new()).await });
    let deadline = Instant::now() + Duration::from_secs(60);
    let made = loop {
        let found = direct
            .containers_with_label(&scope.filter())
            .await
            .expect("list");
        if let Some(c) = found.into_iter().next() {
            break c;
        }
        assert!(Instant::now() < deadline, "no build container appeared");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        made.labels
            .get(swtbench_backend::labels::SESSION)
            .map(String::as_str),
        Some("test-host/42/7"),
        "{made:?}"
    );
    proxy.resume();
    let built = build.await.expect("join").expect("build");
    assert_eq!(
        built
            .labels
            .get(swtbench_backend::labels::SESSION)
            .map(String::as_str),
        Some(""),
        "{:?}",
        built.labels
    );
    scope.assert_no_leftover_containers(&direct).await;
}

/// With `remove_container_later`, the image is returned while the engine still removes the build's
/// container (its removal is held here), and `settle_background` returns only once that removal
/// has ended.
#[tokio::test(flavor = "multi_thread")]
async fn docker_a_commit_build_leaves_its_container_to_a_removal_that_settle_waits_for() {
    let Some((direct, _dir, proxy)) = engine_and_proxy("docker_commit_remove_later").await else {
        return;
    };
    let scope = Scope::new("commit-remove-later");
    let backend = through(&proxy).await;
    proxy.hold_removals();
    let mut request = commit_request(
        &scope,
        "later",
        format!("FROM {BASE_IMAGE}\nRUN echo later > /later.txt\n"),
    );
    request.remove_container_later = true;
    request.timeout = Some(Duration::from_secs(300));
    let built = tokio::time::timeout(
        Duration::from_secs(30),
        backend.image_build(request, &mut Vec::new()),
    )
    .await
    .expect("the build waited for its container's removal")
    .expect("build");
    assert!(!built.id.is_empty());
    let left = direct
        .containers_with_label(&scope.filter())
        .await
        .expect("list");
    assert_eq!(
        left.len(),
        1,
        "the build container's removal is held: {left:?}"
    );
    let settle = {
        let b = backend.clone();
        tokio::spawn(async move { b.settle_background().await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !settle.is_finished(),
        "settle_background returned while the removal was held"
    );
    proxy.resume();
    tokio::time::timeout(Duration::from_secs(60), settle)
        .await
        .expect("settle_background ends once the removal does")
        .expect("join");
    scope.assert_no_leftover_containers(&direct).await;
    assert!(direct
        .image_exists(&scope.tag("later"))
        .await
        .expect("inspect"));
}

/// A cache volume (`--compiler-cache`'s): mounted in each commit build's container, with its
/// variables and `PATH` directory in every step, shared by the builds that name it, and nothing
/// of it in the images (no file under the mount point, no variable); removed by its labels.
#[tokio::test]
async fn docker_commit_builds_share_a_cache_volume_that_no_image_keeps() {
    let Some(backend) = connect("docker_commit_cache_volume").await else {
        return;
    };
    ensure_base_image(&backend).await;
    let scope = Scope::new("commit-cache");
    let volume = format!(
        "swtbench-test-cache-{}",
        scope.tag("v").replace([':', '/'], "-")
    );
    let mut labels = scope.labels();
    labels.insert("swtbench.kind".into(), "compiler-cache".into());
    let cache = swtbench_backend::CacheVolume {
        name: volume.clone(),
        labels,
        target: "/var/cache/test-cache".into(),
        env: vec![("TEST_CACHE_DIR".into(), "/var/cache/test-cache".into())],
        path_prepend: vec!["/opt/wrap".into()],
    };
    let dockerfile = format!(
        "FROM {BASE_IMAGE}\n\
         RUN mkdir -p /opt/wrap /opt/made && printf '#!/bin/sh\\necho wrapped \"$@\" >> \"$TEST_CACHE_DIR/calls\"\\n' > /opt/wrap/tool && chmod +x /opt/wrap/tool\n\
         RUN tool build && cp \"$TEST_CACHE_DIR/calls\" /opt/made/calls-seen && echo \"$PATH\" > /opt/made/path-seen\n"
    );
    let build = |name: &str| {
        let mut r = commit_request(&scope, name, dockerfile.clone());
        r.cache_volume = Some(cache.clone());
        r
    };
    let cat = |image: &str, path: &str| {
        docker(&[
            "run",
            "--rm",
            "--network",
            "none",
            "--entrypoint",
            "/bin/sh",
            image,
            "-c",
            &format!("cat {path} 2>/dev/null; true"),
        ])
    };
    let mut log = Vec::new();
    let first = backend.image_build(build("first"), &mut log).await;
    let mut log2 = Vec::new();
    let second = backend.image_build(build("second"), &mut log2).await;
    let listed = backend
        .volumes_with_label(&scope.filter().and("swtbench.kind", "compiler-cache"))
        .await
        .expect("volumes listed");
    let removed = backend
        .volume_remove(&volume)
        .await
        .expect("volume removed");
    let gone = backend
        .volumes_with_label(&scope.filter())
        .await
        .expect("volumes listed");
    first.unwrap_or_else(|e| panic!("first build: {e}\n{}", String::from_utf8_lossy(&log)));
    second.unwrap_or_else(|e| panic!("second build: {e}\n{}", String::from_utf8_lossy(&log2)));
    assert_eq!(
        listed,
        vec![volume.clone()],
        "the volume carries its labels"
    );
    assert!(removed && gone.is_empty(), "removed by name: {gone:?}");
    // The second build saw what the first left in the volume.
    assert_eq!(
        cat(&scope.tag("first"), "/opt/made/calls-seen"),
        "wrapped build\n"
    );
    assert_eq!(
        cat(&scope.tag("second"), "/opt/made/calls-seen"),
        "wrapped build\nwrapped build\n"
    );
    assert!(cat(&scope.tag("second"), "/opt/made/path-seen").starts_with("/opt/wrap:"));
    // Nothing of the cache is in the image: not its files, not its variables or PATH.
    assert_eq!(cat(&scope.tag("second"), "/var/cache/test-cache/calls"), "");
    let env = config(&scope.tag("second"), "Env");
    assert!(
        !env.contains("TEST_CACHE_DIR") && !env.contains("/opt/wrap"),
        "{env}"
    );
    let mounts = docker(&[
        "image",
        "inspect",
        "-f",
        "{{json .Config.Volumes}}",
        &scope.tag("second"),
    ]);
    assert_eq!(mounts.trim(), "null", "no volume declared in the image");
}
