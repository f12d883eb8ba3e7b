//! The registry cache of swtbench's images (`--registry REF`): resolving the reference and its
//! credentials into [`RegistrySettings`], and looking up which image keys the registry holds
//! (manifest HEADs, several at once) for the plan and `images check`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use swtbench_backend::RegistryAuth;
use swtbench_data::registry::{
    credentials_for, docker_config_path, parse_registry_ref, Credentials, Lookup, RegistryClient,
    RegistryError, RetryNote,
};
use swtbench_plan::settings::RegistrySettings;

use crate::env_vars;
use crate::{Error, Result};

/// Look-ups at the same time.
pub const LOOKUP_WORKERS: usize = 8;

/// Where Docker's config file is (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`).
pub fn docker_config() -> Option<PathBuf> {
    let dc = env_vars::var_os(env_vars::DOCKER_CONFIG).map(PathBuf::from);
    let home = env_vars::var_os(env_vars::HOME).map(PathBuf::from);
    docker_config_path(dc.as_deref(), home.as_deref())
}

fn registry_error(e: RegistryError) -> Error {
    let hint = match &e {
        RegistryError::Reference { .. } => "--registry names HOST[:PORT][/NAMESPACE]",
        RegistryError::NoCredentials { .. } | RegistryError::Rejected { .. } => {
            "log in with `docker login HOST` (swtbench reads ~/.docker/config.json or $DOCKER_CONFIG)"
        }
        RegistryError::Unreachable { .. } => "is the registry running, and is --registry right?",
        _ => "check the registry and its credentials",
    };
    let input = matches!(e, RegistryError::Reference { .. });
    let err = if input {
        Error::input(e)
    } else {
        Error::environment(e)
    };
    err.with_hint(hint)
}

/// `--registry REF [--push] [--pull-workers N]` resolved: the reference checked, the
/// credentials read from Docker's config (asking its credential helper if it names one).
pub fn registry_settings(
    reference: &str,
    push: bool,
    pull_workers: usize,
) -> Result<RegistrySettings> {
    let r = parse_registry_ref(reference).map_err(registry_error)?;
    let creds = credentials_for(docker_config().as_deref(), &r.host).map_err(registry_error)?;
    Ok(RegistrySettings {
        prefix: reference.trim_end_matches('/').to_string(),
        push,
        pull_workers: pull_workers.max(1),
        auth: creds.map(|c| RegistryAuth {
            username: c.username,
            password: c.secret,
            server: r.host.clone(),
        }),
    })
}

/// A look-up client for the registry of `settings`.
pub fn client(settings: &RegistrySettings) -> Result<RegistryClient> {
    let r = parse_registry_ref(&settings.prefix).map_err(registry_error)?;
    let creds = settings.auth.as_ref().map(|a| Credentials {
        username: a.username.clone(),
        secret: a.password.clone(),
    });
    Ok(RegistryClient::new(r, creds))
}

/// Which of `tags` the registry has, [`LOOKUP_WORKERS`] look-ups at a time. `on_retry` hears
/// every retried answer (429, 5xx, a dropped connection). The first failure (credentials,
/// an unreachable registry) is the error.
pub fn lookup(
    client: &RegistryClient,
    tags: &[String],
    on_retry: &(dyn Fn(&str, &RetryNote) + Sync),
) -> Result<BTreeMap<String, Lookup>> {
    let queue = Mutex::new(tags.iter());
    let results = Mutex::new(BTreeMap::new());
    let first_error: Mutex<Option<RegistryError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..LOOKUP_WORKERS.min(tags.len()) {
            scope.spawn(|| loop {
                if first_error.lock().is_ok_and(|e| e.is_some()) {
                    return;
                }
                let next = queue.lock().ok().and_then(|mut q| q.next().cloned());
                let Some(tag) = next else { return };
                match client.manifest_exists(&tag, &|note| on_retry(&tag, note)) {
                    Ok(l) => {
                        if let Ok(mut r) = results.lock() {
                            r.insert(tag, l);
                        }
                    }
                    Err(e) => {
                        if let Ok(mut f) = first_error.lock() {
                            f.get_or_insert(e);
                        }
                        return;
                    }
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().ok().flatten() {
        return Err(registry_error(e));
    }
    Ok(results.into_inner().unwrap_or_default())
}

/// The local record of pulls: `pulled-images.jsonl` beside the download cache (one JSON object
/// per line: `tag`, `id`, `reference`), so `images list` can say where an image came from.
pub fn pulls_path(env: &crate::tables::CacheEnv) -> PathBuf {
    let raw = crate::tables::github_raw_cache_dir(env);
    raw.parent()
        .map_or_else(|| PathBuf::from("."), std::path::Path::to_path_buf)
        .join("pulled-images.jsonl")
}

/// [`pulls_path`] under the cache directory the environment names.
pub fn pulls_path_from_env() -> PathBuf {
    pulls_path(&crate::env_vars::cache_env())
}

/// Image id → the reference it was last pulled from (an absent or unreadable record: none).
pub fn read_pulls(path: &std::path::Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if let (Some(id), Some(r)) = (v["id"].as_str(), v["reference"].as_str()) {
            out.insert(id.to_string(), r.to_string());
        }
    }
    out
}

/// The event sinks of a command besides its progress display: with `pulls`, the record of pulled
/// images at that path (for `images list`); with `events`, the JSON Lines file (docs/events.md).
pub fn file_sinks(
    events: Option<&Path>,
    pulls: Option<PathBuf>,
) -> Result<Vec<Box<dyn swtbench_runner::events::EventSink>>> {
    let mut sinks: Vec<Box<dyn swtbench_runner::events::EventSink>> = Vec::new();
    if let Some(path) = pulls {
        sinks.push(Box::new(PullRecorder { path }));
    }
    if let Some(path) = events {
        let w = swtbench_runner::events::JsonlWriter::create(path).map_err(|e| {
            Error::input(anyhow::anyhow!(
                "cannot create the events file {}: {e}",
                path.display()
            ))
        })?;
        sinks.push(Box::new(w));
    }
    Ok(sinks)
}

/// The warning of a registry look-up that is tried again.
pub fn retry_message(tag: &str, note: &swtbench_data::registry::RetryNote) -> String {
    format!(
        "looking up {tag}: {} (attempt {}); trying again in {:.1} s",
        if note.status == 0 {
            "no answer".to_string()
        } else {
            format!("HTTP {}", note.status)
        },
        note.attempt,
        note.pause.as_secs_f64()
    )
}

/// An event sink that appends every pulled image to the record at `path` (one short line per
/// pull, appended: several processes may write it).
#[derive(Debug)]
pub struct PullRecorder {
    pub path: PathBuf,
}

impl swtbench_runner::events::EventSink for PullRecorder {
    fn event(&self, event: &swtbench_runner::Event) {
        use std::io::Write;
        let swtbench_runner::Event::ImageReady {
            tag,
            outcome: swtbench_runner::events::ImageOutcome::Pulled { reference, id, .. },
            ..
        } = event
        else {
            return;
        };
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let line = serde_json::json!({"tag": tag, "id": id, "reference": reference}).to_string();
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
        {
            // Best effort: the record only feeds `images list`.
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
}

/// `--instance-image TEMPLATE|dataset` checked (credentials are read later, per registry, by
/// [`prebuilt_inventory`]).
pub fn prebuilt_settings(text: &str) -> Result<swtbench_plan::prebuilt::PrebuiltSettings> {
    let source = swtbench_plan::prebuilt::parse_source(text).map_err(|e| {
        let hint = e.hint();
        Error::input(e).with_hint(hint)
    })?;
    Ok(swtbench_plan::prebuilt::PrebuiltSettings {
        source,
        auth: BTreeMap::new(),
    })
}

/// What is known of the prebuilt images of `instances` (`--instance-image`): a local image's
/// digest (asked of the engine through `inspect`), else whether its registry has it (manifest
/// look-ups, [`LOOKUP_WORKERS`] at a time per registry). A registry that cannot be asked makes
/// its images
/// [`PrebuiltLookup::Unreachable`](swtbench_plan::prebuilt::PrebuiltLookup::Unreachable) (those
/// instances are skipped with the reason), not an error of the run. The pulls' credentials are put
/// into `settings` by registry host.
pub fn prebuilt_inventory(
    settings: &mut swtbench_plan::prebuilt::PrebuiltSettings,
    instances: &[&swtbench_core::Instance],
    inspect: &dyn Fn(&str) -> Result<Option<swtbench_backend::ImageInfo>>,
) -> Result<swtbench_plan::prebuilt::PrebuiltInventory> {
    use swtbench_plan::prebuilt::{local_digest, parse_image_name, reference_for, PrebuiltLookup};
    let mut out = swtbench_plan::prebuilt::PrebuiltInventory::new();
    // Missing locally, by registry API host: (reference, `repository:tag`).
    let mut remote: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let config = docker_config();
    for instance in instances {
        let Some(reference) = reference_for(&settings.source, instance) else {
            continue;
        };
        if out.contains_key(&reference) {
            continue;
        }
        let name = parse_image_name(&reference);
        if !settings.auth.contains_key(&name.registry) {
            let creds = credentials_for(config.as_deref(), name.credentials_host())
                .map_err(registry_error)?;
            if let Some(c) = creds {
                settings.auth.insert(
                    name.registry.clone(),
                    RegistryAuth {
                        username: c.username,
                        password: c.secret,
                        server: name.registry.clone(),
                    },
                );
            }
        }
        match inspect(&reference)? {
            Some(img) => {
                let digest = local_digest(&name, &img.id, &img.repo_digests);
                out.insert(reference, PrebuiltLookup::Local { digest });
            }
            None => {
                out.insert(reference.clone(), PrebuiltLookup::Unknown);
                remote
                    .entry(name.api_host().to_string())
                    .or_default()
                    .push((reference, format!("{}:{}", name.repository, name.tag)));
            }
        }
    }
    for (host, refs) in remote {
        let registry = swtbench_data::registry::RegistryRef {
            host: host.clone(),
            namespace: String::new(),
        };
        let creds = refs
            .first()
            .and_then(|(r, _)| settings.auth.get(&parse_image_name(r).registry))
            .map(|a| Credentials {
                username: a.username.clone(),
                secret: a.password.clone(),
            });
        let client = RegistryClient::new(registry, creds);
        let keys: Vec<String> = refs.iter().map(|(_, k)| k.clone()).collect();
        let found = lookup(&client, &keys, &|_, _| {});
        for (reference, key) in refs {
            let lookup = match &found {
                Ok(found) => match found.get(&key) {
                    Some(l) if l.present => PrebuiltLookup::Remote {
                        digest: l.digest.clone(),
                    },
                    _ => PrebuiltLookup::Missing,
                },
                Err(e) => PrebuiltLookup::Unreachable {
                    message: e.to_string(),
                },
            };
            out.insert(reference, lookup);
        }
    }
    Ok(out)
}

/// What `run` and `images build` say of a missing Python image they pulled.
pub fn python_image_pulled(tag: &str) -> String {
    format!("pulled the Python image {tag}")
}

/// What `run` and `images build` say of a missing Python image they could not pull, and what to do.
pub fn python_image_not_pulled(tag: &str, why: &dyn std::fmt::Display) -> String {
    let version = tag
        .strip_prefix("python:")
        .and_then(|rest| rest.split('-').next())
        .unwrap_or("VERSION");
    format!(
        "the Python image {tag} is not local and could not be pulled ({why}); make it with `swtbench images python {version}` or name another with --python-image"
    )
}

/// Pulls `reference` from its registry with the credentials Docker's config file has for it (none
/// for a public image), for a base image that is missing locally (the Python images of
/// `--env-provider uv`). Returns the image as the engine has it after the pull.
pub async fn pull_base_image<B: swtbench_backend::ContainerBackend>(
    backend: &B,
    reference: &str,
) -> Result<swtbench_backend::ImageInfo> {
    let name = swtbench_plan::prebuilt::parse_image_name(reference);
    let config = docker_config();
    let auth = credentials_for(config.as_deref(), name.credentials_host())
        .map_err(registry_error)?
        .map(|c| RegistryAuth {
            username: c.username,
            password: c.secret,
            server: name.registry.clone(),
        });
    backend
        .image_pull(reference, auth.as_ref(), &|_| {})
        .await
        .map_err(Error::environment)?;
    backend
        .image_inspect(reference)
        .await
        .map_err(Error::environment)?
        .ok_or_else(|| {
            Error::environment(anyhow::anyhow!(
                "the engine pulled {reference} but does not list it"
            ))
        })
}
