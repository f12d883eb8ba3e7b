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
//! [`scan_output`] accepts an output only when it matches its key file and the key expected.
//! Pure, except [`read_key_file`] and [`scan_output`].

use std::path::Path;

use serde::{Deserialize, Serialize};
use swtbench_core::hash::sha256_hex;

/// File holding a run's key and result, next to `test_output.txt`.
pub const KEY_FILE: &str = swtbench_core::layout::KEY_FILE;

/// Version of the key format; bump when the meaning of an output changes without its inputs.
pub const KEY_FORMAT: u32 = 3;

/// The harness version that goes into every key.
pub const HARNESS_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What one run's output depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// [`swtbench_backend::ResourceLimits`] as recorded in a key file: the limits a run was made
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

impl From<swtbench_backend::ResourceLimits> for KeyLimits {
    fn from(l: swtbench_backend::ResourceLimits) -> Self {
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

/// The key record in `dir`, if there is a readable one.
pub fn read_key_file(dir: &Path) -> Option<KeyRecord> {
    let bytes = std::fs::read(dir.join(KEY_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Why an output on disk cannot be used as the result of a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputError {
    #[error("reading {path}: {message}")]
    Io { path: String, message: String },
    #[error(
        "the output in {dir} now belongs to other inputs (key {found}, expected {expected}): \
         another swtbench process with another mode, coverage setting or spec wrote the same \
         shared directory meanwhile; {}",
        REPLACED_HINT
    )]
    Replaced {
        dir: String,
        expected: String,
        found: String,
    },
    #[error(
        "the output in {dir} does not match its key file (two processes wrote it at once, or it \
         was edited); it is run again next time"
    )]
    Inconsistent { dir: String },
}

/// What to do when two processes share output directories (part of
/// [`OutputError::Replaced`]'s text).
pub const REPLACED_HINT: &str = "evaluate one at a time, or in separate --output-dir";

impl OutputError {
    /// What to do about it, when the text says (it is part of the text).
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            OutputError::Replaced { .. } => Some(REPLACED_HINT),
            _ => None,
        }
    }
}

/// The `test_output.txt` of `dir`, when it is the output of `expected_key` (`None`: whatever is
/// there, for outputs reused without a key), piece by piece into a state made by `start` and fed
/// by `feed`, so that it never is in memory whole; the hash is checked as the pieces go by. A
/// concurrent writer can replace the output and the key file one after the other, so a
/// mismatched pair is read again (with a fresh state) before giving up.
pub fn scan_output<T>(
    dir: &Path,
    expected_key: Option<&str>,
    mut start: impl FnMut() -> T,
    mut feed: impl FnMut(&mut T, &[u8]),
) -> Result<T, OutputError> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let path = dir.join(swtbench_core::layout::TEST_OUTPUT_FILE);
    let io = |e: std::io::Error| OutputError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let mut last = OutputError::Inconsistent {
        dir: dir.display().to_string(),
    };
    let mut buf = vec![0u8; 1 << 20];
    for attempt in 0..5 {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let record = read_key_file(dir);
        let mut file = std::fs::File::open(&path).map_err(io)?;
        let mut state = start();
        let mut hash = Sha256::new();
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io(e)),
            };
            hash.update(&buf[..n]);
            feed(&mut state, &buf[..n]);
        }
        let Some(expected) = expected_key else {
            return Ok(state);
        };
        match record {
            Some(r) if r.key != expected => {
                last = OutputError::Replaced {
                    dir: dir.display().to_string(),
                    expected: expected.to_string(),
                    found: r.key,
                }
            }
            Some(r) if r.output_sha256 == hex::encode(hash.finalize()) => return Ok(state),
            _ => {}
        }
    }
    Err(last)
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
        }
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

    #[test]
    fn record_round_trips_through_a_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let i = inputs();
        let record = KeyRecord {
            key: i.key(),
            inputs: i,
            result: RunResult {
                exit_code: Some(1),
                test_exit_code: None,
                timed_out: false,
                omitted_bytes: 0,
                duration_ms: 1234,
                limit: None,
            },
            output_sha256: sha256_hex("out"),
            limits: KeyLimits::default(),
        };
        std::fs::write(dir.path().join(KEY_FILE), record.to_json()).expect("write");
        assert_eq!(read_key_file(dir.path()), Some(record));
        std::fs::write(dir.path().join(KEY_FILE), "{").expect("write");
        assert_eq!(read_key_file(dir.path()), None);
    }

    #[test]
    fn an_output_is_read_only_with_its_own_key_and_matching_hash() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let i = inputs();
        let key = i.key();
        let write = |output: &str, record_output: &str, key: &str| {
            std::fs::write(d.join("test_output.txt"), output).expect("write");
            let record = KeyRecord {
                key: key.to_string(),
                inputs: i.clone(),
                result: RunResult {
                    exit_code: Some(0),
                    test_exit_code: Some(0),
                    timed_out: false,
                    omitted_bytes: 0,
                    duration_ms: 1,
                    limit: None,
                },
                output_sha256: sha256_hex(record_output),
                limits: KeyLimits::default(),
            };
            std::fs::write(d.join(KEY_FILE), record.to_json()).expect("write");
        };
        let read_output = |d: &Path, key: Option<&str>| {
            scan_output(d, key, Vec::new, |all: &mut Vec<u8>, piece: &[u8]| {
                all.extend_from_slice(piece)
            })
        };
        write("PASSED t\n", "PASSED t\n", &key);
        assert_eq!(read_output(d, Some(&key)).expect("ok"), b"PASSED t\n");
        // Another process's output next to this key (or edited by hand).
        write("FAILED t\n", "PASSED t\n", &key);
        assert!(matches!(
            read_output(d, Some(&key)),
            Err(OutputError::Inconsistent { .. })
        ));
        // A consistent pair of other inputs.
        write("FAILED t\n", "FAILED t\n", "other");
        assert!(matches!(
            read_output(d, Some(&key)),
            Err(OutputError::Replaced { found, .. }) if found == "other"
        ));
        // Without an expected key (outputs of the original harness), whatever is there.
        assert_eq!(read_output(d, None).expect("ok"), b"FAILED t\n");
        std::fs::remove_file(d.join("test_output.txt")).expect("rm");
        assert!(matches!(read_output(d, None), Err(OutputError::Io { .. })));
    }
}
