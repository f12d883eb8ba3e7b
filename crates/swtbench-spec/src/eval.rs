//! The test command (§4.5) and the eval script of each of the six runs (§4.3, §4.6, §8), plus the
//! `exec_spec.json` record the original writes next to every run's output.
//!
//! The eval script's `set -x` trace lines are a contract with the log parsers
//! (`+ python3 /root/trace.py --count -C coverage.cover …`, `+ cat coverage.cover`,
//! `+ git checkout …`, `+ echo $?`), so the text follows the original line for line. Deliberate
//! differences, each listed in `docs/deviations.md`: the coverage include pattern lists files in
//! sorted order; the sympy command keeps its last directive intact unless
//! [`EvalOptions::sympy_strip_compat`] asks for the original's `str.strip` bug; the `install`
//! step can be left out with [`EvalOptions::skip_install`]. Nothing here runs anything.

use serde_json::{json, Map, Value};
use swtbench_core::directives::{directives_hash, test_directives};
use swtbench_core::layout::{SharedVariant, TRACER_FIXED_LINE};
use swtbench_core::RunKind;

use crate::error::SpecError;
use crate::py;
use crate::render::{script, ExecSpec, REPO_DIR};
use crate::table::{BaseImage, Provider, VersionSpec};

/// Heredoc delimiter of the patches in the eval script.
pub const PATCH_HEREDOC: &str = "EOF_114329324912";
/// Where the coverage tracer is copied in the container.
pub const TRACE_PATH: &str = "/root/trace.py";
/// The environment prefix of sympy's test command, which the original treats specially.
pub const SYMPY_PREFIX: &str = "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning'";

/// How the tests are run (§8).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ExecMode {
    /// The repository's test runner on the test directives.
    #[default]
    UnitTest,
    /// `python3 /testbed/<script>`; its exit code is the result.
    ReproductionScript(String),
}

impl ExecMode {
    /// `unit_test` or `reproduction_script`, the original's names.
    pub fn as_str(&self) -> &'static str {
        match self {
            ExecMode::UnitTest => "unit_test",
            ExecMode::ReproductionScript(_) => "reproduction_script",
        }
    }

    pub fn script_name(&self) -> Option<&str> {
        match self {
            ExecMode::UnitTest => None,
            ExecMode::ReproductionScript(name) => Some(name),
        }
    }
}

/// Options of the eval script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalOptions {
    pub exec_mode: ExecMode,
    /// Run the tests under the coverage tracer and print its dump (the original's default).
    pub coverage: bool,
    /// Reproduce the original's sympy command exactly: it strips the *characters* of the
    /// `PYTHONWARNINGS=…` prefix from both ends of the command, which eats the final `y` of the
    /// last directive (`test_x.py` → `test_x.p`) or turns `--verbose` into `--verb`.
    pub sympy_strip_compat: bool,
    /// Leave out the per-eval re-run of the entry's `install` command (§4.6 step 7), for runners
    /// that consider the install in the instance image sufficient.
    pub skip_install: bool,
    /// Run the coverage tracer in its fixed mode (`SWTBENCH_TRACE_COMPAT=0`, exported just before
    /// the test command): traced programs behave as they would untraced (see `docs/tracer.md`).
    /// Only used with [`EvalOptions::coverage`].
    pub tracer_fixed: bool,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            exec_mode: ExecMode::UnitTest,
            coverage: true,
            sympy_strip_compat: false,
            skip_install: false,
            tracer_fixed: false,
        }
    }
}

impl EvalOptions {
    /// The shared-run variant these options produce (which gold/base directories they use).
    pub fn shared_variant(&self) -> SharedVariant {
        SharedVariant {
            reproduction: matches!(self.exec_mode, ExecMode::ReproductionScript(_)),
            coverage: self.coverage,
            tracer_fixed: self.coverage && self.tracer_fixed,
        }
    }
}

/// The patches behind the six runs of an instance.
#[derive(Debug, Clone, Copy)]
pub struct RunInputs<'a> {
    /// The model's test patch as it will be applied (after binary-diff removal or extraction).
    pub model_patch: &'a str,
    pub gold_test_patch: &'a str,
    pub gold_code_patch: &'a str,
}

/// One rendered run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedRun {
    pub kind: RunKind,
    /// The patches applied in order: the gold code patch for post runs, then the test patch;
    /// `None` is the base runs' missing test patch (rendered as the literal text `None`).
    pub patch_list: Vec<Option<String>>,
    /// Test directives: the gold test patch's for gold runs, the model patch's otherwise.
    pub directives: Vec<String>,
    /// SHA-256 hex of the directives joined by `__` (the gold/base cache directory name).
    pub directives_hash: String,
    pub test_command: String,
    /// The whole `/eval.sh`.
    pub eval_script: String,
}

/// Where the script a container executes ([`RenderedRun::executed_script`]) records the exit
/// status of the test command.
pub const TEST_EXIT_FILE: &str = "/tmp/.swtbench_test_exit";

impl RenderedRun {
    /// The script the container executes: [`Self::eval_script`] (the original's text, which
    /// `eval.sh` holds and the run's key covers) with one line after the test command that writes
    /// the command's exit status to [`TEST_EXIT_FILE`]. The script's last step (`git apply` of an
    /// empty patch) makes its own exit code say nothing about the tests; this one does. The line
    /// prints nothing, not even its `set -x` trace (the group's stderr goes to /dev/null), and it
    /// leaves `$?` as the test command left it (`echo $?` of reproduction mode still prints the
    /// tests' status), so the log is the one `eval.sh` gives. `None` when the script has no line
    /// that is the test command. The tests can write the file too: it is information for people,
    /// never used in grading.
    pub fn executed_script(&self) -> Option<String> {
        record_test_exit(&self.eval_script, &self.test_command)
    }
}

fn record_test_exit(script: &str, test_command: &str) -> Option<String> {
    // The last such line: a patch in a heredoc above may hold the same text.
    let lines: Vec<&str> = script.split_inclusive('\n').collect();
    let at = lines
        .iter()
        .rposition(|l| l.trim_end_matches('\n') == test_command)?;
    let mut out = String::with_capacity(script.len() + 160);
    for (i, line) in lines.iter().enumerate() {
        out.push_str(line);
        if i == at {
            if !line.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&format!(
                "{{ swtbench_test_exit=$?; rm -rf {TEST_EXIT_FILE}; \
                 echo \"$swtbench_test_exit\" > {TEST_EXIT_FILE}; \
                 (exit \"$swtbench_test_exit\"); }} 2>/dev/null\n"
            ));
        }
    }
    Some(out)
}

/// Context for `exec_spec.json` that is not part of the rendering.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExecSpecJsonContext {
    pub run_id: Option<String>,
    /// The model's directory name (`model_name_or_path` with `/` → `__`), for the patch id.
    pub model_dir: String,
    /// Seconds per eval-script execution.
    pub timeout: Option<u64>,
    pub rm_image: bool,
    pub force_rebuild: bool,
}

impl ExecSpec {
    /// The test command for these directives (§4.5, §8).
    pub fn test_command(
        &self,
        directives: &[String],
        opts: &EvalOptions,
    ) -> Result<String, SpecError> {
        let files: Vec<String> = self
            .coverage_files
            .iter()
            .map(|f| py::re_escape(f))
            .collect();
        let trace = format!(
            "python3 {TRACE_PATH} --count -C coverage.cover --include-pattern '/testbed/({})'",
            files.join("|")
        );
        if let ExecMode::ReproductionScript(name) = &opts.exec_mode {
            let path = format!("{REPO_DIR}/{name}");
            let plain = format!("python3 {path}");
            return Ok(if opts.coverage {
                format!("{trace} {path} && {plain}")
            } else {
                plain
            });
        }
        let prefix =
            self.test_command_prefix
                .as_deref()
                .ok_or_else(|| SpecError::NoTestCommand {
                    repo: self.repo.clone(),
                    version: self.version.clone(),
                })?;
        let mut cmd = prefix.to_string();
        for d in directives {
            cmd.push(' ');
            cmd.push_str(d);
        }
        if !opts.coverage {
            return Ok(cmd);
        }
        let cleaned = cmd.replace("--tb=no", "");
        let stripped = py::strip(&cleaned);
        Ok(if let Some(at) = find_python_m(&cleaned) {
            // The original assigns re.subn's (text, count) tuple here, so building its eval script
            // fails with a TypeError and every run of the instance errors. No command of the
            // shipped table reaches this branch; the intended replacement is rendered instead.
            let len = if cleaned[at..].starts_with("python3 -m") {
                "python3 -m".len()
            } else {
                "python -m".len()
            };
            format!("{}{trace} -m{}", &cleaned[..at], &cleaned[at + len..])
        } else if ["pytest", "unittest", "tox"]
            .iter()
            .any(|p| stripped.starts_with(p))
        {
            format!("{trace} -m {cleaned}")
        } else if stripped.starts_with(SYMPY_PREFIX) {
            let rest = if opts.sympy_strip_compat {
                py::strip(py::strip_chars(&cleaned, SYMPY_PREFIX))
            } else {
                py::strip(stripped.strip_prefix(SYMPY_PREFIX).unwrap_or(stripped))
            };
            format!("{SYMPY_PREFIX} {trace} {rest}")
        } else {
            format!("{trace} {cleaned}")
        })
    }

    /// The eval script applying `patches` in order (`None` renders as the text `None`, as the
    /// original does for the base runs) and running the tests for `directives`.
    pub fn eval_script(
        &self,
        patches: &[Option<&str>],
        directives: &[String],
        opts: &EvalOptions,
    ) -> Result<String, SpecError> {
        let test_command = self.test_command(directives, opts)?;
        Ok(self.eval_script_with(patches, &test_command, opts))
    }

    fn eval_script_with(
        &self,
        patches: &[Option<&str>],
        test_command: &str,
        opts: &EvalOptions,
    ) -> String {
        let base = &self.base_commit;
        let activate = self.activate_lines();
        let pre_state = format!("git diff HEAD {base} >> /root/pre_state.patch");
        let safe = format!("git config --global --add safe.directory {REPO_DIR}");
        let cd = format!("cd {REPO_DIR}");
        let diff = format!("git diff {base}");
        let checkout = format!("git checkout {base}");
        // `git apply -v - <<'EOF…'`, the patch, the delimiter: three lines, so that the patch
        // is copied once, into the script.
        let apply_start = format!("git apply -v - <<'{PATCH_HEREDOC}'");
        let applies: Vec<&str> = patches
            .iter()
            .flat_map(|p| [apply_start.as_str(), p.unwrap_or("None"), PATCH_HEREDOC])
            .collect();

        let mut lines: Vec<&str> = vec!["#!/bin/bash", "set -uxo pipefail"];
        lines.extend_from_slice(activate);
        lines.push(&cd);
        lines.push(&pre_state);
        if let Some(cmds) = &self.spec.eval_commands {
            lines.extend(cmds.iter().map(String::as_str));
        }
        lines.extend([
            safe.as_str(),
            cd.as_str(),
            "git status",
            "git show",
            diff.as_str(),
        ]);
        lines.extend_from_slice(activate);
        if !opts.skip_install {
            if let Some(install) = &self.spec.install {
                lines.push(install);
            }
        }
        lines.extend(applies.iter().copied());
        if opts.coverage && opts.tracer_fixed {
            lines.push(TRACER_FIXED_LINE);
        }
        lines.push(test_command);
        if matches!(opts.exec_mode, ExecMode::ReproductionScript(_)) {
            lines.push("echo $?");
        }
        if opts.coverage {
            lines.push("cat coverage.cover");
        }
        lines.push(&checkout);
        lines.push("git apply /root/pre_state.patch");
        script(&lines)
    }

    /// Test directives of `patch` for this repository (§4.4).
    pub fn directives(&self, patch: &str) -> Vec<String> {
        let exts: Vec<&str> = self
            .non_test_extensions
            .iter()
            .map(String::as_str)
            .collect();
        test_directives(patch, &self.repo, &exts)
    }

    /// Renders one run.
    pub fn render_run(
        &self,
        kind: RunKind,
        inputs: &RunInputs<'_>,
        opts: &EvalOptions,
    ) -> Result<RenderedRun, SpecError> {
        let directives = match kind {
            RunKind::GoldPre | RunKind::GoldPost => self.directives(inputs.gold_test_patch),
            _ => self.directives(inputs.model_patch),
        };
        self.render_run_with(kind, inputs, directives, opts)
    }

    /// Renders the six runs in the original's order (pred_pre … base_post).
    pub fn render_runs(
        &self,
        inputs: &RunInputs<'_>,
        opts: &EvalOptions,
    ) -> Result<Vec<RenderedRun>, SpecError> {
        let model = self.directives(inputs.model_patch);
        let gold = self.directives(inputs.gold_test_patch);
        RunKind::ALL
            .into_iter()
            .map(|kind| {
                let d = match kind {
                    RunKind::GoldPre | RunKind::GoldPost => gold.clone(),
                    _ => model.clone(),
                };
                self.render_run_with(kind, inputs, d, opts)
            })
            .collect()
    }

    fn render_run_with(
        &self,
        kind: RunKind,
        inputs: &RunInputs<'_>,
        directives: Vec<String>,
        opts: &EvalOptions,
    ) -> Result<RenderedRun, SpecError> {
        if let ExecMode::ReproductionScript(name) = &opts.exec_mode {
            if name.is_empty() {
                return Err(SpecError::MissingScriptName);
            }
        }
        let patches = patch_list(kind, inputs);
        let test_command = self.test_command(&directives, opts)?;
        let eval_script = self.eval_script_with(&patches, &test_command, opts);
        Ok(RenderedRun {
            kind,
            patch_list: patches.iter().map(|p| p.map(str::to_string)).collect(),
            directives_hash: directives_hash(&directives),
            directives,
            test_command,
            eval_script,
        })
    }

    /// The `exec_spec.json` the original writes into a run's log directory: its dataclass fields
    /// followed by `install`, `cache_level`, `test_command` and `req_install_commands`, in
    /// Python's `json.dumps` format.
    pub fn exec_spec_json(
        &self,
        run: &RenderedRun,
        opts: &EvalOptions,
        ctx: &ExecSpecJsonContext,
    ) -> String {
        let patches: Vec<Option<&str>> = run.patch_list.iter().map(Option::as_deref).collect();
        self.exec_spec_json_with(run, &patches, opts, ctx)
    }

    /// [`Self::exec_spec_json`] with the run's patches given by the caller ([`patch_list`] of
    /// the run's inputs) instead of `run.patch_list`, which may then be emptied: a caller that
    /// holds the inputs needs no second copy of a big patch.
    pub fn exec_spec_json_with(
        &self,
        run: &RenderedRun,
        patch_list: &[Option<&str>],
        opts: &EvalOptions,
        ctx: &ExecSpecJsonContext,
    ) -> String {
        let mut m = Map::new();
        m.insert("instance_id".into(), json!(self.instance_id));
        m.insert("repo".into(), json!(self.repo));
        m.insert("version".into(), json!(self.version));
        m.insert(
            "environment_setup_commit".into(),
            json!(self.environment_setup_commit),
        );
        // The patches (a model patch can be tens of megabytes) are written straight from the run
        // instead of being copied into a `Value` first: the fields before them and the fields
        // after them are two objects, joined around the list.
        let before = std::mem::take(&mut m);
        m.insert("arch".into(), json!(self.arch.as_str()));
        m.insert("base_commit".into(), json!(self.base_commit));
        m.insert("test_directives".into(), json!(run.directives));
        m.insert("coverage_files".into(), json!(self.coverage_files));
        m.insert("env_name".into(), json!(crate::reqs::ENV_NAME));
        m.insert("run_id".into(), json!(ctx.run_id));
        m.insert("patch_id".into(), json!(run.kind.patch_id(&ctx.model_dir)));
        m.insert("timeout".into(), json!(ctx.timeout));
        m.insert("rm_image".into(), json!(ctx.rm_image));
        m.insert("force_rebuild".into(), json!(ctx.force_rebuild));
        m.insert("exec_mode".into(), json!(opts.exec_mode.as_str()));
        m.insert(
            "reproduction_script_name".into(),
            json!(opts.exec_mode.script_name()),
        );
        m.insert("compute_coverage".into(), json!(opts.coverage));
        m.insert("install".into(), install_json(&self.spec));
        m.insert(
            "cache_level".into(),
            json!(if ctx.rm_image { "env" } else { "instance" }),
        );
        m.insert("test_command".into(), json!(run.test_command));
        m.insert(
            "req_install_commands".into(),
            json!(self.req_install_commands),
        );
        let head = py::json_dumps(&Value::Object(before));
        let tail = py::json_dumps(&Value::Object(m));
        let patches: usize = patch_list.iter().flatten().map(|p| p.len()).sum();
        let mut out = String::with_capacity(head.len() + tail.len() + patches + patches / 8 + 64);
        out.push_str(&head[..head.len() - 1]);
        out.push_str(", \"patch_list\": [");
        for (i, patch) in patch_list.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            match patch {
                Some(p) => swtbench_core::py::write_str(&mut out, p),
                None => out.push_str("null"),
            }
        }
        out.push_str("], ");
        out.push_str(&tail[1..]);
        out
    }
}

/// The patches a run of `kind` applies, in order ([`RenderedRun::patch_list`], borrowed): the
/// gold code patch for post runs, then the test patch (`None` for the base runs).
pub fn patch_list<'a>(kind: RunKind, inputs: &RunInputs<'a>) -> Vec<Option<&'a str>> {
    let test_patch: Option<&str> = match kind {
        RunKind::PredPre | RunKind::PredPost => Some(inputs.model_patch),
        RunKind::GoldPre | RunKind::GoldPost => Some(inputs.gold_test_patch),
        RunKind::BasePre | RunKind::BasePost => None,
    };
    let mut patches: Vec<Option<&str>> = Vec::with_capacity(2);
    if kind.is_post() {
        patches.push(Some(inputs.gold_code_patch));
    }
    patches.push(test_patch);
    patches
}

/// Leftmost `python -m` or `python3 -m` (the original's `python(3?) -m`).
fn find_python_m(s: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find("python") {
        let at = from + i;
        let rest = &s[at + "python".len()..];
        if rest.starts_with(" -m") || rest.starts_with("3 -m") {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The table entry as the original's `install` dict (keys present only when set).
fn install_json(spec: &VersionSpec) -> Value {
    let mut m = Map::new();
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            m.insert(k.to_string(), v);
        }
    };
    put("python", spec.python.as_ref().map(|v| json!(v)));
    put("packages", spec.packages.as_ref().map(|v| json!(v)));
    put("install", spec.install.as_ref().map(|v| json!(v)));
    put("pip_packages", spec.pip_packages.as_ref().map(|v| json!(v)));
    put("pre_install", spec.pre_install.as_ref().map(|v| json!(v)));
    put(
        "eval_commands",
        spec.eval_commands.as_ref().map(|v| json!(v)),
    );
    put("no_use_env", spec.no_use_env.map(|v| json!(v)));
    put(
        "execute_test_as_nonroot",
        spec.execute_test_as_nonroot.map(|v| json!(v)),
    );
    put("test_cmd", spec.test_cmd.as_ref().map(|v| json!(v)));
    put("test_command", spec.test_command.as_ref().map(|v| json!(v)));
    if spec.provider != Provider::Conda {
        put("provider", Some(json!(spec.provider.as_str())));
    }
    match &spec.base {
        BaseImage::Default => {}
        BaseImage::Image(tag) => put("base_image", Some(json!(tag))),
        BaseImage::Dockerfile { path, .. } => put("base_dockerfile", Some(json!(path))),
    }
    put("interpreter", spec.interpreter.as_ref().map(|v| json!(v)));
    put("python_image", spec.python_image.as_ref().map(|v| json!(v)));
    put("no_deps", spec.no_deps.map(|v| json!(v)));
    put("frozen_pins", spec.frozen_pins.map(|v| json!(v)));
    Value::Object(m)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
mod tests {
    use super::*;

    #[test]
    fn the_exit_record_goes_after_the_last_test_command_line_only() {
        let script =
            "#!/bin/bash\ngit apply -v - <<'EOF'\npytest t.py\nEOF\npytest t.py\necho $?\n";
        let out = record_test_exit(script, "pytest t.py").unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[2], "pytest t.py", "the heredoc is untouched");
        assert_eq!(lines[4], "pytest t.py");
        assert!(lines[5].starts_with("{ swtbench_test_exit=$?;"), "{out}");
        assert!(lines[5].ends_with("} 2>/dev/null"), "{out}");
        assert_eq!(lines[6], "echo $?");
        // Everything but the one line is the original.
        let mut without = lines.clone();
        without.remove(5);
        assert_eq!(without.join("\n") + "\n", script);
        assert_eq!(record_test_exit(script, "tox"), None);
    }

    /// Run through bash as the container runs it: the same output (no trace of the added line),
    /// the same `echo $?`, the same exit code, and the file holds the test command's status.
    #[test]
    fn the_exit_record_prints_nothing_and_keeps_the_status() {
        let dir = std::env::temp_dir().join(format!("swtbench-exit-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let test_command = "ls /nonexistent-swtbench-path";
        let script = format!(
            "#!/bin/bash\nset -uxo pipefail\n{test_command}\necho $?\ngit apply /nonexistent.patch\n"
        );
        let run = |text: &str| {
            let path = dir.join("s.sh");
            std::fs::write(&path, text).unwrap();
            let out = std::process::Command::new("bash")
                .arg(&path)
                .output()
                .unwrap();
            let mut all = out.stdout.clone();
            all.extend_from_slice(&out.stderr);
            (
                String::from_utf8_lossy(&all).into_owned(),
                out.status.code(),
            )
        };
        let _ = std::fs::remove_file(TEST_EXIT_FILE);
        let plain = run(&script);
        let recorded = run(&record_test_exit(&script, test_command).unwrap());
        assert_eq!(plain, recorded);
        assert!(plain.0.contains("+ echo 2"), "{}", plain.0);
        assert_eq!(
            std::fs::read_to_string(TEST_EXIT_FILE).unwrap().trim(),
            "2",
            "ls of a missing path exits 2"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
