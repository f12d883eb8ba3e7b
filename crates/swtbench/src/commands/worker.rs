//! `swtbench worker`: joins the worker pool of a service's PostgreSQL queue from any host
//! (`swtbench_service::pool::run_workers`), with the run flags after `--` resolved as `serve`
//! resolves them ([`crate::service_jobs::template`]).

use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use swtbench_cli::commands::worker::WorkerArgs;
use swtbench_service::pool::{run_workers, WorkerConfig};
use swtbench_service::{Pool, QueueLocation};

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;
use crate::service_jobs::{serve_error, template};

pub fn run(args: WorkerArgs, printer: &Printer) -> CliResult {
    let queue = QueueLocation::parse(Some(&args.queue), std::path::Path::new("."))
        .map_err(|e| serve_error(e.into()))?;
    if !queue.is_shared() {
        return Err(swtbench_app::Error::input(anyhow!(
            "--queue must be a PostgreSQL URL: a worker joins a queue that processes of several \
             hosts share"
        ))
        .into());
    }
    let template = template(&args.run_args, printer)?;
    let config = WorkerConfig {
        pool: Pool {
            queue,
            lease: Duration::from_secs(args.lease),
        },
        workers: args.workers as usize,
        dir: template.dir.clone(),
        image_cache: args.image_cache_size,
    };
    let p = *printer;
    let note = Box::new(move |text: String| p.info(&format!("worker: {text}")));
    run_workers(config, Arc::new(template), note).map_err(serve_error)?;
    Ok(ExitCode::Success)
}
