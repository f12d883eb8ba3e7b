//! `swtbench serve`: the evaluation service (`swtbench_service::serve`) with the run flags given
//! after `--` as its template ([`crate::service_jobs`]): each job is `run`'s evaluation of one
//! prediction, its arguments those flags with the job's predictions, run id and instance set field
//! by field.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use swtbench_cli::commands::serve::ServeArgs;
use swtbench_service::{Pool, QueueLocation, ServeError};

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;
use crate::service_jobs::{parse_run, serve_error, template};

pub fn run(args: ServeArgs, printer: &Printer) -> CliResult {
    // Refused before anything is loaded.
    if args.token_file.is_none() && !args.listen.ip().is_loopback() {
        return Err(serve_error(ServeError::NoToken { addr: args.listen }).into());
    }
    // The flags are checked before anything is loaded.
    let base = parse_run(&args.run_args, "gold", "serve")?;
    let dir = base.output_dir.join(swtbench_service::SERVICE_DIR);
    let queue =
        QueueLocation::parse(args.queue.as_deref(), &dir).map_err(|e| serve_error(e.into()))?;
    let tokens = match &args.token_file {
        Some(path) => Some(read_tokens(path)?),
        None => None,
    };
    let template = template(&args.run_args, printer)?;
    let config = swtbench_service::Config {
        listen: args.listen,
        workers: args.workers,
        dir: template.dir.clone(),
        tokens,
        max_body: args.max_body,
        rate_limit: args.rate_limit,
        image_cache: args.image_cache_size,
    };
    let pool = Pool {
        queue,
        lease: Duration::from_secs(args.lease),
    };
    let p = *printer;
    let note = Box::new(move |text: String| p.info(&format!("serve: {text}")));
    swtbench_service::serve(config, pool, Arc::new(template), note).map_err(serve_error)?;
    Ok(ExitCode::Success)
}

fn read_tokens(path: &Path) -> swtbench_app::Result<Vec<swtbench_service::quota::Token>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| swtbench_app::Error::input(anyhow!("--token-file {}: {e}", path.display())))?;
    swtbench_service::quota::parse_token_file(&text).map_err(|e| {
        swtbench_app::Error::input(anyhow!("--token-file {}: {e}", path.display())).with_hint(
            "one SHA-256 digest per line (printf %s \"$TOKEN\" | sha256sum >> FILE), optionally \
             followed by max_running=N and max_body=SIZE",
        )
    })
}
