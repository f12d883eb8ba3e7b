//! How the runs of a repository are read when a spec table says more than the original's
//! defaults: its unit-test log parser, and the file extensions that are never test directives
//! (they decide the directive hashes that name the shared gold/base directories). `grade`,
//! `report`, the HTML page and `run` all read a tree under these rules.

use std::collections::BTreeMap;

use swtbench_core::directives::{directives_hash, test_directives, DEFAULT_NON_TEST_EXTS};

use crate::parsers::Parser;

/// The file extensions that are never test directives, by repository: a spec table's
/// `non_test_extensions` (the repository's own list, else the table's). Without an entry, the
/// original's list applies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NonTestExts {
    /// Lists of single repositories (`owner/name`).
    pub by_repo: BTreeMap<String, Vec<String>>,
    /// The list of every other repository; `None`: the original's.
    pub default: Option<Vec<String>>,
}

impl NonTestExts {
    /// The extensions that apply to `repo`.
    pub fn of(&self, repo: &str) -> Vec<&str> {
        match self.by_repo.get(repo).or(self.default.as_ref()) {
            Some(list) => list.iter().map(String::as_str).collect(),
            None => DEFAULT_NON_TEST_EXTS.to_vec(),
        }
    }

    /// `sha256("__".join(directives))` of `patch` in `repo`: the name of a shared run directory.
    pub fn directives_hash(&self, repo: &str, patch: &str) -> String {
        directives_hash(&test_directives(patch, repo, &self.of(repo)))
    }
}

/// The rules a log tree is read under. The default is the original's: its repository → parser
/// map and its non-test extensions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadRules {
    /// Unit-test log parsers by repository (`owner/name`) that replace the original's map (a
    /// spec table's `log_parser`); any other repository uses the map (no entry: no parser).
    pub parsers: BTreeMap<String, Parser>,
    pub non_test_exts: NonTestExts,
}

impl ReadRules {
    /// The parser these rules choose for `repo`'s unit-test logs (`None`: the original's map
    /// decides).
    pub fn parser(&self, repo: &str) -> Option<Parser> {
        self.parsers.get(repo).copied()
    }

    /// `sha256("__".join(directives))` of `patch` in `repo` under these rules.
    pub fn directives_hash(&self, repo: &str, patch: &str) -> String {
        self.non_test_exts.directives_hash(repo, patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_test_extensions_name_the_shared_directories() {
        let patch = "diff --git a/tests/test_a.py b/tests/test_a.py\n--- a/tests/test_a.py\n+++ b/tests/test_a.py\n@@ -1 +1 @@\n-x\n+y\ndiff --git a/tests/data.json b/tests/data.json\n--- a/tests/data.json\n+++ b/tests/data.json\n@@ -1 +1 @@\n-{}\n+[]\n";
        let original = NonTestExts::default();
        assert_eq!(
            original.directives_hash("acme/widget", patch),
            swtbench_core::layout::base_directives_hash("acme/widget", patch)
        );
        assert_eq!(
            original.directives_hash("acme/widget", patch),
            swtbench_core::hash::sha256_hex("tests/test_a.py")
        );
        let table = NonTestExts {
            by_repo: BTreeMap::from([("acme/widget".to_string(), vec![".txt".to_string()])]),
            default: Some(vec![".py".to_string()]),
        };
        // The repository's own list: .json files are directives.
        assert_eq!(
            table.directives_hash("acme/widget", patch),
            swtbench_core::hash::sha256_hex("tests/test_a.py__tests/data.json")
        );
        // Any other repository: the table's list.
        assert_eq!(table.of("acme/other"), vec![".py"]);
    }
}
