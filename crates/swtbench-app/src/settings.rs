//! The options layer of an evaluation: what a front end collected (flags, a file) as plain
//! values, resolved here into the runner's [`RunSettings`] and the eval scripts' [`EvalOptions`],
//! with the rules that refuse combinations that cannot run. The binary maps its flags onto these
//! structs one to one; the defaults and the checks live here once.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::anyhow;
use swtbench_extract::{ExtractOptions, PatchType};
use swtbench_plan::settings::{ExecSettings, ImageSettings, OutputRoots, DEFAULT_MAX_OUTPUT};
use swtbench_plan::{CacheLevel, RunSettings};
use swtbench_spec::{EvalOptions, ExecMode, SpecError};

use crate::limits::{HostFacts, LimitOptions};
use crate::{Error, Result};

/// A flag value that is not what its flag takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("expected a boolean (true/false, yes/no, 1/0), got {0:?}")]
    NotABool(String),
    #[error("expected a size such as 4g, 512m or 1048576, got {0:?}")]
    NotASize(String),
    #[error("a size must be positive, got {0:?}")]
    NegativeSize(String),
    #[error("a container's memory limit must be at least 6m (the engine's minimum), got {0:?}")]
    MemoryTooSmall(String),
    #[error(
        "expected a positive number of seconds (a whole number from 1 to 31536000, a year), got \
         {0:?}"
    )]
    NotSeconds(String),
    #[error("expected a positive whole number (at least 1), got {0:?}")]
    NotPositive(String),
    #[error("expected 0 or a positive whole number, got {0:?}")]
    NotACount(String),
    #[error("expected a positive number of CPUs such as 1.5 (at least 0.001), got {0:?}")]
    NotCpus(String),
    #[error("unknown image kind {0:?} (base, env or instance)")]
    UnknownKind(String),
    #[error("unknown provider {0:?} (conda, venv or uv)")]
    UnknownProvider(String),
    #[error("unknown architecture {0:?} (x86_64 or arm64)")]
    UnknownArch(String),
}

/// An image kind: base, env or instance (`images list|rm --kind`).
pub fn parse_image_kind(
    s: &str,
) -> std::result::Result<swtbench_plan::settings::ImageKind, ValueError> {
    crate::images::parse_kind(s).ok_or_else(|| ValueError::UnknownKind(s.to_string()))
}

/// An environment provider: conda, venv or uv (`--env-provider`).
pub fn parse_provider(s: &str) -> std::result::Result<swtbench_spec::Provider, ValueError> {
    swtbench_spec::Provider::parse(s).ok_or_else(|| ValueError::UnknownProvider(s.to_string()))
}

/// A host architecture: x86_64 or arm64 (`spec --arch`).
pub fn parse_arch(s: &str) -> std::result::Result<swtbench_spec::Arch, ValueError> {
    swtbench_spec::Arch::parse(s).ok_or_else(|| ValueError::UnknownArch(s.to_string()))
}

/// A whole number parsed as `T`, or `None` for anything else (a sign, a fraction, a word). A
/// leading `+` is refused too, so that what is accepted is what the help text shows.
fn whole<T: std::str::FromStr>(s: &str) -> Option<T> {
    let t = s.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// The longest timeout accepted: a year (far beyond any test suite, and well inside what the
/// clock arithmetic of a deadline can hold).
pub const MAX_SECONDS: u64 = 365 * 24 * 3600;

/// Seconds of a timeout: a whole number from 1 (a timeout of 0 could never be met) to
/// [`MAX_SECONDS`].
pub fn parse_seconds(s: &str) -> std::result::Result<u64, ValueError> {
    whole(s)
        .filter(|&n: &u64| (1..=MAX_SECONDS).contains(&n))
        .ok_or_else(|| ValueError::NotSeconds(s.to_string()))
}

/// A count that must be at least 1: workers, a denominator.
pub fn parse_positive<T: std::str::FromStr + PartialOrd + From<u8>>(
    s: &str,
) -> std::result::Result<T, ValueError> {
    whole(s)
        .filter(|n: &T| *n >= T::from(1))
        .ok_or_else(|| ValueError::NotPositive(s.to_string()))
}

/// A count where 0 means something (no cap, nothing kept): token caps, hits, limits.
pub fn parse_count<T: std::str::FromStr>(s: &str) -> std::result::Result<T, ValueError> {
    whole(s).ok_or_else(|| ValueError::NotACount(s.to_string()))
}

/// CPUs of a container: a finite number above 0.
pub fn parse_cpus(s: &str) -> std::result::Result<f64, ValueError> {
    s.trim()
        .parse::<f64>()
        .ok()
        // Engines count CPUs in billionths; far below 0.001 rounds to 0, which means no limit.
        .filter(|c| c.is_finite() && *c >= 0.001)
        .ok_or_else(|| ValueError::NotCpus(s.to_string()))
}

/// The original harness's `str2bool`: yes/true/t/y/1 and no/false/f/n/0, case-insensitive.
pub fn parse_bool(value: &str) -> std::result::Result<bool, ValueError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "yes" | "true" | "t" | "y" | "1" => Ok(true),
        "no" | "false" | "f" | "n" | "0" => Ok(false),
        other => Err(ValueError::NotABool(other.to_string())),
    }
}

/// `4g`, `512m`, `1024k`, `123` (bytes); binary units.
pub fn parse_size(s: &str) -> std::result::Result<u64, ValueError> {
    let t = s.trim().to_ascii_lowercase();
    let t = t.strip_suffix('b').unwrap_or(&t);
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m') => (&t[..t.len() - 1], 1 << 20),
        Some('g') => (&t[..t.len() - 1], 1 << 30),
        Some('t') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| ValueError::NotASize(s.to_string()))?;
    if v < 0.0 || !v.is_finite() {
        return Err(ValueError::NegativeSize(s.to_string()));
    }
    Ok((v * mult as f64) as u64)
}

/// The smallest memory limit the engine accepts for a container (Docker refuses less than 6 MiB).
pub const MIN_MEMORY: u64 = 6 << 20;

/// A container memory limit: a size ([`parse_size`]) of at least [`MIN_MEMORY`], refused here
/// rather than by the engine at the first container of the run.
pub fn parse_memory(s: &str) -> std::result::Result<u64, ValueError> {
    let v = parse_size(s)?;
    if v < MIN_MEMORY {
        return Err(ValueError::MemoryTooSmall(s.to_string()));
    }
    Ok(v)
}

/// How the eval scripts run the tests, as asked for.
#[derive(Debug, Clone, Default)]
pub struct EvalChoice {
    /// `Some(script)` for reproduction-script mode (the script the model patch creates, relative
    /// to the repository root), `None` for the repository's test runner.
    pub reproduction_script: Option<Option<String>>,
    /// `--compute-coverage` (default on).
    pub compute_coverage: Option<bool>,
    /// `--no-coverage`.
    pub no_coverage: bool,
    /// The tracer's fixed mode (traced programs behave as untraced).
    pub tracer_fixed: bool,
    /// Reproduce the original's sympy test command with its `str.strip` bug.
    pub sympy_strip_bug: bool,
}

impl EvalChoice {
    /// The eval options, or an input error for a combination that cannot run.
    pub fn options(&self, skip_install: bool) -> Result<EvalOptions> {
        let exec_mode =
            match &self.reproduction_script {
                None => ExecMode::UnitTest,
                Some(Some(name)) if !name.trim().is_empty() => {
                    ExecMode::ReproductionScript(name.clone())
                }
                Some(_) => return Err(Error::input(SpecError::MissingScriptName).with_hint(
                    "name the script the model patch creates, relative to the repository root, \
                     e.g. --reproduction-script-name reproduce_bug.py",
                )),
            };
        let coverage = !self.no_coverage && self.compute_coverage.unwrap_or(true);
        if self.tracer_fixed && !coverage {
            return Err(Error::input(anyhow!(
                "--tracer-mode fixed needs the coverage tracer, which --no-coverage (or \
                 --compute-coverage false) turns off"
            ))
            .with_hint("leave out one of the two"));
        }
        Ok(EvalOptions {
            exec_mode,
            coverage,
            sympy_strip_compat: self.sympy_strip_bug,
            skip_install,
            tracer_fixed: self.tracer_fixed,
        })
    }
}

/// Everything `run` was asked for, before resolution.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub run_id: String,
    pub output_dir: PathBuf,
    pub eval: EvalOptions,
    pub max_workers: usize,
    pub build_workers: usize,
    /// Seconds per eval script.
    pub timeout: u64,
    /// Bytes of output kept per run (`Some(0)`: everything; `None`: the default cap).
    pub max_output: Option<u64>,
    /// The containers' resource limits as asked for ([`crate::limits`] fills in the defaults).
    pub limits: LimitOptions,
    pub allow_network: bool,
    /// `--no-evidence` turns it off.
    pub evidence: bool,
    pub cache_level: CacheLevel,
    pub clean: bool,
    pub force_rebuild: bool,
    pub repo_mirror: Option<PathBuf>,
    /// Seconds an image build may take.
    pub build_timeout: Option<u64>,
    /// `--step-builds`.
    pub step_builds: bool,
    /// `--registry` (resolved by [`crate::registry::registry_settings`]).
    pub registry: Option<swtbench_plan::settings::RegistrySettings>,
    /// `--instance-image` (resolved by [`crate::registry::prebuilt_settings`]).
    pub prebuilt: Option<swtbench_plan::prebuilt::PrebuiltSettings>,
    pub patch_types: Vec<PatchType>,
    pub extract: ExtractOptions,
    pub reuse_unkeyed: bool,
    pub skip_eval: bool,
    /// `--shard K/N`.
    pub shard: Option<swtbench_plan::settings::Shard>,
    /// `--strict-results`.
    pub strict_results: bool,
    /// `--grading-version`.
    pub grading_version: swtbench_grade::GradingVersion,
    /// `--flaky-list`, read.
    pub flaky: swtbench_grade::stability::FlakyList,
}

impl RunOptions {
    /// The runner's settings, or an input error for values that cannot run. Default resource
    /// limits are sized from `host`.
    pub fn resolve(self, host: &HostFacts) -> Result<RunSettings> {
        if self.max_workers == 0 || self.build_workers == 0 {
            return Err(Error::input(anyhow!(
                "--max-workers and --build-workers must be at least 1"
            )));
        }
        if self.timeout == 0 {
            return Err(Error::input(anyhow!("--timeout must be at least 1 second")));
        }
        let limits = self.limits.resolve(host, self.max_workers);
        let mut s = RunSettings::new(&self.run_id, &self.output_dir);
        s.outputs = OutputRoots::under(&self.output_dir);
        s.eval = self.eval;
        s.exec = ExecSettings {
            timeout: Duration::from_secs(self.timeout),
            max_output: match self.max_output {
                Some(0) => None,
                Some(n) => Some(n as usize),
                None => Some(DEFAULT_MAX_OUTPUT),
            },
            limits: limits.limits,
            limits_note: Some(limits.note),
            allow_network: self.allow_network,
            evidence: self.evidence,
            test_ca: None,
        };
        s.images = ImageSettings {
            cache_level: self.cache_level,
            clean: self.clean,
            force_rebuild: self.force_rebuild,
            build_workers: self.build_workers,
            repo_mirror: self.repo_mirror,
            build_timeout: self.build_timeout.map(Duration::from_secs),
            registry: self.registry,
            prebuilt: self.prebuilt,
            step_builds: self.step_builds,
        };
        s.max_workers = self.max_workers;
        s.memory_budget = host.memory_bytes;
        s.patch_types = self.patch_types;
        s.extract = self.extract;
        s.reuse_unkeyed = self.reuse_unkeyed;
        s.skip_eval = self.skip_eval;
        s.shard = self.shard;
        s.strict_results = self.strict_results;
        s.grading_version = self.grading_version;
        s.flaky = self.flaky;
        Ok(s)
    }
}

/// Reads a flaky list (`run --repeat` writes one: `<model>.<run id>.flaky.json`) for
/// `--flaky-list`.
pub fn read_flaky_list(path: &Path) -> Result<swtbench_grade::stability::FlakyList> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::input(anyhow!("reading the flaky list {}: {e}", path.display())))?;
    swtbench_grade::stability::parse_flaky_list(&text).map_err(|e| {
        Error::input(anyhow!("{}: {e}", path.display())).with_hint(
            "give the <model>.<run id>.flaky.json that `run --repeat` wrote, or a file of that form",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_providers_and_architectures_parse_by_name() {
        use swtbench_plan::settings::ImageKind;
        assert_eq!(parse_image_kind("env"), Ok(ImageKind::Env));
        let e = parse_image_kind("layer").expect_err("refused").to_string();
        assert_eq!(e, "unknown image kind \"layer\" (base, env or instance)");
        assert_eq!(parse_provider("uv"), Ok(swtbench_spec::Provider::Uv));
        let e = parse_provider("pipenv").expect_err("refused").to_string();
        assert_eq!(e, "unknown provider \"pipenv\" (conda, venv or uv)");
        assert!(parse_arch("arm64").is_ok());
        let e = parse_arch("mips").expect_err("refused").to_string();
        assert_eq!(e, "unknown architecture \"mips\" (x86_64 or arm64)");
    }

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("4g"), Ok(4 << 30));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("1.5k"), Ok(1536));
        assert_eq!(parse_size("100"), Ok(100));
        assert_eq!(parse_size("64mb"), Ok(64 << 20));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("-1").is_err());
        assert_eq!(parse_memory("6m"), Ok(6 << 20));
        assert_eq!(
            parse_memory("1k"),
            Err(ValueError::MemoryTooSmall("1k".into()))
        );
    }

    #[test]
    fn numbers_refuse_signs_fractions_and_out_of_range_values() {
        assert_eq!(parse_seconds("1800"), Ok(1800));
        assert_eq!(parse_seconds(" 5 "), Ok(5));
        for bad in ["-1", "0", "1.5", "+3", "", "ten"] {
            assert_eq!(
                parse_seconds(bad),
                Err(ValueError::NotSeconds(bad.into())),
                "{bad:?}"
            );
        }
        assert_eq!(parse_positive::<usize>("4"), Ok(4));
        assert!(parse_positive::<usize>("0").is_err());
        assert!(parse_positive::<u64>("-2").is_err());
        assert_eq!(parse_count::<u32>("0"), Ok(0));
        assert!(parse_count::<u32>("-1").is_err());
        assert!(parse_count::<u32>("4294967296").is_err(), "over u32");
        assert_eq!(parse_cpus("1.5"), Ok(1.5));
        assert!(parse_seconds("31536000").is_ok());
        assert!(parse_seconds("31536001").is_err());
        assert!(
            parse_seconds("18446744073709551615").is_err(),
            "no overflow later"
        );
        assert_eq!(parse_cpus("0.5"), Ok(0.5));
        for bad in ["-1", "0", "NaN", "inf", "1e-10"] {
            assert!(parse_cpus(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse_seconds("-1").map_err(|e| e.to_string()),
            Err(
                "expected a positive number of seconds (a whole number from 1 to 31536000, a \
                 year), got \"-1\""
                    .into()
            )
        );
    }

    #[test]
    fn booleans_parse_as_str2bool() {
        for (v, want) in [
            ("Yes", true),
            (" t ", true),
            ("1", true),
            ("n", false),
            ("FALSE", false),
        ] {
            assert_eq!(parse_bool(v), Ok(want), "{v}");
        }
        assert_eq!(
            parse_bool("Maybe").map_err(|e| e.to_string()),
            Err("expected a boolean (true/false, yes/no, 1/0), got \"maybe\"".to_string())
        );
    }

    #[test]
    fn reproduction_mode_needs_a_script_and_fixed_tracing_needs_coverage() {
        let unit = EvalChoice::default().options(true).expect("unit tests");
        assert_eq!(unit.exec_mode, ExecMode::UnitTest);
        assert!(unit.coverage && unit.skip_install && !unit.tracer_fixed);
        let no_name = EvalChoice {
            reproduction_script: Some(None),
            ..EvalChoice::default()
        };
        let e = no_name.options(true).expect_err("no script name");
        assert!(e
            .hint
            .is_some_and(|h| h.contains("--reproduction-script-name")));
        let blank = EvalChoice {
            reproduction_script: Some(Some("  ".into())),
            ..EvalChoice::default()
        };
        assert!(blank.options(false).is_err());
        let fixed_without_coverage = EvalChoice {
            tracer_fixed: true,
            no_coverage: true,
            ..EvalChoice::default()
        };
        assert!(fixed_without_coverage.options(true).is_err());
        let off = EvalChoice {
            compute_coverage: Some(false),
            ..EvalChoice::default()
        };
        assert!(!off.options(true).expect("no coverage").coverage);
    }
}
