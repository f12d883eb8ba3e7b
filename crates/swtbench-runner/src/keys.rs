//! Reading what a run left on disk: its key record, and its output only while it is the one
//! written with the key expected ([`swtbench_plan::keys`] says what a key is made of).

use std::path::Path;

use crate::outcome::OutputError;
use swtbench_plan::keys::{KeyRecord, KEY_FILE};

/// The key record in `dir`, if there is a readable one.
pub fn read_key_file(dir: &Path) -> Option<KeyRecord> {
    let bytes = std::fs::read(dir.join(KEY_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
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
    use swtbench_core::hash::sha256_hex;
    use swtbench_plan::keys::{KeyInputs, KeyLimits, RunResult, KEY_FORMAT};

    /// Any key's inputs: these tests are about reading what a run left, not about keys.
    fn inputs() -> KeyInputs {
        KeyInputs {
            format: KEY_FORMAT,
            eval_script_sha256: sha256_hex("#!/bin/bash\n"),
            ..KeyInputs::default()
        }
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
