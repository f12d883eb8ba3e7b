//! Helpers for the tests that drive the real engine: connecting (or skipping when there is no engine,
//! unless the engine layer is required), making sure the fixture base image exists, and a per-test label scope whose drop guard
//! removes every container and image the test created, even when the test fails.

#![allow(dead_code, clippy::print_stderr, clippy::unwrap_used)]

pub mod socket_proxy;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use swtbench_backend::{
    labels, ContainerBackend, ContainerSpec, DockerBackend, DockerOptions, LabelFilter,
};

/// The local base image made by `scripts/base-image`.
pub const BASE_IMAGE: &str = "swtbench-fixture-base:bookworm";
/// The label every test object carries; its value names the test.
pub const TEST_LABEL: &str = "swtbench.test";

pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// The switch that makes the engine layer required: scripts/test sets it when it prepared the
/// engine (or runs in CI).
pub const REQUIRE_ENGINE: &str = "SWTBENCH_REQUIRE_ENGINE";

/// Whether the engine layer must run here.
pub fn engine_required() -> bool {
    std::env::var(REQUIRE_ENGINE).is_ok_and(|v| v == "1")
}

/// Skips the calling test with a `SKIPPED: <why>` line (scripts/test counts them; the test returns
/// next), or fails it when the engine layer is required.
pub fn skip(why: &str) {
    assert!(
        !engine_required(),
        "{why} ({REQUIRE_ENGINE}=1: the engine layer is required here)"
    );
    eprintln!("SKIPPED: {why}");
}

/// The engine options of the tests: the defaults, with the engine `DOCKER_HOST` names.
pub fn engine_options() -> DockerOptions {
    DockerOptions {
        host: std::env::var("DOCKER_HOST").ok(),
        ..DockerOptions::default()
    }
}

/// Connects to the engine. A missing engine skips the test (returns `None` after saying so), or
/// fails it when the engine layer is required.
pub async fn connect(test: &str) -> Option<DockerBackend> {
    match DockerBackend::connect(engine_options()).await {
        Ok(b) => Some(b),
        Err(e) => {
            skip(&format!("{test}: no container engine ({e})"));
            None
        }
    }
}

/// For the tests that put a socket proxy between a backend and the engine: the engine itself (with
/// the fixture base image), a temporary directory, and the proxy listening in it. A missing engine
/// or engine socket skips the test (`None`), or fails it when the engine layer is required.
pub async fn engine_and_proxy(
    test: &str,
) -> Option<(DockerBackend, tempfile::TempDir, socket_proxy::Proxy)> {
    let direct = connect(test).await?;
    if !std::path::Path::new(socket_proxy::ENGINE_SOCKET).exists() {
        skip(&format!(
            "{test}: the proxy needs the engine at {}",
            socket_proxy::ENGINE_SOCKET
        ));
        return None;
    }
    ensure_base_image(&direct).await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = socket_proxy::Proxy::start(dir.path().join("engine.sock"));
    Some((direct, dir, proxy))
}

/// A backend that talks to the engine through `proxy`, with the default deadlines.
pub async fn through(proxy: &socket_proxy::Proxy) -> DockerBackend {
    DockerBackend::connect(DockerOptions {
        host: Some(proxy.host()),
        ..DockerOptions::default()
    })
    .await
    .expect("connect through the proxy")
}

/// Builds the fixture base image with `scripts/base-image` unless it is there already.
pub async fn ensure_base_image(backend: &DockerBackend) {
    if backend
        .image_exists(BASE_IMAGE)
        .await
        .expect("inspect base image")
    {
        return;
    }
    let script = workspace_root().join("scripts/base-image");
    let status = tokio::task::spawn_blocking(move || Command::new("bash").arg(script).status())
        .await
        .expect("join")
        .expect("run scripts/base-image");
    assert!(status.success(), "scripts/base-image failed: {status}");
    assert!(backend
        .image_exists(BASE_IMAGE)
        .await
        .expect("inspect base image"));
}

/// One test's label scope. Dropping it removes every container and image carrying its label.
#[derive(Debug)]
pub struct Scope {
    pub value: String,
}

impl Scope {
    pub fn new(test: &str) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        Scope {
            value: format!(
                "{test}-{}-{}-{nanos}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ),
        }
    }

    pub fn filter(&self) -> LabelFilter {
        LabelFilter::new(TEST_LABEL, &self.value)
    }

    /// Labels for an object of this test: the scope label plus the managed label.
    pub fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (TEST_LABEL.to_string(), self.value.clone()),
            (labels::MANAGED.to_string(), "true".to_string()),
        ])
    }

    /// A container spec on `image` carrying this scope's labels and run labels.
    pub fn spec(&self, image: &str, run: &str) -> ContainerSpec {
        let mut spec = ContainerSpec::new(image);
        spec.labels = labels::run_labels(&self.value, "test__instance-1", run);
        spec.labels.extend(self.labels());
        spec
    }

    /// An image tag unique to this scope.
    pub fn tag(&self, name: &str) -> String {
        format!("swtbench-test-{name}:{}", self.value.to_ascii_lowercase())
    }

    /// Asserts that nothing with this scope's label is left, after the test removed what it made.
    pub async fn assert_no_leftover_containers(&self, backend: &DockerBackend) {
        let left = backend
            .containers_with_label(&self.filter())
            .await
            .expect("list");
        assert!(left.is_empty(), "leftover containers: {left:?}");
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        // Cannot block on the test's runtime from inside it: clean up from a fresh thread with its
        // own runtime.
        let filter = self.filter();
        let handle = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let Ok(backend) = DockerBackend::connect(engine_options()).await else {
                    return;
                };
                for c in backend
                    .containers_with_label(&filter)
                    .await
                    .unwrap_or_default()
                {
                    let _ = backend.container_remove(&c.id).await;
                }
                for i in backend.images_with_label(&filter).await.unwrap_or_default() {
                    let _ = backend.image_remove(&i.id, true).await;
                }
            });
        });
        let _ = handle.join();
    }
}
