//! `swtbench clean --run-id R`: removes what a run left behind (after `kill -9`, a third Ctrl-C
//! or a crash): its containers and its temporary images (images above its cache level), found by
//! the `swtbench.run_id` label. Outputs on disk are never touched.

use anyhow::anyhow;
use swtbench_backend::labels::{LabelFilter, KIND, RUN_ID};
use swtbench_backend::ContainerBackend;
use swtbench_runner::session::{Liveness, Session, SESSION};

use super::run::{connect_engine, runtime};
use crate::error::{CliError, CliResult, ExitCode};
use crate::printer::Printer;

#[derive(Debug, clap::Args)]
pub struct CleanArgs {
    /// The run whose containers and temporary images are removed.
    #[arg(long, alias = "run_id", value_name = "RUN_ID")]
    pub run_id: String,

    /// Keep the run's temporary images; remove only containers.
    #[arg(long)]
    pub keep_images: bool,

    /// Only list what would be removed.
    #[arg(long)]
    pub dry_run: bool,

    /// Also remove containers of a swtbench process that is still running (or whose host
    /// cannot be checked).
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: CleanArgs, printer: &Printer) -> CliResult {
    if args.run_id.trim().is_empty() {
        return Err(CliError::input(anyhow!("--run-id must not be empty")));
    }
    let rt = runtime()?;
    let backend = rt.block_on(connect_engine())?;
    let filter = LabelFilter::new(RUN_ID, args.run_id.as_str());
    let containers = rt
        .block_on(backend.containers_with_label(&filter))
        .map_err(CliError::environment)?;
    let mut failed = 0usize;
    let me = Session::current();
    for c in &containers {
        let name = c.names.first().cloned().unwrap_or_else(|| c.id.clone());
        let owner = c.labels.get(SESSION);
        let live = owner.map(|l| me.liveness(l));
        if !args.force && matches!(live, Some(Liveness::Alive | Liveness::Unknown)) {
            let who = owner
                .and_then(|l| Session::pid_of(l))
                .map(|p| format!("pid {p}"))
                .unwrap_or_else(|| "another host".into());
            printer.warn(&format!(
                "container {name} belongs to a swtbench process that may still be running ({who}); \
                 left alone (--force removes it)"
            ));
            continue;
        }
        if args.dry_run {
            printer.data(&format!("container {name}"));
            continue;
        }
        match rt.block_on(backend.container_remove(&c.id)) {
            Ok(_) => printer.data(&format!("removed container {name}")),
            Err(e) => {
                failed += 1;
                printer.warn(&format!("could not remove container {name}: {e}"));
            }
        }
    }
    let mut images = if args.keep_images {
        Vec::new()
    } else {
        rt.block_on(backend.images_with_label(&filter))
            .map_err(CliError::environment)?
    };
    // Children first (instance before env before base).
    let rank = |k: Option<&String>| match k.map(String::as_str) {
        Some("instance") => 0,
        Some("env") => 1,
        _ => 2,
    };
    images.sort_by_key(|i| rank(i.labels.get(KIND)));
    for i in &images {
        let name = i.tags.first().cloned().unwrap_or_else(|| i.id.clone());
        if args.dry_run {
            printer.data(&format!("image {name}"));
            continue;
        }
        match rt.block_on(super::images::remove_image(&backend, i, false)) {
            Ok(()) => printer.data(&format!("removed image {name}")),
            Err(e) => {
                failed += 1;
                printer.warn(&format!("could not remove image {name}: {e}"));
            }
        }
    }
    printer.info(&format!(
        "run {}: {} container(s), {} image(s) {}",
        args.run_id,
        containers.len(),
        images.len(),
        if args.dry_run {
            "would be removed"
        } else {
            "found"
        }
    ));
    Ok(if failed > 0 {
        ExitCode::Partial
    } else {
        ExitCode::Success
    })
}
