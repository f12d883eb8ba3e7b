//! `swtbench images build|list|rm|check|push|pull|base|python`'s flags, and the options of an image build
//! they give.

use std::path::PathBuf;

use swtbench_app::images::BuildOptions;
use swtbench_plan::settings::{CacheLevel, ImageKind};

use crate::args::{DatasetArgs, RepoMirrorArgs};

#[derive(Debug, clap::Args)]
pub struct ImagesArgs {
    #[command(subcommand)]
    pub command: ImagesCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum ImagesCommand {
    /// Build the base, env and instance images of the selected instances (kept: not removed
    /// after, whatever a run's cache level).
    Build(Box<BuildArgs>),
    /// List the images swtbench built (and labelled base images), by kind.
    List(ListArgs),
    /// Remove images swtbench built, by kind or run id.
    Rm(RmArgs),
    /// Which images of the selected instances are present locally, which are in the registry
    /// (manifest look-ups, no pull), and which would be built.
    Check(Box<TransferArgs>),
    /// Push the local images of the selected instances to --registry.
    Push(Box<TransferArgs>),
    /// Pull the images of the selected instances that are missing locally from --registry.
    Pull(Box<TransferArgs>),
    /// Make a Debian bookworm base image without any registry (debootstrap + docker import;
    /// needs root): the fixture benchmark's base by default.
    Base(MakeBaseArgs),
    /// Make the Python images `--env-provider uv` builds on (python:<version>-slim-bookworm)
    /// from the CPython builds on this machine, without Docker Hub.
    Python(MakePythonArgs),
}

#[derive(Debug, clap::Args)]
pub struct MakeBaseArgs {
    /// The image to make.
    #[arg(value_name = "IMAGE", default_value = "swtbench-fixture-base:bookworm")]
    pub image: String,

    /// Comma-separated Debian packages instead of the fixture's own (python3, git, gcc, ...).
    #[arg(long, value_name = "LIST")]
    pub packages: Option<String>,

    /// No `nonroot` user in the image.
    #[arg(long)]
    pub no_nonroot: bool,

    /// Make it again even when an image of the same recipe exists.
    #[arg(long)]
    pub force: bool,
}

impl MakeBaseArgs {
    /// The recipe's own arguments.
    pub fn script_args(&self) -> Vec<String> {
        let mut a = Vec::new();
        if self.force {
            a.push("--force".to_string());
        }
        if let Some(p) = &self.packages {
            a.extend(["--packages".to_string(), p.clone()]);
        }
        if self.no_nonroot {
            a.push("--no-nonroot".to_string());
        }
        a.push(self.image.clone());
        a
    }
}

#[derive(Debug, clap::Args)]
pub struct MakePythonArgs {
    /// major.minor (3.9) or a full version (3.9.18); default: every version under --from.
    #[arg(value_name = "VERSION")]
    pub versions: Vec<String>,

    /// A directory of CPython builds, one per version (default: `pyenv root`/versions).
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,

    /// Image name; `{version}` is major.minor.
    #[arg(
        long,
        value_name = "TEMPLATE",
        default_value = "python:{version}-slim-bookworm"
    )]
    pub tag: String,

    /// Make them again even when an image of the same recipe exists.
    #[arg(long)]
    pub force: bool,
}

impl MakePythonArgs {
    /// The recipe's own arguments.
    pub fn script_args(&self) -> Vec<String> {
        let mut a = Vec::new();
        if self.force {
            a.push("--force".to_string());
        }
        if let Some(f) = &self.from {
            a.extend(["--from".to_string(), f.display().to_string()]);
        }
        a.extend(["--tag".to_string(), self.tag.clone()]);
        a.extend(self.versions.iter().cloned());
        a
    }
}

#[derive(Debug, clap::Args)]
pub struct TransferArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    // `[/NAMESPACE]` is help text (clap prints it verbatim), not an intra-doc link.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// Registry (HOST[:PORT][/NAMESPACE]) holding swtbench's images as REF/<image key>.
    #[arg(long, value_name = "REF")]
    pub registry: String,

    /// Images up to this layer: base, env or instance.
    #[arg(long, value_name = "LEVEL", default_value = "instance")]
    pub level: CacheLevel,

    /// Transfers (or look-ups) at the same time.
    #[arg(long, value_name = "N", default_value_t = 4, allow_negative_numbers = true,
          value_parser = swtbench_app::settings::parse_positive::<usize>)]
    pub workers: usize,

    #[command(flatten)]
    pub mirror: RepoMirrorArgs,

    #[command(flatten)]
    pub table: crate::args::SpecTableArgs,

    /// The environments as `run` and `images build` make them with the same flags (uv
    /// environments, locks, build files): their images have other keys.
    #[command(flatten)]
    pub env_provider: crate::args::EnvProviderArgs,

    /// One JSON object per line on stdout (check) instead of a table.
    #[arg(long)]
    pub json: bool,

    /// Write the pull/push events (check: the retried look-ups) as JSON Lines to FILE.
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// Build up to this layer: base, env or instance.
    #[arg(long, value_name = "LEVEL", default_value = "instance")]
    pub level: CacheLevel,

    /// Image builds at the same time.
    #[arg(long, alias = "build_workers", value_name = "N", default_value_t = 2, allow_negative_numbers = true,
          value_parser = swtbench_app::settings::parse_positive::<usize>)]
    pub build_workers: usize,

    /// Rebuild images that exist (once each, without the layer cache).
    #[arg(long, alias = "force_rebuild")]
    pub force_rebuild: bool,

    /// Build with the engine's Dockerfile builder, a layer per instruction (see `run
    /// --step-builds`).
    #[arg(long)]
    pub step_builds: bool,

    #[command(flatten)]
    pub mirror: RepoMirrorArgs,

    #[command(flatten)]
    pub table: crate::args::SpecTableArgs,

    #[command(flatten)]
    pub env_provider: crate::args::EnvProviderArgs,

    /// CA bundle passed into builds (default: $SSL_CERT_FILE when it names a file).
    #[arg(long, value_name = "FILE")]
    pub ca_bundle: Option<PathBuf>,

    /// Base directory of image_build_logs/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub output_dir: PathBuf,

    #[command(flatten)]
    pub registry: crate::args::RegistryArgs,

    /// Write the image events (builds, pulls, pushes) as JSON Lines to FILE.
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,

    /// Build the images of the K-th of N parts of the selected instances (like 2/8): instances
    /// that share an env image are in one part, parts of about equal build work, the same on
    /// every machine.
    #[arg(long, value_name = "K/N", value_parser = swtbench_plan::settings::Shard::parse)]
    pub shard: Option<swtbench_plan::settings::Shard>,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Only images of this kind: base, env or instance.
    #[arg(long, value_name = "KIND", value_parser = swtbench_app::settings::parse_image_kind)]
    pub kind: Option<ImageKind>,

    /// One JSON object per line on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct RmArgs {
    /// Remove images of these kinds (base, env, instance).
    #[arg(long, value_name = "KIND", value_parser = swtbench_app::settings::parse_image_kind, num_args = 1..)]
    pub kind: Vec<ImageKind>,

    /// Remove the temporary images of this run id (images above its cache level).
    #[arg(long, alias = "run_id", value_name = "RUN_ID")]
    pub run_id: Option<String>,

    /// Remove every image with a swtbench kind label (including labelled base images).
    #[arg(long, conflicts_with_all = ["kind", "run_id"])]
    pub all: bool,

    /// Remove even when a container still uses the image.
    #[arg(long)]
    pub force: bool,

    /// Only list what would be removed.
    #[arg(long)]
    pub dry_run: bool,
}

impl BuildArgs {
    /// The options of the build: the build network (`--ca-bundle`) checked first, then the
    /// registry.
    pub fn options(&self) -> swtbench_app::Result<BuildOptions> {
        let network = swtbench_app::env_vars::checked_build_network(self.ca_bundle.as_deref())?;
        Ok(BuildOptions {
            level: self.level,
            build_workers: self.build_workers,
            force_rebuild: self.force_rebuild,
            repo_mirror: self.mirror.repo_mirror.clone(),
            output_dir: self.output_dir.clone(),
            network,
            registry: self.registry.settings()?,
            step_builds: self.step_builds,
        })
    }
}
