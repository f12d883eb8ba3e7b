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

    // `[:PASSWORD]`, `[:PORT]` are help text (clap prints it verbatim), not intra-doc links.
    #[allow(rustdoc::broken_intra_doc_links)]
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
    /// "$TOKEN" | sha256sum`), optionally followed by the token's quotas: `max_running=N`
    /// (evaluations queued or running at once) and `max_body=SIZE` (e.g. 10MB); lines starting
    /// with # are comments.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// Largest request body, in bytes (a batch's JSON Lines included).
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_body: usize,

    /// Requests per second one token (or the anonymous caller on loopback) may make; more are
    /// answered with 429.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub rate_limit: u32,

    /// Disk the instance images may take with their own layers (e.g. 50G): after each job, the
    /// least recently used instance images beyond it are removed (those of running jobs never;
    /// base and environment images are kept). Without it every image is kept.
    #[arg(long, value_name = "SIZE", value_parser = swtbench_app::settings::parse_size)]
    pub image_cache_size: Option<u64>,

    /// `swtbench run`'s flags for every evaluation (after `--`).
    #[arg(last = true, value_name = "RUN FLAGS", allow_hyphen_values = true)]
    pub run_args: Vec<String>,
}
