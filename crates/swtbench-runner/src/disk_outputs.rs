//! What already exists on disk, for the planner ([`OutputLookup`]): run directories' keyed
//! outputs, cached extractions, repository mirrors, recorded durations.

use std::path::Path;

use swtbench_core::layout::SharedVariant;
use swtbench_extract::cache::ExtractionKey;
use swtbench_plan::keys::KeyLimits;
use swtbench_plan::plan::{ExistingOutput, OutputLookup};
use swtbench_plan::schedule::Recorded;

use crate::keys::{read_key_file, scan_output};

/// [`OutputLookup`] over the file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiskOutputs;

impl OutputLookup for DiskOutputs {
    fn existing(&self, run_dir: &Path) -> ExistingOutput {
        let output = run_dir.join(swtbench_core::layout::TEST_OUTPUT_FILE);
        if !output.is_file() {
            return ExistingOutput::Missing;
        }
        match read_key_file(run_dir) {
            // Keyed only when the output is the one written with the key.
            // Hashed as it is read, not held: an output can be hundreds of megabytes.
            Some(r) => match scan_output(run_dir, Some(&r.key), || (), |_, _| {}) {
                Ok(_) if r.result.limit.is_some() => ExistingOutput::LimitHit(r.key),
                Ok(_) => ExistingOutput::Keyed(r.key),
                Err(_) => ExistingOutput::Inconsistent,
            },
            None => ExistingOutput::Unkeyed,
        }
    }

    fn existing_for(&self, run_dir: &Path, limits: &KeyLimits) -> ExistingOutput {
        let found = self.existing(run_dir);
        if matches!(
            found,
            ExistingOutput::Keyed(_) | ExistingOutput::LimitHit(_)
        ) {
            let fits = read_key_file(run_dir)
                .is_some_and(|r| r.limits.reusable_under(limits, r.result.limit.is_some()));
            if !fits {
                return ExistingOutput::OtherLimits;
            }
        }
        found
    }

    fn cached_extraction(&self, report_dir: &Path, key: &ExtractionKey) -> Option<String> {
        swtbench_extract::cache::load(report_dir, key).map(|e| e.patch)
    }

    fn mirror_exists(&self, git_dir: &Path) -> bool {
        git_dir.is_dir()
    }

    fn eval_variant(&self, run_dir: &Path) -> Option<SharedVariant> {
        std::fs::read(run_dir.join(swtbench_core::layout::EVAL_SCRIPT_FILE))
            .ok()
            .map(|s| SharedVariant::of_eval_script(&String::from_utf8_lossy(&s)))
    }

    fn recorded(&self, run_dir: &Path) -> Option<Recorded> {
        read_key_file(run_dir).map(|r| Recorded {
            duration_ms: r.result.duration_ms,
            timed_out: r.result.timed_out,
        })
    }
}
