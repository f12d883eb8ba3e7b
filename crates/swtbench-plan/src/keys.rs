//! Content keys of runs: what a run's output depends on, hashed, and stored next to the output.
//!
//! A run's key is SHA-256 over a canonical JSON of its [`KeyInputs`]: the key format and harness
//! version, the instance image key (and the id of a local base image, whose tag says nothing about
//! its content), the exact eval script, the user, the tracer's hash when coverage is on, the
//! timeout, the network access and the output cap. The eval script carries everything else: the
//! patches, the directives, the mode and the coverage flag. An output directory is reused only
//! when its [`KEY_FILE`] holds the same key, so a stale or wrong-mode result is never read
//! (§12.4), while the gold/base directories stay shared across run ids and models.
//!
//! The key file is written last, after the outputs, and removed first when a run starts again, so
//! its presence means the outputs next to it are complete. It also holds the SHA-256 of
//! `test_output.txt`: two processes writing the same shared gold/base directory at once (another
//! mode, another coverage setting) could otherwise leave one's output next to the other's key.
//! The runner reads an output only when it matches its key file and the key expected.

use serde::{Deserialize, Serialize};
use swtbench_core::hash::sha256_hex;

/// File holding a run's key and result, next to `test_output.txt`.
pub const KEY_FILE: &str = swtbench_core::layout::KEY_FILE;

/// Version of the key format; bump when the meaning of an output changes without its inputs.
pub const KEY_FORMAT: u32 = 3;

/// The harness version that goes into every key.
pub const HARNESS_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What one run's output depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct KeyInputs {
    pub format: u32,
    pub harness: String,
    pub instance_image: String,
    /// Id of the local base image when the spec builds on an existing image (its tag can be moved
    /// to new content without the keys noticing).
    pub base_image_id: Option<String>,
    pub eval_script_sha256: String,
    pub user: String,
    /// SHA-256 of the tracer copied into the container; `None` without coverage.
    pub tracer_sha256: Option<String>,
    pub timeout_secs: u64,
    pub network: bool,
    pub max_output: Option<usize>,
    /// SHA-256 of the CA bundle the test containers trust (`--ca-in-tests`); left out of the
    /// canonical JSON when there is none, so the keys of runs without it are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_ca_sha256: Option<String>,
}

/// [`swtbench_core::engine::ResourceLimits`] as recorded in a key file: the limits a run was made
/// with. They are not hashed into the key (a run that reached no limit gives the same output under
/// limits at least as generous, so the gold and base runs stay shared by evaluations with other
/// `--max-workers`); [`KeyLimits::reusable_under`] decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KeyLimits {
    pub memory_bytes: Option<u64>,
    pub pids: Option<u32>,
    pub nano_cpus: Option<u64>,
    pub disk_bytes: Option<u64>,
    pub file_bytes: Option<u64>,
}

impl KeyLimits {
    /// Whether a run made with these limits is the run `now` would make: the same limits, or,
    /// when it reached none (`hit` false), limits in `now` that are each at least as generous
    /// (unlimited counts as the most generous).
    pub fn reusable_under(&self, now: &KeyLimits, hit: bool) -> bool {
        if self == now {
            return true;
        }
        if hit {
            return false;
        }
        fn covers<T: PartialOrd>(now: Option<T>, then: Option<T>) -> bool {
            match (now, then) {
                (None, _) => true,
                (Some(_), None) => false,
                (Some(n), Some(t)) => n >= t,
            }
        }
        covers(now.memory_bytes, self.memory_bytes)
            && covers(now.pids, self.pids)
            && covers(now.nano_cpus, self.nano_cpus)
            && covers(now.disk_bytes, self.disk_bytes)
            && covers(now.file_bytes, self.file_bytes)
    }
}

impl From<swtbench_core::engine::ResourceLimits> for KeyLimits {
    fn from(l: swtbench_core::engine::ResourceLimits) -> Self {
        KeyLimits {
            memory_bytes: l.memory_bytes,
            pids: l.pids,
            nano_cpus: l.nano_cpus,
            disk_bytes: l.disk_bytes,
            file_bytes: l.file_bytes,
        }
    }
}

impl KeyInputs {
    /// The key: SHA-256 hex of the canonical JSON (fields in declaration order, no spaces).
    pub fn key(&self) -> String {
        // Serialising a struct of strings, numbers and options cannot fail.
        let json = serde_json::to_string(self).unwrap_or_default();
        sha256_hex(json)
    }
}

/// How a run ended, as stored in the key file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunResult {
    /// Exit code of the eval script (`None` when it was killed). The script ends with the
    /// original's `git apply` of an empty patch, so this is usually 128 whatever the tests did.
    pub exit_code: Option<i64>,
    /// Exit code of the test command itself, as the executed script recorded it
    /// ([`swtbench_spec::TEST_EXIT_FILE`]); `None` on a timeout, when nothing was recorded, and
    /// in key files written before it existed. Information only: grading reads the log.
    #[serde(default)]
    pub test_exit_code: Option<i64>,
    /// The timeout fired; the output is what was printed before.
    pub timed_out: bool,
    /// Bytes cut from the middle of the output by the output cap.
    pub omitted_bytes: u64,
    /// Milliseconds the eval script ran.
    pub duration_ms: u64,
    /// The resource limit the run reached, if any ([`crate::limits`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<crate::limits::LimitHit>,
}

/// The content of [`KEY_FILE`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    pub key: String,
    pub inputs: KeyInputs,
    pub result: RunResult,
    /// SHA-256 of the `test_output.txt` written with this key.
    pub output_sha256: String,
    /// The container's resource limits the run was made with.
    #[serde(default)]
    pub limits: KeyLimits,
}

impl KeyRecord {
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> KeyInputs {
        KeyInputs {
            format: KEY_FORMAT,
            harness: "0.1.0".into(),
            instance_image: "exec.eval.x86_64.a.b:latest".into(),
            base_image_id: None,
            eval_script_sha256: sha256_hex("#!/bin/bash\n"),
            user: "root".into(),
            tracer_sha256: None,
            timeout_secs: 1800,
            network: false,
            max_output: Some(1024),
            test_ca_sha256: None,
        }
    }

    #[test]
    fn keys_without_a_test_ca_are_the_keys_of_the_format_before_it() {
        // The canonical JSON of a run without `--ca-in-tests` is the one of key format 3 before
        // the field existed, so every key written before stays valid.
        let json = serde_json::to_string(&inputs()).unwrap_or_default();
        let before = format!(
            r#"{{"format":3,"harness":"0.1.0","instance_image":"exec.eval.x86_64.a.b:latest","base_image_id":null,"eval_script_sha256":"{}","user":"root","tracer_sha256":null,"timeout_secs":1800,"network":false,"max_output":1024}}"#,
            sha256_hex("#!/bin/bash\n")
        );
        assert_eq!(json, before);
        assert_eq!(inputs().key(), sha256_hex(before));
        let mut with = inputs();
        with.test_ca_sha256 = Some("c".into());
        let back: KeyInputs =
            serde_json::from_str(&serde_json::to_string(&with).unwrap_or_default())
                .unwrap_or_default();
        assert_eq!(back, with);
    }

    #[test]
    fn every_input_changes_the_key() {
        let k = inputs().key();
        assert_eq!(k.len(), 64);
        assert_eq!(k, inputs().key(), "deterministic");
        type Change = Box<dyn Fn(&mut KeyInputs)>;
        let variants: Vec<Change> = vec![
            Box::new(|i| i.harness = "0.2.0".into()),
            Box::new(|i| i.instance_image = "other".into()),
            Box::new(|i| i.base_image_id = Some("sha256:1".into())),
            Box::new(|i| i.eval_script_sha256 = sha256_hex("x")),
            Box::new(|i| i.user = "nonroot".into()),
            Box::new(|i| i.tracer_sha256 = Some("t".into())),
            Box::new(|i| i.timeout_secs = 20),
            Box::new(|i| i.network = true),
            Box::new(|i| i.max_output = None),
            Box::new(|i| i.test_ca_sha256 = Some("c".into())),
        ];
        for change in variants {
            let mut i = inputs();
            change(&mut i);
            assert_ne!(i.key(), k, "{i:?}");
        }
    }

    #[test]
    fn a_run_is_reusable_under_its_limits_or_more_generous_ones_unless_it_hit_one() {
        let then = KeyLimits {
            memory_bytes: Some(2 << 30),
            pids: Some(1024),
            nano_cpus: None,
            disk_bytes: Some(4 << 30),
            file_bytes: Some(1 << 30),
        };
        let mut more = then;
        more.memory_bytes = Some(4 << 30);
        let mut less = then;
        less.pids = Some(512);
        let unlimited = KeyLimits::default();
        assert!(then.reusable_under(&then, false));
        assert!(
            then.reusable_under(&then, true),
            "the same limits, the same hit"
        );
        assert!(then.reusable_under(&more, false));
        assert!(then.reusable_under(&unlimited, false));
        assert!(
            !then.reusable_under(&more, true),
            "a hit is redone with other limits"
        );
        assert!(
            !then.reusable_under(&less, false),
            "tighter limits may change it"
        );
        assert!(!unlimited.reusable_under(&then, false));
        let mut cpus = then;
        cpus.nano_cpus = Some(1_000_000_000);
        assert!(!then.reusable_under(&cpus, false));
    }
}
