//! `swtbench envs show ID` (the Python environment an instance gets: `swtbench_app::spec`) and
//! `swtbench envs lock` (`swtbench_app::envlock::lock_to_file`); docs/environments.md.

use std::time::Duration;

use swtbench_app::envlock::{LockRequest, LockedEnv};
use swtbench_cli::commands::envs::{EnvsArgs, EnvsCommand, LockArgs, ShowArgs};

use crate::error::{CliResult, ExitCode};
use crate::inputs::{apply_env_choice, load_valid};
use crate::printer::Printer;

pub fn run(args: EnvsArgs, printer: &Printer) -> CliResult {
    match args.command {
        EnvsCommand::Show(a) => show(a, printer),
        EnvsCommand::Lock(a) => lock(*a, printer),
    }
}

fn lock(args: LockArgs, printer: &Printer) -> CliResult {
    let choice = args.env_provider.choice().for_lock()?;
    let dataset = load_valid(&args.dataset, printer)?;
    let table = apply_env_choice(args.table.load()?, &choice, printer)?;
    let offline = args.dataset.is_offline();
    let files = swtbench_app::tables::repo_files_from_env(args.repo_mirror.as_deref(), offline)?;
    let request = LockRequest {
        instances: &dataset.instances,
        table: &table,
        files: &files,
        ca_bundle: args.ca_bundle.as_deref(),
        timeout: Duration::from_secs(args.timeout.max(1)),
        output: &args.output,
    };
    let mut on_env = |e: &LockedEnv| printer.info(&e.line());
    let written = swtbench_app::envlock::lock_to_file(&request, &mut on_env)?;
    printer.info(&written.summary(&args.output));
    Ok(ExitCode::Success)
}

fn show(args: ShowArgs, printer: &Printer) -> CliResult {
    let offline = args.offline || swtbench_app::inputs::offline_from_env();
    let (dataset, split, id) = (&args.dataset, &args.split, &args.instance_id);
    let instance = swtbench_app::inputs::load_instance(dataset, split, id, offline)?;
    let choice = args.env_provider.choice().uv_by_default();
    let table = apply_env_choice(args.table.load()?, &choice, printer)?;
    let files = swtbench_app::tables::repo_files_from_env(args.repo_mirror.as_deref(), offline)?;
    let spec = swtbench_app::spec::instance_spec(&instance, &table, &files)?;
    printer.data(&swtbench_app::spec::describe_env(&instance, &spec));
    for w in &spec.env_warnings {
        printer.warn(w);
    }
    Ok(ExitCode::Success)
}
