//! `swtbench slurm submit|status`'s flags, and the [`SubmitRequest`] they give.

use std::path::PathBuf;

use swtbench_app::slurm::{SbatchOptions, SubmitRequest};

use crate::args::RunArgs;

#[derive(Debug, clap::Args)]
pub struct SlurmArgs {
    #[command(subcommand)]
    pub command: SlurmCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum SlurmCommand {
    /// Write an array job (task K runs `swtbench run <run flags> --shard K/N`) and a merge job
    /// that runs after it (`--merge`), and submit them with sbatch. Submitting again submits
    /// only the shards that did not finish. Every node needs a container engine (Docker, or
    /// rootless Podman's socket in DOCKER_HOST) and the output directory on a shared file system.
    Submit(Box<SubmitArgs>),
    /// Each shard's progress (from the shared output tree) and its job's state (from the
    /// scheduler), for the run id given to `submit`.
    Status(StatusArgs),
}

#[derive(Debug, clap::Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub run: RunArgs,

    /// Number of shards (array tasks), N of --shard K/N.
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = swtbench_app::settings::parse_positive::<usize>)]
    pub shards: usize,

    /// sbatch --partition of every job.
    #[arg(long, value_name = "P")]
    pub partition: Option<String>,

    /// sbatch --time of every job (e.g. 04:00:00).
    #[arg(long, value_name = "T")]
    pub time: Option<String>,

    /// sbatch --cpus-per-task of each shard (the merge takes one).
    #[arg(long, value_name = "C", allow_negative_numbers = true,
          value_parser = swtbench_app::settings::parse_positive::<u32>)]
    pub cpus_per_task: Option<u32>,

    /// sbatch --mem of each shard (e.g. 64G; the containers' limits come on top of swtbench's
    /// own ~50 MB only when the engine runs inside the job's cgroup, as rootless Podman does).
    #[arg(long, value_name = "M")]
    pub mem: Option<String>,

    /// sbatch --account of every job.
    #[arg(long, value_name = "A")]
    pub account: Option<String>,

    /// sbatch --qos of every job.
    #[arg(long, value_name = "Q")]
    pub qos: Option<String>,

    /// Another #SBATCH option of the shards, as sbatch takes it (repeatable), e.g.
    /// `--sbatch-arg=--constraint=docker`.
    #[arg(long, value_name = "OPTION", allow_hyphen_values = true)]
    pub sbatch_arg: Vec<String>,

    /// Only write the scripts (under <output dir>/slurm/<run id>/) and say how to submit them.
    #[arg(long)]
    pub print: bool,

    /// The swtbench binary as the nodes see it (default: this one).
    #[arg(long, value_name = "PATH")]
    pub swtbench: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The run id given to `slurm submit`.
    #[arg(long, alias = "run_id", value_name = "RUN_ID")]
    pub run_id: String,

    /// The output directory given to `slurm submit`.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub output_dir: PathBuf,

    /// Print the status as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

impl SubmitArgs {
    /// The submission of the predictions' `model` with the checked `run_flags`.
    pub fn request(&self, model: String, run_flags: Vec<String>) -> SubmitRequest {
        let run = &self.run;
        SubmitRequest {
            run_id: run.run_id.clone(),
            output_dir: run.output_dir.clone(),
            model,
            shards: self.shards,
            binary: self.swtbench.clone(),
            run_flags,
            options: SbatchOptions {
                partition: self.partition.clone(),
                time: self.time.clone(),
                cpus_per_task: self.cpus_per_task,
                mem: self.mem.clone(),
                account: self.account.clone(),
                qos: self.qos.clone(),
                extra: self.sbatch_arg.clone(),
            },
            print: self.print,
        }
    }
}
