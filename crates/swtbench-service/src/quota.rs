//! Bearer tokens and their quotas. `--token-file` holds one token per line as its SHA-256 digest
//! (tokens are never stored in clear), optionally followed by the token's limits:
//!
//! ```text
//! # team A: at most 4 evaluations queued or running, request bodies up to 10 MB
//! 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 max_running=4 max_body=10MB
//! # a CI job, no limits of its own (the service's --max-body and --rate-limit apply)
//! 60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752  -
//! ```
//!
//! Words without `=` are ignored (the `-` that `sha256sum` prints after the digest), so files
//! made for earlier versions stay valid. [`Running`] counts each token's unfinished evaluations
//! for `max_running`.

use std::collections::{BTreeSet, HashMap};

/// What one token may do beyond the service's own bounds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Evaluations of this token queued or running at once; more are refused (429
    /// `quota_exceeded`).
    pub max_running: Option<usize>,
    /// The largest request body of this token, in bytes (never above the service's
    /// `--max-body`); larger ones get 413 `body_too_large`.
    pub max_body: Option<usize>,
}

/// One accepted token: its SHA-256 digest and its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub digest: [u8; 32],
    pub limits: Limits,
}

impl Token {
    /// A token without limits of its own.
    pub fn new(digest: [u8; 32]) -> Token {
        Token {
            digest,
            limits: Limits::default(),
        }
    }
}

/// Why a token file cannot be used; each names its line (1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenFileError {
    #[error("line {line}: not a SHA-256 digest (64 hex digits)")]
    NotADigest { line: usize },
    #[error(
        "line {line}: unknown limit {name:?} (the limits are max_running=N and max_body=SIZE)"
    )]
    UnknownLimit { line: usize, name: String },
    #[error("line {line}: max_running={value:?} is not a whole number of at least 1")]
    BadRunning { line: usize, value: String },
    #[error(
        "line {line}: max_body={value:?} is not a size (bytes, or a number with kB, MB, GB, KiB, \
         MiB or GiB)"
    )]
    BadSize { line: usize, value: String },
    #[error("line {line}: {name} is given twice")]
    Repeated { line: usize, name: String },
    #[error("line {line}: the same token as line {first}")]
    Duplicate { line: usize, first: usize },
    #[error("no token digest in it")]
    Empty,
}

/// The tokens of a token file's text: one digest per line with its limits; blank lines and
/// comments (`#`) skipped.
pub fn parse_token_file(text: &str) -> Result<Vec<Token>, TokenFileError> {
    let mut out: Vec<(usize, Token)> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = n + 1;
        let raw = raw.trim();
        if raw.is_empty() || raw.starts_with('#') {
            continue;
        }
        let mut words = raw.split_whitespace();
        let digest = words
            .next()
            .and_then(|w| hex::decode(w).ok())
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .ok_or(TokenFileError::NotADigest { line })?;
        let mut limits = Limits::default();
        for word in words {
            let Some((name, value)) = word.split_once('=') else {
                continue;
            };
            let repeated = || TokenFileError::Repeated {
                line,
                name: name.to_string(),
            };
            match name {
                "max_running" => {
                    let n = value
                        .parse::<usize>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| TokenFileError::BadRunning {
                            line,
                            value: value.to_string(),
                        })?;
                    if limits.max_running.replace(n).is_some() {
                        return Err(repeated());
                    }
                }
                "max_body" => {
                    let n = parse_size(value).ok_or_else(|| TokenFileError::BadSize {
                        line,
                        value: value.to_string(),
                    })?;
                    if limits.max_body.replace(n).is_some() {
                        return Err(repeated());
                    }
                }
                other => {
                    return Err(TokenFileError::UnknownLimit {
                        line,
                        name: other.to_string(),
                    })
                }
            }
        }
        if let Some((first, _)) = out.iter().find(|(_, t)| t.digest == digest) {
            return Err(TokenFileError::Duplicate {
                line,
                first: *first,
            });
        }
        out.push((line, Token { digest, limits }));
    }
    if out.is_empty() {
        return Err(TokenFileError::Empty);
    }
    Ok(out.into_iter().map(|(_, t)| t).collect())
}

/// A size in bytes: a whole number, optionally followed by `B`, `kB`/`KB`, `MB`, `GB` (powers of
/// 1000) or `KiB`, `MiB`, `GiB` (powers of 1024). Zero is refused.
pub fn parse_size(text: &str) -> Option<usize> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    let n: usize = number.parse().ok()?;
    let factor: usize = match unit {
        "" | "B" => 1,
        "kB" | "KB" => 1000,
        "MB" => 1000 * 1000,
        "GB" => 1000 * 1000 * 1000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(factor).filter(|n| *n > 0)
}

/// The evaluations each caller submitted that were not final when last looked at, for
/// `max_running`. Kept by the service process: evaluations queued before it started do not count.
#[derive(Debug, Default)]
pub struct Running {
    by_caller: HashMap<String, BTreeSet<String>>,
}

/// A submission over its caller's `max_running`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverQuota {
    pub limit: usize,
    /// The caller's evaluations queued or running now.
    pub unfinished: usize,
    /// The evaluations the submission would add.
    pub adding: usize,
}

impl Running {
    /// Checks that `caller` may add the evaluations `adding` (ids of evaluations that will be
    /// queued or running once submitted) under `limit`: forgets those of its evaluations that
    /// `is_final` says are over, then counts the rest and the new ones not among them.
    pub fn check(
        &mut self,
        caller: &str,
        limit: usize,
        adding: &[String],
        is_final: &dyn Fn(&str) -> bool,
    ) -> Result<(), OverQuota> {
        let mine = self.by_caller.entry(caller.to_string()).or_default();
        mine.retain(|id| !is_final(id));
        let adding: BTreeSet<&String> = adding.iter().filter(|id| !mine.contains(*id)).collect();
        if mine.len() + adding.len() > limit {
            return Err(OverQuota {
                limit,
                unfinished: mine.len(),
                adding: adding.len(),
            });
        }
        Ok(())
    }

    /// Records evaluations `ids` as `caller`'s.
    pub fn add(&mut self, caller: &str, ids: impl IntoIterator<Item = String>) {
        self.by_caller
            .entry(caller.to_string())
            .or_default()
            .extend(ids);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn todays_files_stay_valid_and_limits_are_read() {
        let d = "ab".repeat(32);
        let e = "cd".repeat(32);
        let text = format!("# tokens\n\n{d}  -\n{e} max_running=4 max_body=10MB\n");
        let tokens = parse_token_file(&text).expect("tokens");
        assert_eq!(tokens[0], Token::new([0xab; 32]));
        assert_eq!(
            tokens[1].limits,
            Limits {
                max_running: Some(4),
                max_body: Some(10_000_000)
            }
        );
    }

    #[test]
    fn a_bad_line_is_named() {
        let d = "ab".repeat(32);
        let cases = [
            ("# only\n".to_string(), "no token digest in it"),
            (
                format!("{d}\nsecret\n"),
                "line 2: not a SHA-256 digest (64 hex digits)",
            ),
            (
                format!("{d} max_jobs=3\n"),
                "line 1: unknown limit \"max_jobs\" (the limits are max_running=N and max_body=SIZE)",
            ),
            (
                format!("{d} max_running=0\n"),
                "line 1: max_running=\"0\" is not a whole number of at least 1",
            ),
            (
                format!("{d} max_body=10XB\n"),
                "line 1: max_body=\"10XB\" is not a size (bytes, or a number with kB, MB, GB, KiB, MiB or GiB)",
            ),
            (
                format!("{d} max_body=1 max_body=2\n"),
                "line 1: max_body is given twice",
            ),
            (format!("{d}\n\n{d}\n"), "line 3: the same token as line 1"),
        ];
        for (text, want) in cases {
            assert_eq!(
                parse_token_file(&text).expect_err("an error").to_string(),
                want
            );
        }
    }

    #[test]
    fn sizes_have_their_units() {
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("2kB"), Some(2000));
        assert_eq!(parse_size("3MiB"), Some(3 << 20));
        assert_eq!(parse_size("1GB"), Some(1_000_000_000));
        for bad in ["", "MB", "0", "1.5MB", "-1", "1 MB", "1mb"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_callers_finished_evaluations_free_its_quota() {
        let mut r = Running::default();
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let none_final = |_: &str| false;
        assert_eq!(r.check("a", 2, &ids(&["e1", "e2"]), &none_final), Ok(()));
        r.add("a", ids(&["e1", "e2"]));
        assert_eq!(
            r.check("a", 2, &ids(&["e3"]), &none_final),
            Err(OverQuota {
                limit: 2,
                unfinished: 2,
                adding: 1
            })
        );
        // The same evaluation again adds nothing; another caller has its own count.
        assert_eq!(r.check("a", 2, &ids(&["e2"]), &none_final), Ok(()));
        assert_eq!(r.check("b", 2, &ids(&["e3"]), &none_final), Ok(()));
        // e1 finished: room for one more.
        let e1_final = |id: &str| id == "e1";
        assert_eq!(r.check("a", 2, &ids(&["e3"]), &e1_final), Ok(()));
        r.add("a", ids(&["e3"]));
        assert_eq!(
            r.check("a", 2, &ids(&["e1"]), &e1_final)
                .map_err(|e| e.unfinished),
            Err(2)
        );
    }
}
