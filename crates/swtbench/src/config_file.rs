//! Finds and reads the configuration file (`swtbench_cli::config` turns it into flag defaults):
//! `--config FILE` or SWTBENCH_CONFIG, else `./swtbench.toml`, else `./pyproject.toml`'s
//! `[tool.swtbench]` table; `--no-config` reads none.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::anyhow;
use swtbench_cli::config::{self, Config, CONFIG_ENV, FILE_NAME, PYPROJECT};

/// The configuration this process read ([`remember`]), for the commands that parse command lines
/// of their own: the run flags after `serve --` and `worker --` get `[run]`'s defaults from it.
static LOADED: OnceLock<Config> = OnceLock::new();

/// Keeps `config` as the process's configuration (the first one kept stays).
pub fn remember(config: &Config) {
    let _ = LOADED.set(config.clone());
}

/// The configuration the process read, if it read one.
pub fn loaded() -> Option<&'static Config> {
    LOADED.get()
}

/// The configuration that applies to the command line `argv`, if any.
pub fn find(argv: &[OsString]) -> swtbench_app::Result<Option<Config>> {
    let (named, none) = config::requested(argv);
    if none {
        return Ok(None);
    }
    let named = named.or_else(|| {
        std::env::var_os(CONFIG_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    if let Some(path) = named {
        let text = std::fs::read_to_string(&path).map_err(|e| {
            swtbench_app::Error::input(anyhow!(
                "cannot read the configuration file {}: {e}",
                path.display()
            ))
            .with_hint(
                "--config and SWTBENCH_CONFIG name a TOML file; pass --no-config to use none",
            )
        })?;
        let pyproject = path.file_name().is_some_and(|n| n == PYPROJECT);
        let config = config::parse(&text, &absolute(&path), pyproject).map_err(invalid)?;
        return match config {
            Some(c) => Ok(Some(c)),
            None => Err(swtbench_app::Error::input(anyhow!(
                "the configuration file {} has no [tool.swtbench] table",
                path.display()
            ))),
        };
    }
    for (name, pyproject) in [(FILE_NAME, false), (PYPROJECT, true)] {
        let path = Path::new(name);
        match std::fs::read_to_string(path) {
            Ok(text) => {
                if let Some(c) = config::parse(&text, path, pyproject).map_err(invalid)? {
                    return Ok(Some(c));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(swtbench_app::Error::input(anyhow!(
                    "cannot read {name} in the current directory: {e}"
                ))
                .with_hint("pass --no-config to read no configuration file"))
            }
        }
    }
    Ok(None)
}

/// Parses `argv` by `cmd` with the file's values as the defaults of its flags. Returns the matches
/// and what the file set. A value of the file that a flag rejects is an error naming the file and
/// the key; any other error of the command line is clap's, printed as usual.
pub fn matches(
    cmd: clap::Command,
    config: &Config,
    argv: &[OsString],
) -> swtbench_app::Result<(clap::ArgMatches, Vec<config::Applied>)> {
    let (cmd, applied) = apply(cmd, config)?;
    match cmd.try_get_matches_from(argv) {
        Ok(m) => Ok((m, applied)),
        Err(e) => match config::blame(&e, &applied, config) {
            Some(err) => Err(invalid(err)),
            None => e.exit(),
        },
    }
}

/// `config`'s values as the defaults of `cmd`'s flags, and what it set; an error names the file
/// and the key.
pub fn apply(
    cmd: clap::Command,
    config: &Config,
) -> swtbench_app::Result<(clap::Command, Vec<config::Applied>)> {
    config::apply(cmd, config).map_err(invalid)
}

/// A configuration error as the command's input error, with its hint.
pub fn invalid(e: config::ConfigError) -> swtbench_app::Error {
    let hint = e.hint();
    swtbench_app::Error::input(e).with_hint(hint)
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}
