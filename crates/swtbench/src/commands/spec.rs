//! `swtbench spec`: render each selected instance's Dockerfiles, scripts and image keys into
//! `OUT/<instance_id>/` without building or running anything ([`swtbench_app::spec`]).

use swtbench_app::spec::{render_specs, RenderSettings};
use swtbench_cli::commands::spec::SpecArgs;
use swtbench_spec::Arch;

use crate::error::{CliResult, ExitCode};
use crate::inputs::{apply_env_provider, load_predictions, load_valid};
use crate::printer::Printer;

pub fn run(args: SpecArgs, printer: &Printer) -> CliResult {
    let options = args.eval.options(args.skip_eval_install)?;
    let table = args.table.load()?;
    let table = apply_env_provider(&args.env_provider, table, printer)?;
    let offline = args.dataset.is_offline();
    let files = args.mirror.files(offline)?;
    let host = args.arch.unwrap_or_else(Arch::host);

    let dataset = load_valid(&args.dataset, printer)?;
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
