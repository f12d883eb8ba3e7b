//! Prebuilt instance images (`--instance-image`), the I/O half: `ensure_prebuilt` pulls a
//! missing image and runs the layout check ([`swtbench_plan::prebuilt::LAYOUT_SCRIPT`]) once per
//! image and base commit in a throwaway, labelled container that is always removed. It decides
//! nothing about runs or grades; [`swtbench_plan::prebuilt`] names the images and reads the
//! verdicts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use swtbench_backend::{ContainerBackend, ContainerSpec, ExecRequest};
use swtbench_core::Instance;
use tokio::sync::OnceCell;

use swtbench_plan::prebuilt::{
    layout_verdict, local_digest, parse_image_name, PrebuiltImage, PrebuiltSettings, LAYOUT_SCRIPT,
};

use crate::execute::ContainerRegistry;
use crate::lock::Locked;
use crate::outcome::PrebuiltError;

/// How long the layout check may take (creating the container, activating the environment).
pub const LAYOUT_CHECK_LIMIT: Duration = Duration::from_secs(120);

type Verdict = Arc<OnceCell<Result<(), PrebuiltError>>>;
type Pulled = Arc<OnceCell<Result<Option<PullDone>, PrebuiltError>>>;

/// A pull `ensure_prebuilt` made: how long it took and the bytes moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PullDone {
    pub duration: Duration,
    pub bytes: u64,
}

/// What `ensure_prebuilt` made available.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnsuredPrebuilt {
    /// The name the runs start containers from.
    pub tag: String,
    /// The local image id.
    pub id: String,
    /// This call's flight pulled it (`None`: it was there, or another caller pulled it).
    pub pulled: Option<PullDone>,
}

/// The pulls and layout checks of one evaluation: each image is pulled at most once, and
/// checked once per base commit; later callers get the first verdict.
#[derive(Debug, Default)]
pub struct PrebuiltFlights {
    pulls: Mutex<HashMap<String, Pulled>>,
    checks: Mutex<HashMap<(String, String), Verdict>>,
}

/// What [`ensure_prebuilt`] needs besides the image.
pub(crate) struct PrebuiltContext<'a, B> {
    pub backend: &'a Arc<B>,
    pub containers: &'a ContainerRegistry,
    pub settings: &'a PrebuiltSettings,
    pub run_id: &'a str,
    pub flights: &'a PrebuiltFlights,
}

/// Makes `image` available (pulled when the engine lacks it) and checks its layout for
/// `instance`.
pub(crate) async fn ensure_prebuilt<B: ContainerBackend>(
    ctx: &PrebuiltContext<'_, B>,
    image: &PrebuiltImage,
    instance: &Instance,
) -> Result<EnsuredPrebuilt, PrebuiltError> {
    let reference = image.reference.as_str();
    let engine = |e: swtbench_backend::BackendError| PrebuiltError::Engine {
        reference: reference.to_string(),
        message: e.to_string(),
    };
    let pull = ctx
        .flights
        .pulls
        .locked()
        .entry(reference.to_string())
        .or_default()
        .clone();
    let mut first = false;
    let pulled = pull
        .get_or_init(|| async {
            first = true;
            if ctx
                .backend
                .image_inspect(reference)
                .await
                .map_err(engine)?
                .is_some()
            {
                return Ok(None);
            }
            let name = parse_image_name(reference);
            let auth = ctx.settings.auth.get(&name.registry);
            let started = std::time::Instant::now();
            let bytes = std::sync::atomic::AtomicU64::new(0);
            let sink = |p: swtbench_backend::TransferProgress| {
                bytes.store(
                    p.total_bytes.max(p.bytes),
                    std::sync::atomic::Ordering::Relaxed,
                );
            };
            ctx.backend
                .image_pull(reference, auth, &sink)
                .await
                .map_err(|e| PrebuiltError::Pull {
                    reference: reference.to_string(),
                    message: e.to_string(),
                })?;
            Ok(Some(PullDone {
                duration: started.elapsed(),
                bytes: bytes.load(std::sync::atomic::Ordering::Relaxed),
            }))
        })
        .await
        .clone()?
        .filter(|_| first);
    let found = ctx
        .backend
        .image_inspect(reference)
        .await
        .map_err(engine)?
        .ok_or_else(|| PrebuiltError::Engine {
            reference: reference.to_string(),
            message: "the image is gone right after it was made available".into(),
        })?;
    let digest = local_digest(&parse_image_name(reference), &found.id, &found.repo_digests);
    if let Some(planned) = &image.digest {
        if *planned != digest {
            return Err(PrebuiltError::Changed {
                reference: reference.to_string(),
                planned: planned.clone(),
                found: digest,
            });
        }
    }
    let check = ctx
        .flights
        .checks
        .locked()
        .entry((reference.to_string(), instance.base_commit.clone()))
        .or_default()
        .clone();
    check
        .get_or_init(|| check_layout(ctx, reference, instance))
        .await
        .clone()?;
    Ok(EnsuredPrebuilt {
        tag: reference.to_string(),
        id: found.id,
        pulled,
    })
}

/// Runs [`LAYOUT_SCRIPT`] in a throwaway container of `reference` (labelled as this run's, removed
/// whatever happens).
async fn check_layout<B: ContainerBackend>(
    ctx: &PrebuiltContext<'_, B>,
    reference: &str,
    instance: &Instance,
) -> Result<(), PrebuiltError> {
    let engine = |e: swtbench_backend::BackendError| PrebuiltError::Engine {
        reference: reference.to_string(),
        message: format!("layout check: {e}"),
    };
    let mut spec = ContainerSpec::new(reference).with_lifetime(LAYOUT_CHECK_LIMIT);
    spec.user = Some("root".into());
    spec.labels = ctx
        .containers
        .labels(ctx.run_id, instance.instance_id.as_str(), "layout_check");
    let id = ctx
        .containers
        .create(ctx.backend, &spec)
        .await
        .map_err(engine)?;
    let result = async {
        ctx.backend.container_start(&id).await?;
        let mut req = ExecRequest::new(["/bin/bash", "-c", LAYOUT_SCRIPT]);
        req.user = Some("root".into());
        req.timeout = Some(LAYOUT_CHECK_LIMIT);
        req.output_limit = Some(64 * 1024);
        ctx.backend.exec(&id, &req).await
    }
    .await;
    let _ = ctx.backend.container_remove(&id).await;
    ctx.containers.remove(&id);
    let out = result.map_err(engine)?;
    layout_verdict(
        out.exit_code,
        &String::from_utf8_lossy(&out.output),
        &instance.base_commit,
    )
    .map_err(|problem| PrebuiltError::Layout {
        reference: reference.to_string(),
        problem,
    })
}
