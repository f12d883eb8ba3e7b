//! What every job of `swtbench serve` and `swtbench worker` is evaluated with: `run`'s flags
//! given after `--` (with the configuration file's `[run]` table as their defaults) resolved into
//! a [`swtbench_service::Template`], the same way on every host.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::anyhow;
use clap::{CommandFactory, FromArgMatches, Parser};
use swtbench_app::evaluate::{Engine, Request};
use swtbench_app::limits::HostFacts;
use swtbench_cli::args::RunArgs;
use swtbench_cli::commands::verify::{FreshRun, FreshRunCommand};
use swtbench_cli::config;
use swtbench_cli::settings::settings_from;
use swtbench_service::{JobSpec, ServeError, Template};

use crate::error::CliError;
use crate::evaluation::Inputs;
use crate::inputs::{apply_env_provider, load_valid};
use crate::printer::Printer;

/// What every job is evaluated with, from `run`'s flags given after `--` (`serve`'s and
/// `worker`'s): the flags checked, the spec table and the dataset loaded, and the settings
/// context that makes the jobs' content keys. The context leaves out `--output-dir`, the one
/// flag that may differ between the service and its workers on other hosts.
pub(crate) fn template(run_args: &[String], printer: &Printer) -> Result<ServeTemplate, CliError> {
    let base = parse_run(run_args, "gold", "serve")?;
    refuse_batch_flags(&base)?;
    settings_from(&base, &HostFacts::default())?;
    let table = apply_env_provider(&base.env_provider, base.table.load()?, printer)?;
    let dataset = load_valid(&base.dataset, printer)?;
    let ids: BTreeSet<String> = dataset
        .instances
        .iter()
        .map(|i| i.instance_id.to_string())
        .collect();
    let context = swtbench_core::hash::sha256_hex(format!(
        "swtbench {}\n{}\n{}",
        env!("CARGO_PKG_VERSION"),
        dataset.name,
        settings_flags(run_args).join("\0")
    ));
    Ok(ServeTemplate {
        run_args: run_args.to_vec(),
        dataset_name: base.dataset.dataset.clone(),
        table,
        dataset,
        ids,
        context,
        dir: base.output_dir.join(swtbench_service::SERVICE_DIR),
        logs: base.output_dir.join(swtbench_core::layout::LOGS_ROOT_DIR),
    })
}

/// The run flags that make a job's settings: all but `--output-dir` (where this host writes).
fn settings_flags(run_args: &[String]) -> Vec<&str> {
    let mut out = Vec::with_capacity(run_args.len());
    let mut skip_value = false;
    for a in run_args {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        let flag = a.split('=').next().unwrap_or_default().replace('_', "-");
        if flag == "--output-dir" {
            skip_value = !a.contains('=');
            continue;
        }
        out.push(a.as_str());
    }
    out
}

pub(crate) fn serve_error(e: ServeError) -> swtbench_app::Error {
    match e {
        ServeError::NoToken { .. } => swtbench_app::Error::input(e).with_hint(
            "give --token-file FILE (SHA-256 digests of the tokens), or listen on 127.0.0.1",
        ),
        ServeError::Queue(swtbench_service::QueueError::Busy { .. }) => {
            swtbench_app::Error::input(e)
                .with_hint("stop the other service, or give another --output-dir after --")
        }
        ServeError::Bind { .. } => {
            swtbench_app::Error::environment(e).with_hint("choose another --listen address or port")
        }
        ServeError::Queue(swtbench_service::QueueError::Location { .. }) => {
            swtbench_app::Error::input(e)
        }
        ServeError::Queue(swtbench_service::QueueError::Postgres { .. }) => {
            swtbench_app::Error::environment(e).with_hint(
                "check that the database server is reachable from this host, and the URL's user, \
                 password (or PGPASSWORD) and database",
            )
        }
        _ => swtbench_app::Error::environment(e),
    }
}

/// `run`'s arguments from the service's run flags, with `predictions` and `run_id`. The
/// service's own default: every image is kept (`--cache-level instance`), so that the next
/// prediction of an instance finds its image warm, unless the flags say otherwise.
pub(crate) fn parse_run(
    run_args: &[String],
    predictions: &str,
    run_id: &str,
) -> swtbench_app::Result<RunArgs> {
    let required = [
        "swtbench",
        "run",
        "--predictions",
        predictions,
        "--run-id",
        run_id,
    ];
    let argv = required
        .into_iter()
        .map(str::to_string)
        .chain(run_args.iter().cloned());
    // The configuration file's `[run]` table (and its top-level run flags) are the defaults of
    // these flags, as of `swtbench run`'s.
    let (parsed, file_cache_level) = match crate::config_file::loaded()
        .and_then(|c| config::for_command(c, &swtbench_cli::Cli::command(), "run"))
    {
        Some(part) => {
            let (cmd, applied) = crate::config_file::apply(FreshRun::command(), &part)?;
            let from_file = applied.iter().any(|a| a.id == "cache_level");
            let parsed = cmd
                .try_get_matches_from(argv)
                .and_then(|m| FreshRun::from_arg_matches(&m));
            // A value of the file that the flag rejects names the file and the key.
            if let Some(err) = parsed
                .as_ref()
                .err()
                .and_then(|e| config::blame(e, &applied, &part))
            {
                return Err(crate::config_file::invalid(err));
            }
            (parsed, from_file)
        }
        None => (FreshRun::try_parse_from(argv), false),
    };
    match parsed {
        Ok(FreshRun {
            command: FreshRunCommand::Run(run),
            ..
        }) => {
            let mut run = *run;
            let cache_level_given = file_cache_level
                || run_args
                    .iter()
                    .any(|a| a.starts_with("--cache-level") || a.starts_with("--cache_level"));
            if !cache_level_given {
                run.cache_level = swtbench_plan::settings::CacheLevel::Instance;
            }
            Ok(run)
        }
        Err(e) => Err(swtbench_app::Error::input(anyhow!(
            "the run flags after `--`: {}",
            e.to_string().lines().next().unwrap_or_default()
        ))
        .with_hint("they are `swtbench run`'s flags (swtbench run --help), without --predictions and --run-id")),
    }
}

/// The flags of a batch run that have no meaning for a service.
pub(crate) fn refuse_batch_flags(run: &RunArgs) -> swtbench_app::Result<()> {
    let given: Vec<&str> = [
        ("--dry-run", run.dry_run),
        ("--repeat", run.repeat > 1),
        ("--shard", run.shard.is_some()),
        ("--merge", run.merge),
        ("--skip-eval", run.skip_eval),
    ]
    .into_iter()
    .filter(|(_, on)| *on)
    .map(|(f, _)| f)
    .collect();
    match given.is_empty() {
        true => Ok(()),
        false => Err(swtbench_app::Error::input(anyhow!(
            "{} cannot be given to the service: it evaluates each prediction as it comes",
            given.join(", ")
        ))
        .with_hint("leave them out of the run flags after `--` (and out of the configuration file's [run] table)")),
    }
}

/// What every job is evaluated with.
pub(crate) struct ServeTemplate {
    run_args: Vec<String>,
    dataset_name: String,
    table: swtbench_spec::SpecTable,
    dataset: swtbench_data::dataset::LoadedDataset,
    ids: BTreeSet<String>,
    context: String,
    /// This host's directory of the service's files (`<output dir>/service`).
    pub(crate) dir: PathBuf,
    logs: PathBuf,
}

impl Template for ServeTemplate {
    fn has_instance(&self, instance_id: &str) -> bool {
        self.ids.contains(instance_id)
    }

    fn dataset_name(&self) -> &str {
        &self.dataset_name
    }

    fn context(&self) -> &str {
        &self.context
    }

    fn request(
        &self,
        engine: &Engine,
        spec: &JobSpec,
        run_id: &str,
    ) -> swtbench_app::Result<Request> {
        // The prediction is a file of the job, named by its run id (never by a name it sent).
        let dir = self.dir.join("predictions");
        let path = dir.join(format!("{run_id}.jsonl"));
        let line = serde_json::json!({
            "instance_id": spec.instance_id,
            "model_name_or_path": spec.model,
            "model_patch": spec.model_patch,
        });
        std::fs::create_dir_all(&dir)
            .and_then(|_| std::fs::write(&path, format!("{line}\n")))
            .map_err(|e| {
                swtbench_app::Error::environment(anyhow!("writing {}: {e}", path.display()))
            })?;
        let file = path.to_string_lossy().into_owned();
        let mut args = parse_run(&self.run_args, &file, run_id)?;
        args.dataset.instance_ids = vec![spec.instance_id.clone()];
        if spec.no_coverage {
            args.eval.compute_coverage = None;
            args.eval.no_coverage = true;
        }
        let mut settings = settings_from(&args, &engine.host_facts())?;
        // The worker sweeps what ended processes left after each verdict (and the service when
        // it starts): not on the verdict's path.
        settings.sweep_leftovers = false;
        let predictions = swtbench_app::inputs::load_predictions_for(&file, &self.dataset)?;
        let inputs = Inputs {
            predictions,
            table: self.table.clone(),
            dataset: self.dataset.clone(),
        };
        // The run's HTML page, which GET /v1/evaluations/{id}/report.html serves.
        let html = !args.no_html;
        crate::evaluation::request(&args, settings, inputs, html)
    }

    fn logs_root(&self) -> PathBuf {
        self.logs.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_flags_are_the_run_flags_but_the_output_directory() {
        let args: Vec<String> = [
            "--dataset",
            "lite",
            "--output-dir",
            "/a",
            "--timeout",
            "20",
            "--output_dir=/b",
            "--no-network",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            settings_flags(&args),
            ["--dataset", "lite", "--timeout", "20", "--no-network"]
        );
    }
}
