//! Test directives: which test files (or Django labels) a patch asks the test runner to run (§4.4),
//! and the coverage file list of a code patch (§4.5).

use crate::diff::git_header_paths;
use crate::hash::sha256_hex;

/// The original's `NON_TEST_EXTS`. `csv` has no dot (so `foo_csv` is dropped too): kept for parity.
pub const DEFAULT_NON_TEST_EXTS: &[&str] = &[
    ".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml",
];

/// Test directives of `patch` for `repo`, exactly as the original computes them: every b-side path
/// of a `diff --git` line in order of appearance (duplicates kept), minus paths ending in a
/// non-test extension; Django paths become dotted labels (`tests/a/b.py` → `a.b`).
pub fn test_directives(patch: &str, repo: &str, non_test_exts: &[&str]) -> Vec<String> {
    if repo == "swe-bench/humaneval" {
        return vec!["test.py".to_string()];
    }
    let mut directives: Vec<String> = git_header_paths(patch)
        .into_iter()
        .map(|(_, b)| b)
        .filter(|d| !non_test_exts.iter().any(|ext| d.ends_with(ext)))
        .collect();
    if repo == "django/django" {
        directives = directives
            .into_iter()
            .map(|d| {
                let d = d.strip_suffix(".py").unwrap_or(&d);
                let d = d.strip_prefix("tests/").unwrap_or(d);
                d.replace('/', ".")
            })
            .collect();
    }
    directives
}

/// Name of the cache directory of a gold/base run: SHA-256 hex of the directives joined by `__`.
pub fn directives_hash(directives: &[String]) -> String {
    sha256_hex(directives.join("__"))
}

/// Files whose lines the tracer counts: the a- and b-side paths of every `diff --git` line of the
/// gold code patch, deduplicated and **sorted** (the original's order is random).
pub fn coverage_files(code_patch: &str) -> Vec<String> {
    let mut v: Vec<String> = git_header_paths(code_patch)
        .into_iter()
        .flat_map(|(a, b)| [a, b])
        .collect();
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "diff --git a/tests/model_fields/tests.py b/tests/model_fields/tests.py\n\
diff --git a/tests/data.json b/tests/data.json\n\
diff --git a/tests/x_csv b/tests/x_csv\n\
diff --git a/tests/model_fields/tests.py b/tests/model_fields/tests.py\n";

    #[test]
    fn pytest_style_directives_keep_order_and_duplicates() {
        let d = test_directives(P, "pytest-dev/pytest", DEFAULT_NON_TEST_EXTS);
        assert_eq!(
            d,
            vec!["tests/model_fields/tests.py", "tests/model_fields/tests.py"]
        );
    }

    #[test]
    fn regex_semantics_of_the_original() {
        // As Python's `re.findall(r"diff --git a/.* b/(.*)", patch)`: quoted paths give nothing,
        // the last ` b/` splits, the text may start mid-line, `csv` without its dot drops any
        // path ending in `csv`.
        let patch = "diff --git \"a/t\\303\\251st.py\" \"b/t\\303\\251st.py\"\n\
x diff --git a/a b/c b/d.py\n\
diff --git a/tests/test_read_csv b/tests/test_read_csv\n\
diff --git a/data.csv b/data.csv\n";
        assert_eq!(
            test_directives(patch, "pydata/xarray", DEFAULT_NON_TEST_EXTS),
            vec!["d.py"]
        );
    }

    #[test]
    fn django_labels() {
        let d = test_directives(P, "django/django", DEFAULT_NON_TEST_EXTS);
        assert_eq!(d, vec!["model_fields.tests", "model_fields.tests"]);
        assert_eq!(
            test_directives("", "swe-bench/humaneval", DEFAULT_NON_TEST_EXTS),
            vec!["test.py"]
        );
    }

    #[test]
    fn hash_and_coverage_files() {
        assert_eq!(
            directives_hash(&[]),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            directives_hash(&["a".into(), "b".into()]),
            sha256_hex("a__b")
        );
        let files = coverage_files("diff --git a/z.py b/z.py\ndiff --git a/old.py b/new.py\n");
        assert_eq!(files, vec!["new.py", "old.py", "z.py"]);
    }
}
