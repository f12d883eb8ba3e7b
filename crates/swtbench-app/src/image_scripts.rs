//! `swtbench images base` and `swtbench images python`: the base image of the fixture benchmark
//! and the Python images of `--env-provider uv`, made on this machine without any registry. The
//! recipes are the checkout's `scripts/base-image` and `scripts/python-image`, embedded in the
//! binary so that an installed `swtbench` (pip, cargo) has them too; they are written into a
//! private temporary directory and run with bash, their output going straight to the terminal.

use std::path::Path;
use std::process::Command;

use anyhow::anyhow;

use crate::error::{Error, Result};

/// `scripts/base-image`: debootstrap of Debian bookworm, imported with `docker import`.
pub const BASE_IMAGE_SH: &str = include_str!("../../../scripts/base-image");
/// `scripts/python-image`: a `python:<version>-slim-bookworm` image from a CPython build on this
/// machine (it calls `base-image` beside it for the runtime).
pub const PYTHON_IMAGE_SH: &str = include_str!("../../../scripts/python-image");

/// Which recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recipe {
    Base,
    Python,
}

impl Recipe {
    fn file(self) -> &'static str {
        match self {
            Recipe::Base => "base-image",
            Recipe::Python => "python-image",
        }
    }
}

/// Runs `recipe` with `args` (the script's own flags), its output on this process's stdout and
/// stderr. An exit status other than 0 is an environment error naming the recipe.
pub fn make(recipe: Recipe, args: &[String]) -> Result<()> {
    let dir = tempfile::Builder::new()
        .prefix(&swtbench_data::fsutil::owned_temp_prefix())
        .tempdir()
        .map_err(|e| Error::environment(anyhow!("cannot make a temporary directory: {e}")))?;
    for (name, text) in [
        ("base-image", BASE_IMAGE_SH),
        ("python-image", PYTHON_IMAGE_SH),
    ] {
        write_script(&dir.path().join(name), text)?;
    }
    let status = Command::new("bash")
        .arg(dir.path().join(recipe.file()))
        .args(args)
        .status()
        .map_err(|e| {
            Error::environment(anyhow!("cannot start bash for `swtbench images`: {e}"))
                .with_hint("the image recipes are bash scripts: install bash")
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::environment(anyhow!(
            "making the image failed ({}; its output above says why)",
            match status.code() {
                Some(c) => format!("exit status {c}"),
                None => "killed by a signal".to_string(),
            }
        ))
        .with_hint(match recipe {
            Recipe::Base => "it needs root (debootstrap), a running engine and Debian's package mirror (SWTBENCH_DEBIAN_MIRROR)",
            Recipe::Python => "it needs a CPython build of that version on this machine (--from ROOT, default `pyenv root`/versions) and a running engine; or let `swtbench run` pull python:<version>-slim-bookworm from Docker Hub",
        }))
    }
}

fn write_script(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text)
        .map_err(|e| Error::environment(anyhow!("cannot write {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_recipes_are_the_scripts_and_python_calls_base_beside_it() {
        assert!(BASE_IMAGE_SH.starts_with("#!/usr/bin/env bash"));
        assert!(PYTHON_IMAGE_SH.starts_with("#!/usr/bin/env bash"));
        // python-image finds base-image in its own directory, where make() writes both.
        assert!(
            PYTHON_IMAGE_SH.contains("$here/base-image"),
            "python-image no longer calls $here/base-image"
        );
    }
}
