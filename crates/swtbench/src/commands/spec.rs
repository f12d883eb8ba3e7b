//! `swtbench spec`: render each selected instance's Dockerfiles, scripts and image keys into
//! `OUT/<instance_id>/` without building or running anything ([`swtbench_app::spec`]).

use std::path::PathBuf;

use swtbench_app::spec::{render_specs, RenderSettings};
use swtbench_spec::Arch;

use crate::args::{load_predictions, DatasetArgs, EvalArgs};
use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

#[derive(Debug, clap::Args)]
pub struct SpecArgs {
    #[command(flatten)]
    pub dataset: DatasetArgs,

    /// Predictions whose patches the pred runs apply: `gold` (the gold test patch, also the
    /// default), a .json or a .jsonl file. Instances without a prediction are not rendered.
    #[arg(long, alias = "predictions_path", value_name = "gold|FILE")]
    pub predictions: Option<String>,

    #[command(flatten)]
    pub eval: EvalArgs,

    #[command(flatten)]
    pub mirror: crate::args::RepoMirrorArgs,

    #[command(flatten)]
    pub table: crate::args::SpecTableArgs,

    #[command(flatten)]
    pub env_provider: crate::args::EnvProviderArgs,

    /// Render for this host architecture instead of this machine's (x86_64 or arm64).
    #[arg(long, value_name = "ARCH", value_parser = swtbench_app::settings::parse_arch)]
    pub arch: Option<Arch>,

    /// Leave out the per-run re-install of the repository from the eval scripts.
    #[arg(long)]
    pub skip_eval_install: bool,

    /// Output directory; each instance is written to OUT/<instance_id>/.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

pub fn run(args: SpecArgs, printer: &Printer) -> CliResult {
    let options = args.eval.options(args.skip_eval_install)?;
    let table = args.table.load()?;
    let table = args.env_provider.apply(table, printer)?;
    let offline = args.dataset.is_offline();
    let files = args.mirror.files(offline)?;
    let host = args.arch.unwrap_or_else(Arch::host);

    let dataset = args.dataset.load_valid(printer)?;
    let spec = args.predictions.as_deref().unwrap_or("gold");
    let predictions = load_predictions(spec, &dataset, printer)?;
    printer.lines(&Vec::from_iter(swtbench_app::spec::missing_warning(
        &predictions,
    )));

    let settings = RenderSettings {
        host,
        options,
        out: args.out.clone(),
    };
    let summary = render_specs(
        &dataset.instances,
        &predictions,
        &table,
        &files,
        &settings,
        &mut |event| printer.lines(&event.lines()),
    )?;
    printer.info(&summary.text(&args.out));
    Ok(ExitCode::partial_if(summary.failed > 0))
}
