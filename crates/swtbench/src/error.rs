//! The one error type of the binary edge: what failed, why (the cause chain), what to do (hint),
//! and which documented exit code it maps to.

use std::fmt;

/// Exit codes, documented in the README.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Everything ran; results are whatever they are.
    Success,
    /// The command finished, but some items failed (validation problems, instances that could not
    /// be evaluated, specs that could not be rendered). Details are on stderr and in the outputs.
    Partial,
    /// Bad usage or unusable input (arguments, dataset, predictions, spec table).
    Input,
    /// The environment is not usable (container engine unreachable, network needed but offline).
    Environment,
    /// Interrupted by the user (Ctrl-C).
    Interrupted,
}

impl ExitCode {
    /// [`ExitCode::Partial`] when some item failed, else [`ExitCode::Success`].
    pub fn partial_if(failed: bool) -> ExitCode {
        match failed {
            true => ExitCode::Partial,
            false => ExitCode::Success,
        }
    }

    /// The exit code of a command that went on after failed items (`images`, `clean`): 1 when
    /// some failed, an environment error when one said the engine is gone.
    pub fn of_failures(failures: &swtbench_app::error::Failures) -> CliResult {
        match failures.engine_error() {
            Some(e) => Err(e.into()),
            None => Ok(ExitCode::partial_if(failures.count > 0)),
        }
    }

    pub fn as_i32(self) -> i32 {
        match self {
            ExitCode::Success => 0,
            ExitCode::Partial => 1,
            ExitCode::Input => 2,
            ExitCode::Environment => 3,
            ExitCode::Interrupted => 130,
        }
    }
}

/// An error that ends a command.
#[derive(Debug)]
pub struct CliError {
    pub code: ExitCode,
    pub error: anyhow::Error,
    pub hint: Option<String>,
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.error)?;
        for cause in self.error.chain().skip(1) {
            write!(f, "\n  caused by: {cause}")?;
        }
        if let Some(h) = &self.hint {
            write!(f, "\nhint: {h}")?;
        }
        Ok(())
    }
}

/// A library error keeps its message chain and hint; its fault picks the exit code.
impl From<swtbench_app::Error> for CliError {
    fn from(e: swtbench_app::Error) -> Self {
        CliError {
            code: match e.fault {
                swtbench_app::Fault::Input => ExitCode::Input,
                swtbench_app::Fault::Environment => ExitCode::Environment,
                swtbench_app::Fault::Interrupted => ExitCode::Interrupted,
            },
            error: e.error,
            hint: e.hint,
        }
    }
}

impl CliError {
    /// A run that graded no instance: an environment failure (exit code 3) when every cause is
    /// the machine's, else some instances failed (1).
    pub fn nothing_evaluated(n: swtbench_app::evaluate::NothingEvaluated) -> CliError {
        CliError {
            code: match n.environment {
                true => ExitCode::Environment,
                false => ExitCode::Partial,
            },
            error: n.error,
            hint: Some(n.hint),
        }
    }
}

pub type CliResult = Result<ExitCode, CliError>;

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn renders_chain_and_hint() {
        let e: anyhow::Result<()> = Err(anyhow::anyhow!("root cause")).context("loading x");
        let e = swtbench_app::Error::input(e.expect_err("an error")).with_hint("check x");
        let err = CliError::from(e);
        assert_eq!(
            err.to_string(),
            "error: loading x\n  caused by: root cause\nhint: check x"
        );
        assert_eq!(err.code.as_i32(), 2);
    }

    #[test]
    fn a_run_that_evaluated_nothing_is_exit_code_3_when_the_machine_is_at_fault_else_1() {
        for (environment, code) in [(true, 3), (false, 1)] {
            let err = CliError::nothing_evaluated(swtbench_app::evaluate::NothingEvaluated {
                error: anyhow::anyhow!("nothing was evaluated: image b could not be built"),
                hint: "fix that".into(),
                environment,
            });
            assert_eq!(err.code.as_i32(), code);
            assert_eq!(
                err.to_string(),
                "error: nothing was evaluated: image b could not be built
hint: fix that"
            );
        }
    }
}
