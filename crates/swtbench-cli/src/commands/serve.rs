//! `swtbench serve`'s flags.

use std::net::SocketAddr;
use std::path::PathBuf;

/// `swtbench serve [FLAGS] [-- RUN FLAGS]`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Everything after `--` is `swtbench run`'s flags for every evaluation \
(the dataset, --repo-mirror, --env-provider, --no-network, --timeout, --output-dir, …), e.g.\n  \
swtbench serve --workers 2 -- --dataset lite --filter-swt --env-provider uv --no-network\n\
The API, its errors and the clients: docs/service.md."
)]
pub struct ServeArgs {
    /// Address to listen on. Anything but a loopback address needs --token-file.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8787")]
    pub listen: SocketAddr,

    /// Worker threads evaluating in this process (0: accept and queue only, for `swtbench
    /// worker` processes on other hosts).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub workers: usize,

    /// The queue: a PostgreSQL database shared with `swtbench worker` processes on other hosts
    /// (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE; no TLS). Without it, the service's own
    /// SQLite file in <output dir>/service/.
    #[arg(long, value_name = "URL")]
    pub queue: Option<String>,

    /// Seconds a worker holds a job without renewing its lease; a job whose worker died is queued
    /// again after it (at most 3 takes).
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(2..=3600))]
    pub lease: u64,

    /// File of accepted bearer tokens, one SHA-256 digest (64 hex digits) per line (`printf %s
    /// "$TOKEN" | sha256sum`); lines starting with # are comments.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// Largest request body, in bytes (a batch's JSON Lines included).
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_body: usize,

    /// Requests per second one token (or the anonymous caller on loopback) may make; more are
    /// answered with 429.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub rate_limit: u32,

    /// `swtbench run`'s flags for every evaluation (after `--`).
    #[arg(last = true, value_name = "RUN FLAGS", allow_hyphen_values = true)]
    pub run_args: Vec<String>,
}

/// The digests of a token file's text: one SHA-256 digest in hex per line; blank lines and
/// comments (`#`) skipped. The error names the line.
pub fn token_digests(text: &str) -> Result<Vec<[u8; 32]>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let hex_part = line.split_whitespace().next().unwrap_or("");
        let bytes = hex::decode(hex_part)
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .ok_or_else(|| format!("line {}: not a SHA-256 digest (64 hex digits)", n + 1))?;
        out.push(bytes);
    }
    if out.is_empty() {
        return Err("no token digest in it".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_read_line_by_line_and_a_bad_line_is_named() {
        let d = "ab".repeat(32);
        let text = format!("# tokens\n\n{d}  -\n");
        assert_eq!(token_digests(&text).expect("digests"), vec![[0xab; 32]]);
        assert_eq!(
            token_digests("# only\n").expect_err("an error"),
            "no token digest in it"
        );
        assert_eq!(
            token_digests(&format!("{d}\nsecret\n")).expect_err("an error"),
            "line 2: not a SHA-256 digest (64 hex digits)"
        );
    }
}
