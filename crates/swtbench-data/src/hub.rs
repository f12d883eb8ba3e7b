//! Hugging Face hub datasets over plain HTTP (no Python, no `datasets` library).
//!
//! A split is found in two ways, in this order:
//! 1. the hub's Parquet conversion, `GET {endpoint}/api/datasets/{name}/parquet`, which maps
//!    config → split → Parquet URLs (every public dataset has one);
//! 2. the dataset repository's own files, `GET {endpoint}/api/datasets/{name}` (`siblings`), keeping
//!    `.parquet`/`.jsonl`/`.json` files whose name or directory is the split, fetched from
//!    `{endpoint}/datasets/{name}/resolve/main/{file}`.
//!
//! Listings and files go through the [`HttpClient`] cache (under `$HF_HOME/swtbench/hub` unless told
//! otherwise), so a split downloaded once loads offline later. Configuration comes from
//! `HF_ENDPOINT`, `HF_HOME` and `HF_TOKEN` (or the token file `huggingface-cli login` writes).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::http::{CacheMode, Fetched, HttpClient, HttpConfig, HttpError, Origin};
use crate::rows::{self, FileFormat, Row, RowsError};

/// The public hub.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// How long a cached listing or file is used without asking the hub again. After that it is
/// revalidated (cheap when unchanged), and still used if the hub cannot be reached.
pub const FRESH_FOR: Duration = Duration::from_secs(24 * 60 * 60);

/// Where the hub is and who we are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubConfig {
    /// Without trailing slash.
    pub endpoint: String,
    pub token: Option<String>,
    /// Download cache for listings and data files.
    pub cache_dir: PathBuf,
}

impl HubConfig {
    /// From environment variables, looked up through `var` (so tests need not touch the process
    /// environment): `HF_ENDPOINT` (default the public hub), `HF_TOKEN` (else the token file
    /// `$HF_HOME/token`), `HF_HOME` (default `~/.cache/huggingface`); the cache is
    /// `$HF_HOME/swtbench/hub`.
    pub fn from_env(var: &dyn Fn(&str) -> Option<String>) -> HubConfig {
        let non_empty = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        let endpoint = non_empty("HF_ENDPOINT")
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string())
            .trim_end_matches('/')
            .to_string();
        let hf_home = non_empty("HF_HOME").map(PathBuf::from).unwrap_or_else(|| {
            let base = non_empty("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| non_empty("HOME").map(|h| Path::new(&h).join(".cache")))
                .unwrap_or_else(|| PathBuf::from(".cache"));
            base.join("huggingface")
        });
        let token = non_empty("HF_TOKEN").or_else(|| {
            std::fs::read_to_string(hf_home.join("token"))
                .ok()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
        });
        HubConfig {
            endpoint,
            token,
            cache_dir: hf_home.join("swtbench").join("hub"),
        }
    }
}

/// Why a split could not be loaded from the hub.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("dataset {name:?} was not found on {endpoint}")]
    DatasetNotFound { name: String, endpoint: String },
    #[error("dataset {name:?} has no split {split:?} (it has: {available})")]
    SplitNotFound {
        name: String,
        split: String,
        available: String,
    },
    #[error(
        "dataset {name:?} has several configurations ({configs}); swtbench reads the \
         \"default\" one or a dataset with a single configuration: download the configuration's \
         files and pass their directory with --dataset"
    )]
    AmbiguousConfig { name: String, configs: String },
    #[error("dataset {name:?}: access denied by {endpoint} (HTTP {status}); set HF_TOKEN to a token with access")]
    AccessDenied {
        name: String,
        endpoint: String,
        status: u16,
    },
    #[error("dataset {name:?}: unexpected answer from {url}: {detail}")]
    BadListing {
        name: String,
        url: String,
        detail: String,
    },
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error(transparent)]
    Rows(#[from] RowsError),
}

impl HubError {
    /// True when the hub (or network) was unavailable, as opposed to answering "no".
    pub fn is_unavailable(&self) -> bool {
        matches!(self, HubError::Http(e) if e.is_unavailable())
    }
}

/// What a hub load returns besides rows.
#[derive(Debug, Clone, PartialEq)]
pub struct HubLoad {
    pub rows: Vec<Row>,
    /// The data file URLs read, in order.
    pub files: Vec<String>,
    /// True if any file or listing came from the cache because the hub was unreachable.
    pub stale: bool,
    /// True if everything came from the cache (no transfer).
    pub from_cache: bool,
}

/// Progress of one file download: URL, bytes done, total if known.
pub type HubProgress<'a> = &'a mut dyn FnMut(&str, u64, Option<u64>);

/// A hub client.
#[derive(Debug, Clone)]
pub struct Hub {
    config: HubConfig,
    http: HttpClient,
}

impl Hub {
    /// `base` supplies timeouts, retries, CA bundle and proxy; token and cache come from `config`.
    pub fn new(config: HubConfig, base: HttpConfig) -> Result<Hub, HttpError> {
        let http = HttpClient::new(HttpConfig {
            bearer_token: config.token.clone(),
            cache_dir: Some(config.cache_dir.clone()),
            ..base
        })?;
        Ok(Hub { config, http })
    }

    pub fn config(&self) -> &HubConfig {
        &self.config
    }

    /// Every row of `name`'s `split`. `offline` reads only the download cache.
    pub fn load_split(
        &self,
        name: &str,
        split: &str,
        offline: bool,
        progress: Option<HubProgress<'_>>,
    ) -> Result<HubLoad, HubError> {
        let mode = if offline {
            CacheMode::Offline
        } else {
            CacheMode::Fresh { max_age: FRESH_FOR }
        };
        let mut origins = Vec::new();
        let files = self.split_files(name, split, mode, &mut origins)?;
        let mut no_progress = |_: &str, _: u64, _: Option<u64>| {};
        let progress: &mut dyn FnMut(&str, u64, Option<u64>) = match progress {
            Some(p) => p,
            None => &mut no_progress,
        };
        let mut rows = Vec::new();
        for (url, format) in &files {
            let mut file_progress = |done: u64, total: Option<u64>| progress(url, done, total);
            let fetched = self
                .http
                .download(url, mode, Some(&mut file_progress))
                .map_err(|e| self.access_error(name, e))?;
            let download = match fetched {
                Fetched::Found(d) => d,
                Fetched::NotFound => {
                    return Err(HubError::BadListing {
                        name: name.to_string(),
                        url: url.clone(),
                        detail: "a listed data file does not exist (HTTP 404)".to_string(),
                    })
                }
            };
            origins.push(download.origin);
            let label = format!("{name} ({split}) {url}");
            let (mut file_rows, _notes) =
                rows::read_file_as(&download.path, &label, *format, split).inspect_err(|_| {
                    // An error page or a damaged transfer must not be served from the cache again.
                    self.http.forget(url);
                })?;
            rows.append(&mut file_rows);
        }
        Ok(HubLoad {
            rows,
            files: files.into_iter().map(|(u, _)| u).collect(),
            stale: origins.contains(&Origin::StaleCache),
            from_cache: !origins.contains(&Origin::Network),
        })
    }

    /// 401/403 (gated or private dataset, listing or data file) become [`HubError::AccessDenied`].
    fn access_error(&self, name: &str, e: HttpError) -> HubError {
        match e {
            HttpError::Status { status, .. } if status == 401 || status == 403 => {
                HubError::AccessDenied {
                    name: name.to_string(),
                    endpoint: self.config.endpoint.clone(),
                    status,
                }
            }
            other => HubError::Http(other),
        }
    }

    fn api_url(&self, name: &str, suffix: &str) -> String {
        format!("{}/api/datasets/{name}{suffix}", self.config.endpoint)
    }

    fn get_json(
        &self,
        name: &str,
        url: &str,
        mode: CacheMode,
        origins: &mut Vec<Origin>,
    ) -> Result<Option<Value>, HubError> {
        let fetched = self
            .http
            .download_bytes(url, mode)
            .map_err(|e| self.access_error(name, e))?;
        match fetched {
            Fetched::NotFound => Ok(None),
            Fetched::Found((bytes, origin)) => {
                origins.push(origin);
                serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                    self.http.forget(url);
                    HubError::BadListing {
                        name: name.to_string(),
                        url: url.to_string(),
                        detail: format!("not JSON: {e}"),
                    }
                })
            }
        }
    }

    /// The data files of a split with their formats, in order.
    fn split_files(
        &self,
        name: &str,
        split: &str,
        mode: CacheMode,
        origins: &mut Vec<Origin>,
    ) -> Result<Vec<(String, FileFormat)>, HubError> {
        let url = self.api_url(name, "/parquet");
        if let Some(listing) = self.get_json(name, &url, mode, origins)? {
            return parquet_listing_files(name, split, &url, &listing);
        }
        let url = self.api_url(name, "");
        let Some(info) = self.get_json(name, &url, mode, origins)? else {
            return Err(HubError::DatasetNotFound {
                name: name.to_string(),
                endpoint: self.config.endpoint.clone(),
            });
        };
        let siblings: Vec<&str> = info
            .get("siblings")
            .and_then(Value::as_array)
            .map(|s| {
                s.iter()
                    .filter_map(|f| f.get("rfilename").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        let mut files: Vec<(&str, FileFormat)> = siblings
            .iter()
            .filter_map(|f| {
                let format = FileFormat::from_path(Path::new(f))?;
                file_is_split(f, split).then_some((*f, format))
            })
            .collect();
        if files.is_empty() {
            let mut available: Vec<String> = siblings
                .iter()
                .filter(|f| FileFormat::from_path(Path::new(f)).is_some())
                .map(|f| f.to_string())
                .collect();
            available.sort();
            return Err(HubError::SplitNotFound {
                name: name.to_string(),
                split: split.to_string(),
                available: if available.is_empty() {
                    "no data files".to_string()
                } else {
                    format!("files {}", available.join(", "))
                },
            });
        }
        // A split stored in several formats is read once, from the best one.
        if let Some(best) = files.iter().map(|(_, f)| *f).min() {
            files.retain(|(_, f)| *f == best);
        }
        files.sort_by(|a, b| a.0.cmp(b.0));
        Ok(files
            .into_iter()
            .map(|(f, format)| {
                (
                    format!("{}/datasets/{name}/resolve/main/{f}", self.config.endpoint),
                    format,
                )
            })
            .collect())
    }
}

/// Picks the split's URLs out of `{config: {split: [url, …]}}`.
fn parquet_listing_files(
    name: &str,
    split: &str,
    url: &str,
    listing: &Value,
) -> Result<Vec<(String, FileFormat)>, HubError> {
    let bad = |detail: &str| HubError::BadListing {
        name: name.to_string(),
        url: url.to_string(),
        detail: detail.to_string(),
    };
    let configs = listing
        .as_object()
        .ok_or_else(|| bad("expected an object of configurations"))?;
    let config = match configs.get("default") {
        Some(c) => c,
        None if configs.len() == 1 => configs.values().next().ok_or_else(|| bad("empty"))?,
        None => {
            return Err(HubError::AmbiguousConfig {
                name: name.to_string(),
                configs: configs.keys().cloned().collect::<Vec<_>>().join(", "),
            })
        }
    };
    let splits = config
        .as_object()
        .ok_or_else(|| bad("expected an object of splits"))?;
    // Splits over 5 GB are converted only in part, under `partial-<split>`.
    let Some(urls) = splits
        .get(split)
        .or_else(|| splits.get(&format!("partial-{split}")))
    else {
        return Err(HubError::SplitNotFound {
            name: name.to_string(),
            split: split.to_string(),
            available: splits.keys().cloned().collect::<Vec<_>>().join(", "),
        });
    };
    let urls = urls
        .as_array()
        .ok_or_else(|| bad("expected a list of file URLs"))?;
    urls.iter()
        .map(|u| {
            u.as_str()
                .map(|s| (s.to_string(), FileFormat::Parquet))
                .ok_or_else(|| bad("a file URL is not a string"))
        })
        .collect()
}

/// Whether a repository file holds rows of `split`: `data/test-00000-of-00001.parquet`,
/// `test.jsonl`, `test/0000.parquet`, `data/test/x.parquet`, `SWE-bench_test.jsonl`, …
pub(crate) fn file_is_split(file: &str, split: &str) -> bool {
    let mut parts: Vec<&str> = file.split('/').collect();
    let Some(base) = parts.pop() else {
        return false;
    };
    let stem = base.split('.').next().unwrap_or(base);
    if parts.contains(&split) {
        return true;
    }
    stem == split
        || stem.starts_with(&format!("{split}-"))
        || stem.ends_with(&format!("_{split}"))
        || stem.ends_with(&format!("-{split}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_file_names() {
        for f in [
            "data/test-00000-of-00001.parquet",
            "test.jsonl",
            "test/0000.parquet",
            "data/test/x.parquet",
            "SWE-bench_test.jsonl",
        ] {
            assert!(file_is_split(f, "test"), "{f}");
        }
        for f in [
            "data/dev-00000-of-00001.parquet",
            "testing.jsonl",
            "latest.parquet",
            "README.md",
        ] {
            assert!(!file_is_split(f, "test"), "{f}");
        }
    }

    #[test]
    fn env_configuration() {
        let env = |k: &str| match k {
            "HF_ENDPOINT" => Some("http://mirror.local:8080/".to_string()),
            "HF_HOME" => Some("/data/hf".to_string()),
            "HF_TOKEN" => Some("hf_x".to_string()),
            _ => None,
        };
        let c = HubConfig::from_env(&env);
        assert_eq!(c.endpoint, "http://mirror.local:8080");
        assert_eq!(c.token.as_deref(), Some("hf_x"));
        assert_eq!(c.cache_dir, PathBuf::from("/data/hf/swtbench/hub"));
        let c = HubConfig::from_env(&|k| (k == "HOME").then(|| "/home/u".to_string()));
        assert_eq!(c.endpoint, DEFAULT_ENDPOINT);
        assert_eq!(c.token, None);
        assert_eq!(
            c.cache_dir,
            PathBuf::from("/home/u/.cache/huggingface/swtbench/hub")
        );
    }

    #[test]
    fn parquet_listing_selection() {
        let l: Value = serde_json::json!({"default": {"test": ["u1", "u2"], "dev": ["u3"]}});
        let files = parquet_listing_files("d", "test", "x", &l).unwrap();
        assert_eq!(files.len(), 2);
        let e = parquet_listing_files("d", "train", "x", &l).unwrap_err();
        assert!(
            e.to_string().contains("test") && e.to_string().contains("dev"),
            "{e}"
        );
        let l: Value = serde_json::json!({"cfg": {"partial-train": ["u"]}});
        assert_eq!(
            parquet_listing_files("d", "train", "x", &l).unwrap().len(),
            1
        );
        let l: Value = serde_json::json!({"a": {"test": []}, "b": {"test": []}});
        assert!(matches!(
            parquet_listing_files("d", "test", "x", &l),
            Err(HubError::AmbiguousConfig { .. })
        ));
    }
}
