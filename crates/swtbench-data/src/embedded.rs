//! Dataset copies compiled into the binary, for offline use (see `assets/datasets/README.md`).
//!
//! Each copy is gzip-compressed JSON Lines, rows exactly as published. They are decompressed on
//! every load (tens of milliseconds); nothing is written to disk.

use std::io::Read;

use flate2::read::GzDecoder;

/// One embedded dataset split.
#[derive(Debug)]
pub struct EmbeddedDataset {
    /// Canonical Hugging Face name.
    pub name: &'static str,
    pub split: &'static str,
    pub rows: usize,
    /// Where the copy comes from, for `swtbench datasets`.
    pub source: &'static str,
    /// File name under `assets/datasets/`.
    pub file: &'static str,
    data: &'static [u8],
}

static EMBEDDED: &[EmbeddedDataset] = &[
    EmbeddedDataset {
        name: "princeton-nlp/SWE-bench_Lite",
        split: "test",
        rows: 300,
        source: "published SWE-bench Lite test split (MIT)",
        file: "swe-bench-lite.test.jsonl.gz",
        data: include_bytes!("../../../assets/datasets/swe-bench-lite.test.jsonl.gz"),
    },
    EmbeddedDataset {
        name: "princeton-nlp/SWE-bench_Verified",
        split: "test",
        rows: 500,
        source: "SWE-bench Verified test split (MIT)",
        file: "swe-bench-verified.test.jsonl.gz",
        data: include_bytes!("../../../assets/datasets/swe-bench-verified.test.jsonl.gz"),
    },
];

/// Every embedded copy.
pub fn all() -> &'static [EmbeddedDataset] {
    EMBEDDED
}

/// The embedded copy of `name` (canonical, compared case-insensitively) and `split`, if any.
pub fn find(name: &str, split: &str) -> Option<&'static EmbeddedDataset> {
    EMBEDDED
        .iter()
        .find(|d| d.name.eq_ignore_ascii_case(name) && d.split == split)
}

impl EmbeddedDataset {
    /// Size of the compressed copy in the binary.
    pub fn compressed_bytes(&self) -> usize {
        self.data.len()
    }

    /// The decompressed JSON Lines text.
    pub fn text(&self) -> Result<String, std::io::Error> {
        let mut out = String::with_capacity(self.data.len() * 6);
        GzDecoder::new(self.data).read_to_string(&mut out)?;
        Ok(out)
    }

    /// A label for messages: `embedded copy of NAME (SPLIT)`.
    pub fn label(&self) -> String {
        format!("embedded copy of {} ({})", self.name, self.split)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_decompress_to_the_announced_row_count() {
        for d in all() {
            let text = d.text().unwrap_or_else(|e| panic!("{}: {e}", d.file));
            assert_eq!(text.lines().count(), d.rows, "{}", d.file);
            assert!(
                d.compressed_bytes() < text.len() / 3,
                "{} is not compressed",
                d.file
            );
        }
        assert!(find("PRINCETON-NLP/swe-bench_lite", "test").is_some());
        assert!(find("princeton-nlp/SWE-bench_Lite", "dev").is_none());
        assert!(find("princeton-nlp/SWE-bench", "test").is_none());
    }

    /// The embedded copies are byte-identical to the reference data they were made from
    /// (`scripts/import-shared-data`), when that data is present.
    #[test]
    #[expect(
        clippy::print_stdout,
        reason = "the test says which reference data it could not find"
    )]
    fn copies_match_the_reference_data() {
        let dir = std::env::var_os("SWTBENCH_SHARED_DATA")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
            });
        let pairs = [
            ("swe-bench-lite.test.jsonl.gz", "swebench_lite_test.jsonl"),
            (
                "swe-bench-verified.test.jsonl.gz",
                "swebench_verified_test.jsonl",
            ),
        ];
        for (file, source) in pairs {
            let Ok(reference) = std::fs::read_to_string(dir.join("datasets").join(source)) else {
                println!(
                    "skipped: reference data {source} not found under {}",
                    dir.display()
                );
                continue;
            };
            let copy = all().iter().find(|d| d.file == file).unwrap();
            assert!(
                copy.text().unwrap() == reference,
                "{file} differs from {source}"
            );
        }
    }
}
