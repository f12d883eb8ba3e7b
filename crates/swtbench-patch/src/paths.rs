//! Turning a path written by a model into a repository-relative path, or refusing it.
//!
//! The original resolves model paths against `/testbed`, so `/testbed/x.py`, `./x.py` and `x.py`
//! name the same file; anything that leaves the repository (`..`, other absolute paths) or
//! touches `.git` is refused here. Pure.

use crate::error::AttemptError;

/// Where the repository lives inside the instance containers.
pub const TESTBED: &str = "/testbed";

/// The normalised repository-relative form of `raw` (`/`-separated, no `.` or empty segments).
pub fn repo_path(raw: &str) -> Result<String, AttemptError> {
    let unsafe_path = |why: &str| AttemptError::UnsafePath {
        path: raw.to_string(),
        why: why.to_string(),
    };
    if raw.chars().any(|c| c == '\0' || c == '\n' || c == '\r') {
        return Err(unsafe_path("contains a control character"));
    }
    let rel = if let Some(rest) = raw.strip_prefix(TESTBED) {
        match rest.strip_prefix('/') {
            Some(r) => r,
            None if rest.is_empty() => "",
            None => return Err(unsafe_path("absolute path outside the repository")),
        }
    } else if raw.starts_with('/') {
        return Err(unsafe_path("absolute path outside the repository"));
    } else {
        raw
    };
    let mut parts = Vec::new();
    for seg in rel.split('/') {
        match seg {
            "" | "." => {}
            ".." => return Err(unsafe_path("leaves the repository")),
            ".git" => return Err(unsafe_path("inside .git")),
            s => parts.push(s),
        }
    }
    if parts.is_empty() || rel.ends_with('/') {
        return Err(unsafe_path("does not name a file"));
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_and_refuses() {
        assert_eq!(repo_path("tests/test_x.py").unwrap(), "tests/test_x.py");
        assert_eq!(repo_path("./tests//x.py").unwrap(), "tests/x.py");
        assert_eq!(repo_path("/testbed/tests/x.py").unwrap(), "tests/x.py");
        assert_eq!(repo_path("tests/x.py ").unwrap(), "tests/x.py ");
        for bad in [
            "../x",
            "a/../../x",
            "/etc/passwd",
            "/testbedx/y",
            ".git/config",
            "",
            "d/",
            "x\r",
        ] {
            assert!(repo_path(bad).is_err(), "{bad}");
        }
    }
}
