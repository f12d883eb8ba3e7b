//! What an extraction depends on: the key under which `swtbench-extract`'s cache keeps a
//! result next to the instance's logs and reuses it while the raw output and the settings stay
//! the same.

use serde::{Deserialize, Serialize};
use swtbench_core::hash::sha256_hex;

use crate::{ExtractOptions, PatchType};

/// Bumped whenever extraction logic changes what it produces for the same input.
pub const EXTRACTOR_VERSION: u32 = 3;

/// What an extraction depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractionKey {
    pub extractor_version: u32,
    pub raw_sha256: String,
    pub patch_types: Vec<PatchType>,
    pub options: ExtractOptions,
}

impl ExtractionKey {
    pub fn new(model_output: &str, patch_types: &[PatchType], options: &ExtractOptions) -> Self {
        ExtractionKey {
            extractor_version: EXTRACTOR_VERSION,
            raw_sha256: sha256_hex(model_output.as_bytes()),
            patch_types: patch_types.to_vec(),
            options: *options,
        }
    }
}
