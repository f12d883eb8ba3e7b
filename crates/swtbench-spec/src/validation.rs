//! What the gold validation of the uv environments found: the instances of SWT-Bench Lite ∪
//! Verified whose gold patch was *not* resolved when evaluated with `--env-provider uv`, and why.
//!
//! The data is `assets/validation/gold-uv.json`, written by `scripts/gold-summary` from a campaign
//! of `scripts/gold-campaign` (the per-instance results are `docs/gold-validation.json`). `run`
//! warns when a selected instance is listed here and its environment is a uv one, so a user knows
//! before the build that the instance's environment recipe failed its gold check (and whether the
//! cause was the validating machine's, such as a download it could not reach).
//!
//! This module only parses the table and answers lookups.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::provider::Provider;

/// The table compiled into the binary.
pub const EMBEDDED_VALIDATION: &str = include_str!("../../../assets/validation/gold-uv.json");

/// The format this module reads.
pub const VALIDATION_FORMAT: u32 = 1;

/// What the validation found for one instance that gold did not resolve.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Finding {
    pub repo: String,
    pub version: String,
    /// `error` (an image did not build, a run did not finish), `unresolved` (the gold tests did
    /// not go from failing to passing) or `skipped`.
    pub status: String,
    /// The cause, for people: the failing step's named cause, or the tests that did not behave.
    pub cause: String,
    /// The env image key the validation built (`exec.env.<arch>.<hash>:latest`), when it got that
    /// far: a user whose key differs (another Python image, a lock) built another environment.
    #[serde(default)]
    pub env: Option<String>,
}

/// The whole table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Validation {
    pub format: u32,
    /// The provider the campaign evaluated with (`uv`).
    pub provider: String,
    /// Where the findings come from (the campaign, its date, its machine).
    pub source: String,
    /// How many instances the campaign evaluated (resolved or not).
    pub evaluated: usize,
    /// Per instance id, the instances gold did not resolve.
    pub instances: BTreeMap<String, Finding>,
}

/// Why the table could not be read.
#[derive(Debug, thiserror::Error)]
#[error("the validation table {origin} is unreadable: {message}")]
pub struct ValidationError {
    pub origin: String,
    pub message: String,
}

impl Validation {
    /// The embedded table, parsed once.
    pub fn embedded() -> &'static Validation {
        static TABLE: OnceLock<Validation> = OnceLock::new();
        TABLE.get_or_init(|| {
            // Checked by this module's tests; failing here is a build defect.
            Validation::parse(EMBEDDED_VALIDATION, "assets/validation/gold-uv.json")
                .expect("the embedded validation table parses")
        })
    }

    /// Parses a table; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Validation, ValidationError> {
        let v: Validation = serde_json::from_str(text).map_err(|e| ValidationError {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        if v.format != VALIDATION_FORMAT {
            return Err(ValidationError {
                origin: origin.to_string(),
                message: format!(
                    "format {} (this build reads format {VALIDATION_FORMAT})",
                    v.format
                ),
            });
        }
        if Provider::parse(&v.provider).is_none() {
            return Err(ValidationError {
                origin: origin.to_string(),
                message: format!("unknown provider {:?}", v.provider),
            });
        }
        Ok(v)
    }

    /// The finding of `instance_id` when its environment is built by `provider` (the table only
    /// speaks of the provider it was made with).
    pub fn finding(&self, instance_id: &str, provider: Provider) -> Option<&Finding> {
        if provider.as_str() != self.provider {
            return None;
        }
        self.instances.get(instance_id)
    }

    /// The warning `run` prints for an instance the validation found broken, or `None`.
    /// `env_key` is the env image key the user's run builds.
    pub fn warning(&self, instance_id: &str, provider: Provider, env_key: &str) -> Option<String> {
        let f = self.finding(instance_id, provider)?;
        let other_env = match &f.env {
            Some(k) if k != env_key => format!(
                " (the validation's environment was {k}; this run builds {env_key}, which may behave otherwise)"
            ),
            _ => String::new(),
        };
        Some(format!(
            "{instance_id}: the gold validation of the {} environments did not resolve this instance ({}): {}{other_env} (docs/gold-validation.md)",
            self.provider, f.status, f.cause
        ))
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
mod tests {
    use super::*;

    const SMALL: &str = r#"{"format": 1, "provider": "uv", "source": "a campaign", "evaluated": 3,
        "instances": {"org__repo-1": {"repo": "org/repo", "version": "1.0", "status": "error", "cause": "the build downloads x", "env": "exec.env.x86_64.aaa:latest"},
                      "org__repo-2": {"repo": "org/repo", "version": "1.0", "status": "unresolved", "cause": "FAIL_TO_PASS not reproduced: t"}}}"#;

    #[test]
    fn the_embedded_table_parses_and_names_a_cause_for_every_instance() {
        let v = Validation::embedded();
        assert_eq!(v.format, VALIDATION_FORMAT);
        assert_eq!(v.provider, "uv");
        assert!(
            v.instances.len() <= v.evaluated,
            "{} findings of {} evaluated",
            v.instances.len(),
            v.evaluated
        );
        for (id, f) in &v.instances {
            assert!(id.contains("__"), "{id} is not an instance id");
            assert!(
                ["error", "unresolved", "skipped"].contains(&f.status.as_str()),
                "{id}: status {}",
                f.status
            );
            assert!(!f.cause.trim().is_empty(), "{id} has no cause");
            assert!(
                !f.cause.contains("/work/") && !f.cause.contains("/tmp/"),
                "{id}: the cause names a path of the validating machine: {}",
                f.cause
            );
        }
    }

    #[test]
    fn a_listed_instance_of_the_embedded_table_is_warned_about_when_its_spec_is_rendered() {
        use crate::{Arch, ExecSpec, SpecTable};
        let Some((id, f)) = Validation::embedded().instances.iter().next() else {
            return; // an empty table has nothing to warn about
        };
        let row = serde_json::json!({"instance_id": id, "repo": f.repo, "version": f.version,
            "base_commit": "0123456789abcdef0123456789abcdef01234567",
            "patch": "diff --git a/x.py b/x.py\n", "test_patch": "diff --git a/t.py b/t.py\n"});
        let instance =
            swtbench_core::Instance::from_row(&row, swtbench_core::PatchLayout::Swebench).unwrap();
        let empty_files = |_: &str, _: &str, _: &str| Ok(Some(String::new()));
        let (uv, _) = SpecTable::embedded().with_env_provider(Provider::Uv, None);
        let s = ExecSpec::new(&instance, &uv, Arch::X86_64, &empty_files).unwrap();
        let w = s.validation_warning.unwrap();
        assert!(w.starts_with(&format!("{id}: the gold validation of the uv environments did not resolve this instance ({})", f.status)), "{w}");
        assert!(w.contains(&f.cause), "{w}");
        // The table's own provider only.
        let s =
            ExecSpec::new(&instance, SpecTable::embedded(), Arch::X86_64, &empty_files).unwrap();
        assert_eq!(s.validation_warning, None);
    }

    #[test]
    fn a_listed_instance_warns_under_its_provider_only() {
        let v = Validation::parse(SMALL, "t").unwrap();
        let w = v
            .warning("org__repo-1", Provider::Uv, "exec.env.x86_64.aaa:latest")
            .unwrap();
        assert!(w.starts_with("org__repo-1: the gold validation of the uv environments did not resolve this instance (error): the build downloads x"), "{w}");
        assert!(!w.contains("may behave otherwise"), "{w}");
        assert!(v.warning("org__repo-1", Provider::Conda, "k").is_none());
        assert!(v.warning("org__repo-1", Provider::Venv, "k").is_none());
        assert!(v.warning("org__repo-3", Provider::Uv, "k").is_none());
    }

    #[test]
    fn another_environment_is_said() {
        let v = Validation::parse(SMALL, "t").unwrap();
        let w = v
            .warning("org__repo-1", Provider::Uv, "exec.env.x86_64.bbb:latest")
            .unwrap();
        assert!(w.contains("the validation's environment was exec.env.x86_64.aaa:latest; this run builds exec.env.x86_64.bbb:latest"), "{w}");
        // No key recorded (the env image never built): nothing to compare.
        let w = v
            .warning("org__repo-2", Provider::Uv, "exec.env.x86_64.bbb:latest")
            .unwrap();
        assert!(
            w.ends_with("FAIL_TO_PASS not reproduced: t (docs/gold-validation.md)"),
            "{w}"
        );
    }

    #[test]
    fn bad_tables_are_refused_with_their_origin() {
        let e = Validation::parse("{", "f.json").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("the validation table f.json is unreadable"),
            "{e}"
        );
        let e = Validation::parse(&SMALL.replace("\"format\": 1", "\"format\": 2"), "f.json")
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("format 2 (this build reads format 1)"),
            "{e}"
        );
        let e = Validation::parse(&SMALL.replace("\"uv\"", "\"pipenv\""), "f.json").unwrap_err();
        assert!(e.to_string().contains("unknown provider \"pipenv\""), "{e}");
    }
}
