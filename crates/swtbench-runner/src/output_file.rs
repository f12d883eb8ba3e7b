//! [`OutputFile`]: a run's `test_output.txt` written while the eval script prints, so that what a
//! test prints costs disk, not memory. Without an output cap every byte goes straight to the file;
//! with one, the head goes to the file and only the tail waits in memory, and the file ends as
//! [`swtbench_backend::output::OutputCollector`] would have collected it (head cut back to whole
//! lines, the truncation marker, the tail from its first whole line). The SHA-256 of the file is
//! computed on the way, and the timeout marker is appended at the end.
//!
//! The file is written next to its target and renamed over it by [`OutputFile::finish`]
//! ([`swtbench_data::fsutil::AtomicFile`]): a run that fails or is cancelled leaves no output,
//! and a killed one only a temporary file, which its process's journal leads the next process to
//! ([`swtbench_data::fsutil::sweep_journals`]).

use std::collections::VecDeque;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use sha2::{Digest, Sha256};
use swtbench_backend::output::{keep_tail, truncation_marker};
use swtbench_backend::OutputSink;
use swtbench_data::fsutil::{AtomicFile, WriteError};

/// `test_output.txt` being written; an [`OutputSink`] for the exec.
#[derive(Debug)]
pub struct OutputFile {
    file: AtomicFile,
    head_cap: u64,
    tail_cap: usize,
    /// Bytes of the head written to the file.
    head_len: u64,
    /// SHA-256 of the head written so far.
    head_hash: Sha256,
    /// Where the head's last whole line ends, and the hash of the head up to there (what the
    /// head is cut back to when the output is cut).
    line_end: Option<(u64, Sha256)>,
    tail: VecDeque<u8>,
    total: u64,
    /// The first write that failed: the rest of the output is dropped and [`Self::finish`] fails.
    error: Option<std::io::Error>,
}

/// What [`OutputFile::finish`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenOutput {
    /// SHA-256 hex of the file as written (marker lines included).
    pub sha256: String,
    /// Bytes dropped from the middle (0: complete).
    pub omitted: u64,
    /// Bytes the command printed.
    pub total: u64,
}

impl OutputFile {
    /// Starts the output for `path`; `limit: None` keeps everything (on disk).
    pub fn create(path: &Path, limit: Option<usize>) -> Result<OutputFile, WriteError> {
        Self::with_file(AtomicFile::create(path)?, limit)
    }

    /// [`OutputFile::create`], its temporary file listed in this process's journal under the
    /// output tree's `root` ([`AtomicFile::create_listed`]): if the process is killed while the
    /// script prints, the next process that starts on the tree removes the unfinished file.
    pub fn create_listed(
        path: &Path,
        root: &Path,
        limit: Option<usize>,
    ) -> Result<OutputFile, WriteError> {
        Self::with_file(AtomicFile::create_listed(path, root)?, limit)
    }

    fn with_file(file: AtomicFile, limit: Option<usize>) -> Result<OutputFile, WriteError> {
        let (head_cap, tail_cap) = match limit {
            Some(l) => ((l - l / 2) as u64, l / 2),
            None => (u64::MAX, 0),
        };
        Ok(OutputFile {
            file,
            head_cap,
            tail_cap,
            head_len: 0,
            head_hash: Sha256::new(),
            line_end: None,
            tail: VecDeque::new(),
            total: 0,
            error: None,
        })
    }

    fn write_head(&mut self, bytes: &[u8]) {
        if let Err(e) = self.file.file().write_all(bytes) {
            self.error = Some(e);
            return;
        }
        match memchr::memrchr(b'\n', bytes) {
            Some(i) => {
                self.head_hash.update(&bytes[..=i]);
                self.line_end = Some((self.head_len + i as u64 + 1, self.head_hash.clone()));
                self.head_hash.update(&bytes[i + 1..]);
            }
            None => self.head_hash.update(bytes),
        }
        self.head_len += bytes.len() as u64;
    }

    /// Ends the output: cuts it as the collector does, appends `suffix` (the timeout marker, when
    /// the script timed out), and renames the file into place.
    pub fn finish(mut self, suffix: Option<&str>) -> Result<WrittenOutput, WriteError> {
        if let Some(e) = self.error.take() {
            return Err(self.file.error(e));
        }
        let mut tail: Vec<u8> = std::mem::take(&mut self.tail).into();
        let mut hash = self.head_hash.clone();
        let mut head_len = self.head_len;
        if self.total > head_len + tail.len() as u64 {
            // Whole lines only, as the collector keeps them.
            if let Some((end, at_end)) = self.line_end.take() {
                head_len = end;
                hash = at_end;
                let f = self.file.file();
                f.set_len(end)
                    .and_then(|_| f.seek(SeekFrom::Start(end)).map(drop))
                    .map_err(|e| self.file.error(e))?;
            }
            if let Some(start) = memchr::memchr(b'\n', &tail) {
                tail.drain(..=start);
            }
        }
        let omitted = self.total - head_len - tail.len() as u64;
        let mut rest = Vec::with_capacity(tail.len() + 256);
        if omitted > 0 {
            rest.extend_from_slice(truncation_marker(omitted).as_bytes());
        }
        rest.extend_from_slice(&tail);
        drop(tail);
        if let Some(s) = suffix {
            rest.extend_from_slice(s.as_bytes());
        }
        hash.update(&rest);
        self.file
            .file()
            .write_all(&rest)
            .map_err(|e| self.file.error(e))?;
        self.file.commit()?;
        Ok(WrittenOutput {
            sha256: hex::encode(hash.finalize()),
            omitted,
            total: self.total,
        })
    }
}

impl OutputSink for OutputFile {
    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.error.is_some() {
            return;
        }
        if self.head_len < self.head_cap {
            let take = (self.head_cap - self.head_len).min(bytes.len() as u64) as usize;
            self.write_head(&bytes[..take]);
            bytes = &bytes[take..];
        }
        keep_tail(&mut self.tail, self.tail_cap, bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use swtbench_backend::output::OutputCollector;

    /// Writes `data` in `chunk`-byte pieces with `limit`, and collects it with the collector;
    /// returns the file's bytes, what `finish` said and what the collector gave.
    fn both(
        data: &[u8],
        chunk: usize,
        limit: Option<usize>,
        suffix: Option<&str>,
    ) -> (Vec<u8>, WrittenOutput, Vec<u8>, u64) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("test_output.txt");
        let mut out = OutputFile::create(&path, limit).expect("create");
        let mut collector = OutputCollector::new(limit);
        for piece in data.chunks(chunk.max(1)) {
            out.push(piece);
            collector.push(piece);
        }
        let written = out.finish(suffix).expect("finish");
        let file = std::fs::read(&path).expect("read");
        let collected = collector.finish();
        let mut expected = collected.bytes;
        if let Some(s) = suffix {
            expected.extend_from_slice(s.as_bytes());
        }
        (file, written, expected, collected.omitted)
    }

    fn lines(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| format!("PASSED tests/t.py::test_{i}\n"))
            .collect::<String>()
            .into_bytes()
    }

    #[test]
    fn the_file_is_what_the_collector_keeps_for_every_cap_and_chunking() {
        let texts: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"no newline at all".to_vec(),
            lines(100),
            (0..=255u8).cycle().take(5000).collect(),
            [lines(40), b"a partial last line".to_vec()].concat(),
        ];
        for text in &texts {
            for limit in [
                None,
                Some(0),
                Some(1),
                Some(11),
                Some(200),
                Some(1000),
                Some(1 << 20),
            ] {
                for chunk in [1, 3, 7, 64, 4096] {
                    let (file, written, expected, omitted) = both(text, chunk, limit, None);
                    assert_eq!(file, expected, "limit {limit:?}, chunk {chunk}");
                    assert_eq!(written.omitted, omitted, "limit {limit:?}, chunk {chunk}");
                    assert_eq!(written.total, text.len() as u64);
                    assert_eq!(
                        written.sha256,
                        swtbench_core::hash::sha256_hex(&file),
                        "the hash is the file's: limit {limit:?}, chunk {chunk}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_cut_output_keeps_head_and_tail_lines_and_the_marker() {
        let text = lines(1000);
        let (file, written, _, _) = both(&text, 100, Some(300), None);
        let file = String::from_utf8(file).expect("utf-8");
        let (head, rest) = file.split_once("\n[swtbench: ").expect("marker");
        assert!(head.starts_with("PASSED tests/t.py::test_0\n"));
        assert!(rest.ends_with("PASSED tests/t.py::test_999\n"));
        assert!(written.omitted > 0);
        assert!(file.len() <= 300 + truncation_marker(written.omitted).len());
    }

    #[test]
    fn without_a_cap_everything_is_on_disk_byte_for_byte() {
        let text: Vec<u8> = (0..=255u8).cycle().take(3 << 20).collect();
        let (file, written, _, _) = both(&text, 65536, None, None);
        assert_eq!(file, text);
        assert_eq!(written.omitted, 0);
        assert_eq!(written.sha256, swtbench_core::hash::sha256_hex(&text));
    }

    #[test]
    fn the_timeout_marker_is_appended_after_the_cut_output() {
        let marker = crate::execute::timeout_marker(std::time::Duration::from_secs(20));
        for limit in [None, Some(100)] {
            let (file, written, expected, _) = both(&lines(50), 9, limit, Some(&marker));
            assert_eq!(file, expected, "limit {limit:?}");
            assert!(file.ends_with(marker.as_bytes()));
            assert_eq!(written.sha256, swtbench_core::hash::sha256_hex(&file));
        }
    }

    #[test]
    fn nothing_replaces_the_target_until_finish() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("test_output.txt");
        std::fs::write(&path, "old").expect("write");
        let mut out = OutputFile::create(&path, None).expect("create");
        out.push(b"new output\n");
        assert_eq!(std::fs::read(&path).expect("read"), b"old");
        drop(out);
        assert_eq!(std::fs::read(&path).expect("read"), b"old");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 1, "the temporary file is gone: {names:?}");
    }
}
