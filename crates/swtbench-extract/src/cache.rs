//! Keeping an extraction next to the instance's logs and reusing it.
//!
//! The original writes `raw_model_patch.txt` and `extracted_patch.diff` into
//! `run_instance_swt_logs/<run_id>/<model>/<instance>/` and reuses the diff whenever it exists,
//! even if the prediction changed since. Here a third file, `extraction.json`, records what
//! produced the diff (a hash of the raw output, the patch types, the options and this format's
//! version) and why each attempt failed; the diff is reused only when that key matches. A diff
//! without a key (for example one written by the original harness) is extracted again.
//!
//! Files are written atomically (temporary file, then rename), the key last, so an interrupted
//! write is never mistaken for a finished one. An extraction that failed for infrastructure
//! reasons ([`Extraction::is_cacheable`]) is written but not keyed, so the next run retries it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Attempt, ExtractOptions, Extraction, PatchType};

fn write_atomic(path: &Path, content: &[u8]) -> Result<(), CacheError> {
    swtbench_data::fsutil::write_atomic(path, content).map_err(|e| CacheError {
        path: e.path,
        source: e.source,
    })
}

pub const RAW_FILE: &str = "raw_model_patch.txt";
pub const PATCH_FILE: &str = "extracted_patch.diff";
pub const KEY_FILE: &str = "extraction.json";

pub use swtbench_patch::key::{ExtractionKey, EXTRACTOR_VERSION};

/// The content of `extraction.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractionRecord {
    pub key: ExtractionKey,
    pub patch_type_used: Option<PatchType>,
    pub attempts: Vec<Attempt>,
}

/// An extraction and whether it came from the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedExtraction {
    pub extraction: Extraction,
    pub reused: bool,
}

/// A file in the log directory could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct CacheError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> CacheError + '_ {
    move |source| CacheError {
        path: path.to_path_buf(),
        source,
    }
}

/// The cached extraction in `log_dir` for this key, if there is a complete one.
pub fn load(log_dir: &Path, key: &ExtractionKey) -> Option<Extraction> {
    let record: ExtractionRecord =
        serde_json::from_slice(&std::fs::read(log_dir.join(KEY_FILE)).ok()?).ok()?;
    if &record.key != key {
        return None;
    }
    let patch = std::fs::read_to_string(log_dir.join(PATCH_FILE)).ok()?;
    Some(Extraction {
        patch,
        patch_type_used: record.patch_type_used,
        attempts: record.attempts,
        files: Vec::new(),
    })
}

/// Writes the raw output, the diff and (when cacheable) the key file into `log_dir`.
pub fn store(
    log_dir: &Path,
    model_output: &str,
    key: &ExtractionKey,
    extraction: &Extraction,
) -> Result<(), CacheError> {
    std::fs::create_dir_all(log_dir).map_err(io_err(log_dir))?;
    let key_path = log_dir.join(KEY_FILE);
    // Drop a stale key first so that a crash between the writes cannot pair it with new files.
    match std::fs::remove_file(&key_path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(&key_path)(e)),
    }
    write_atomic(&log_dir.join(RAW_FILE), model_output.as_bytes())?;
    write_atomic(&log_dir.join(PATCH_FILE), extraction.patch.as_bytes())?;
    if extraction.is_cacheable() {
        let record = ExtractionRecord {
            key: key.clone(),
            patch_type_used: extraction.patch_type_used,
            attempts: extraction.attempts.clone(),
        };
        let mut json = serde_json::to_vec_pretty(&record).map_err(|e| CacheError {
            path: key_path.clone(),
            source: std::io::Error::other(e),
        })?;
        json.push(b'\n');
        write_atomic(&key_path, &json)?;
    }
    Ok(())
}

/// Reuses the extraction stored in `log_dir` when it was made from the same raw output, patch
/// types and options; otherwise runs `extract`, stores its result and returns it.
pub fn load_or_extract(
    log_dir: &Path,
    model_output: &str,
    patch_types: &[PatchType],
    options: &ExtractOptions,
    extract: impl FnOnce() -> Extraction,
) -> Result<CachedExtraction, CacheError> {
    let key = ExtractionKey::new(model_output, patch_types, options);
    if let Some(extraction) = load(log_dir, &key) {
        return Ok(CachedExtraction {
            extraction,
            reused: true,
        });
    }
    let extraction = extract();
    store(log_dir, model_output, &key, &extraction)?;
    Ok(CachedExtraction {
        extraction,
        reused: false,
    })
}
