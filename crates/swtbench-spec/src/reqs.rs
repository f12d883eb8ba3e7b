//! The requirements.txt and environment.yml text that `setup_env.sh` embeds (§3.3), derived from
//! the repository's own files exactly as the original does, so the env image key is the same.
//!
//! The functions take a *getter*: `get(path)` returns the file at the environment setup commit
//! (`Ok(None)` when the file does not exist there, `Err` when it could not be read at all). Where
//! the files come from (a local git mirror, GitHub raw, a cache, test fixtures) is the caller's
//! business; nothing here does I/O.

use crate::error::{ReadError, SpecError};
use crate::py;

/// Heredoc delimiter of the embedded requirement files in `setup_env.sh`.
pub const ENV_HEREDOC: &str = "EOF_59812759871";

/// Name the original gives the conda environment (and the line `name:` is rewritten to).
pub const ENV_NAME: &str = "testbed";

/// Lines dropped from requirement files: after stripping whitespace they start with one of these.
const EXCLUDED_PREFIXES: [&str; 3] = ["-e .", "#", ".[test"];

fn excluded(line: &str) -> bool {
    let s = py::strip(line);
    EXCLUDED_PREFIXES.iter().any(|p| s.starts_with(p))
}

fn first_found<F>(
    what: &'static str,
    repo: &str,
    commit: &str,
    paths: &[String],
    get: &mut F,
) -> Result<(String, String), SpecError>
where
    F: FnMut(&str) -> Result<Option<String>, ReadError>,
{
    if paths.is_empty() {
        return Err(SpecError::NoFilePaths {
            what,
            repo: repo.to_string(),
        });
    }
    for path in paths {
        match get(path) {
            Ok(Some(text)) => return Ok((path.clone(), text)),
            Ok(None) => {}
            Err(e) => return Err(fetch_error(repo, commit, path, e)),
        }
    }
    Err(SpecError::FileNotFound {
        what,
        repo: repo.to_string(),
        commit: commit.to_string(),
        tried: paths.to_vec(),
    })
}

fn fetch_error(repo: &str, commit: &str, path: &str, error: ReadError) -> SpecError {
    SpecError::Fetch {
        repo: repo.to_string(),
        commit: commit.to_string(),
        path: path.to_string(),
        message: error.to_string(),
    }
}

/// The requirements text of `repo` at `commit`: the first of `paths` that exists, with each
/// `-r <file>` line replaced by that file's lines (one level, relative to the requirements file's
/// directory, placed *before* all the original lines; an include that does not exist is dropped),
/// and lines starting with `-e .`, `#` or `.[test` removed (§3.3).
pub fn requirements_text<F>(
    repo: &str,
    commit: &str,
    paths: &[String],
    mut get: F,
) -> Result<String, SpecError>
where
    F: FnMut(&str) -> Result<Option<String>, ReadError>,
{
    let (path, text) = first_found("requirements file", repo, commit, paths, &mut get)?;
    let dir = match path.rfind('/') {
        Some(i) => &path[..i],
        None => "",
    };
    let mut included: Vec<String> = Vec::new();
    let mut own: Vec<&str> = Vec::new();
    for line in text.split('\n') {
        if py::strip(line).starts_with("-r") {
            // The original slices the raw line after two characters, not the stripped one.
            let rest: String = line.chars().skip(2).collect();
            let include = py::path_join(dir, py::strip(&rest));
            match get(&include) {
                Ok(Some(inc)) => {
                    included.extend(inc.split('\n').filter(|l| !excluded(l)).map(String::from))
                }
                Ok(None) => {}
                Err(e) => return Err(fetch_error(repo, commit, &include, e)),
            }
        } else if !excluded(line) {
            own.push(line);
        }
    }
    included.push(own.join("\n"));
    Ok(included.join("\n"))
}

/// The environment.yml text of `repo` at `commit`: the first of `paths` that exists, with every
/// line starting with `name:` replaced by `name: <env_name>` (§3.3).
pub fn environment_yml_text<F>(
    repo: &str,
    commit: &str,
    paths: &[String],
    env_name: &str,
    mut get: F,
) -> Result<String, SpecError>
where
    F: FnMut(&str) -> Result<Option<String>, ReadError>,
{
    let (_, text) = first_found("environment.yml", repo, commit, paths, &mut get)?;
    let renamed = format!("name: {env_name}");
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| {
            if l.starts_with("name:") {
                renamed.as_str()
            } else {
                l
            }
        })
        .collect();
    Ok(lines.join("\n"))
}

/// Normalises a repository-relative path for lookups in a git tree: drops `.` and empty
/// segments and resolves `..`. `None` when the path is absolute or climbs above the root (such a
/// file cannot exist in the repository), and for a directory path ending in `/`.
pub fn normalize_repo_path(path: &str) -> Option<String> {
    if path.starts_with('/') || path.ends_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    if parts.is_empty() {
        None
    } else {
        Some(parts.join("/"))
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn files(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn getter(
        map: &BTreeMap<String, String>,
    ) -> impl FnMut(&str) -> Result<Option<String>, ReadError> + '_ {
        move |p| Ok(map.get(p).cloned())
    }

    #[test]
    fn expands_one_level_and_puts_includes_first() {
        let fs = files(&[
            (
                "requirements/dev.txt",
                "# dev tools\n-r base.txt\n-e .\npytest==7.0\n  -r missing.txt\n.[tests]\n",
            ),
            (
                "requirements/base.txt",
                "click>=8\n# comment\n-r nested.txt\n  -e .\n",
            ),
        ]);
        let paths = vec!["requirements/dev.txt".to_string()];
        let text = requirements_text("o/r", "c0ffee", &paths, getter(&fs)).unwrap();
        // The nested `-r` is kept verbatim (one level only); " -r missing.txt" is dropped with its
        // include because the include does not exist. The file's trailing newline survives as an
        // empty last line in both files.
        assert_eq!(text, "click>=8\n-r nested.txt\n\npytest==7.0\n");
    }

    #[test]
    fn raw_line_slicing_quirk() {
        // "  -r x.txt"[2..] is "-r x.txt": the include the original asks for is "d/-r x.txt".
        let fs = files(&[("d/req.txt", "  -r x.txt\nfoo\n"), ("d/x.txt", "bar")]);
        let mut asked = Vec::new();
        let text = requirements_text("o/r", "c", &["d/req.txt".to_string()], |p| {
            asked.push(p.to_string());
            Ok(fs.get(p).cloned())
        })
        .unwrap();
        assert_eq!(asked, vec!["d/req.txt", "d/-r x.txt"]);
        assert_eq!(text, "foo\n");
    }

    #[test]
    fn first_existing_path_wins_and_missing_everywhere_is_named() {
        let fs = files(&[("b.txt", "x")]);
        let paths = vec!["a.txt".to_string(), "b.txt".to_string()];
        assert_eq!(
            requirements_text("o/r", "c", &paths, getter(&fs)).unwrap(),
            "x"
        );
        let empty = files(&[]);
        let e = requirements_text("o/r", "deadbeef", &paths, getter(&empty)).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("o/r") && msg.contains("deadbeef") && msg.contains("a.txt, b.txt"),
            "{msg}"
        );
        let e = requirements_text("o/r", "c", &paths, |_| Err("timed out".into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("a.txt") && e.contains("timed out"), "{e}");
        assert!(matches!(
            requirements_text("o/r", "c", &[], getter(&fs)),
            Err(SpecError::NoFilePaths { .. })
        ));
    }

    #[test]
    fn environment_yml_renames_only_top_name_lines() {
        let fs = files(&[(
            "ci/environment.yml",
            "name: mpl-dev\nchannels:\n  - conda-forge\ndependencies:\n  - name: x\n",
        )]);
        let paths = vec![
            "environment.yml".to_string(),
            "ci/environment.yml".to_string(),
        ];
        let text = environment_yml_text("o/r", "c", &paths, ENV_NAME, getter(&fs)).unwrap();
        assert_eq!(
            text,
            "name: testbed\nchannels:\n  - conda-forge\ndependencies:\n  - name: x\n"
        );
    }

    #[test]
    fn normalizes_paths() {
        assert_eq!(
            normalize_repo_path("a/./b/../c.txt").as_deref(),
            Some("a/c.txt")
        );
        assert_eq!(normalize_repo_path("../x"), None);
        assert_eq!(normalize_repo_path("/etc/passwd"), None);
        assert_eq!(normalize_repo_path("d/"), None);
    }
}
