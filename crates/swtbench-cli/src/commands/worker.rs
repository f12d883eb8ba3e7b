//! `swtbench worker`'s flags.

/// `swtbench worker --queue URL [FLAGS] [-- RUN FLAGS]`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Everything after `--` is `swtbench run`'s flags for every evaluation, as \
`swtbench serve` takes them: give the service's own (only --output-dir may differ), e.g.\n  \
swtbench worker --queue postgres://swtbench@db-host/swtbench --workers 2 -- --dataset lite \
--filter-swt --env-provider uv --no-network\n\
Several machines, leases and Slurm: docs/service.md."
)]
pub struct WorkerArgs {
    // `[:PASSWORD]`, `[:PORT]` are help text (clap prints it verbatim), not intra-doc links.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// The service's PostgreSQL queue (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE; no TLS;
    /// a password missing from it is taken from PGPASSWORD).
    #[arg(long, value_name = "URL")]
    pub queue: String,

    /// Worker threads evaluating in this process.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=256))]
    pub workers: u64,

    /// Seconds this worker holds a job without renewing its lease; a job whose worker died is
    /// queued again after it (at most 3 takes).
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(2..=3600))]
    pub lease: u64,

    /// Disk the instance images may take with their own layers (e.g. 50G): after each job, the
    /// least recently used instance images beyond it are removed (those of running jobs never;
    /// base and environment images are kept). Without it every image is kept.
    #[arg(long, value_name = "SIZE", value_parser = swtbench_app::settings::parse_size)]
    pub image_cache_size: Option<u64>,

    /// `swtbench run`'s flags for every evaluation (after `--`).
    #[arg(last = true, value_name = "RUN FLAGS", allow_hyphen_values = true)]
    pub run_args: Vec<String>,
}
