//! Every branch of the test command (§4.5 and §8 of the behaviour reference), on the embedded
//! table's real commands and on custom table entries for the branches no shipped command reaches.

use serde_json::json;
use swtbench_core::{Instance, PatchLayout};
use swtbench_spec::{
    Arch, EvalOptions, ExecMode, ExecSpec, ReadError, SpecError, SpecTable, TableSyntax,
};

const TRACE: &str = "python3 /root/trace.py --count -C coverage.cover --include-pattern";
const SYMPY: &str = "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning'";

fn instance(repo: &str, version: &str, code_patch: &str) -> Instance {
    let row = json!({
        "instance_id": format!("{}-1", repo.replace('/', "__")), "repo": repo, "version": version,
        "base_commit": "b0", "environment_setup_commit": "e0",
        "patch": code_patch, "test_patch": "",
    });
    Instance::from_row(&row, PatchLayout::Swebench).unwrap()
}

fn no_files(_: &str, _: &str, _: &str) -> Result<Option<String>, ReadError> {
    Ok(Some("pytest\n".into()))
}

fn spec_in(table: &SpecTable, repo: &str, version: &str, code_patch: &str) -> ExecSpec {
    ExecSpec::new(
        &instance(repo, version, code_patch),
        table,
        Arch::X86_64,
        &no_files,
    )
    .unwrap()
}

fn spec(repo: &str, version: &str) -> ExecSpec {
    spec_in(
        SpecTable::embedded(),
        repo,
        version,
        "diff --git a/pkg/mod.py b/pkg/mod.py\n",
    )
}

fn custom(test_command: &str) -> ExecSpec {
    let mut t = SpecTable::embedded().clone();
    let text = format!(
        "[repos.\"acme/w\"]\ntest_command = {test_command:?}\n[[repos.\"acme/w\".specs]]\nversions = [\"1\"]\npython = \"3.11\"\n"
    );
    t.merge(
        SpecTable::parse(&text, "t.toml", TableSyntax::Toml, &|_| {
            Err(String::new().into())
        })
        .unwrap(),
    );
    spec_in(&t, "acme/w", "1", "diff --git a/pkg/mod.py b/pkg/mod.py\n")
}

fn d(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn cov() -> EvalOptions {
    EvalOptions::default()
}

fn nocov() -> EvalOptions {
    EvalOptions {
        coverage: false,
        ..EvalOptions::default()
    }
}

#[test]
fn without_coverage_the_prefix_and_directives_are_joined_by_spaces() {
    let s = spec("pytest-dev/pytest", "8.0");
    assert_eq!(
        s.test_command(&d(&["testing/a.py", "testing/b.py"]), &nocov())
            .unwrap(),
        "pytest -rA testing/a.py testing/b.py"
    );
    // No directives: the bare prefix, no trailing space (the whole suite runs, as the original).
    assert_eq!(s.test_command(&[], &nocov()).unwrap(), "pytest -rA");
    let dj = spec("django/django", "3.0");
    assert_eq!(
        dj.test_command(&d(&["model_fields.tests"]), &nocov())
            .unwrap(),
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 model_fields.tests"
    );
}

#[test]
fn pytest_commands_lose_tb_no_and_run_as_a_traced_module() {
    let s = spec("astropy/astropy", "4.3");
    assert_eq!(
        s.test_command(&d(&["astropy/tests/test_x.py"]), &cov()).unwrap(),
        format!(
            "{TRACE} '/testbed/(pkg/mod\\.py)' -m pytest --no-header -rA  -p no:cacheprovider astropy/tests/test_x.py"
        )
    );
}

#[test]
fn tox_and_unittest_commands_run_as_traced_modules() {
    let s = spec("sphinx-doc/sphinx", "5.0");
    assert_eq!(
        s.test_command(&d(&["tests/test_ext.py"]), &cov()).unwrap(),
        format!("{TRACE} '/testbed/(pkg/mod\\.py)' -m tox -epy39 -v -- tests/test_ext.py")
    );
    let u = custom("  unittest discover");
    assert_eq!(
        u.test_command(&d(&["t"]), &cov()).unwrap(),
        format!("{TRACE} '/testbed/(pkg/mod\\.py)' -m   unittest discover t")
    );
}

#[test]
fn python_dash_m_is_replaced_by_the_tracer_once() {
    let s = custom("env X=1 python3 -m pytest -rA");
    assert_eq!(
        s.test_command(&d(&["t.py"]), &cov()).unwrap(),
        format!("env X=1 {TRACE} '/testbed/(pkg/mod\\.py)' -m pytest -rA t.py")
    );
    let s = custom("python -m pytest --tb=no");
    assert_eq!(
        s.test_command(&d(&["python -m x"]), &cov()).unwrap(),
        format!("{TRACE} '/testbed/(pkg/mod\\.py)' -m pytest  python -m x")
    );
}

#[test]
fn sympy_command_keeps_its_environment_prefix() {
    let s = spec("sympy/sympy", "1.7");
    let dirs = d(&["sympy/core/tests/test_basic.py"]);
    assert_eq!(
        s.test_command(&dirs, &cov()).unwrap(),
        format!(
            "{SYMPY} {TRACE} '/testbed/(pkg/mod\\.py)' bin/test -C --verbose sympy/core/tests/test_basic.py"
        )
    );
    let compat = EvalOptions {
        sympy_strip_compat: true,
        ..EvalOptions::default()
    };
    // The original's str.strip(chars) eats the final "y" of the last directive …
    assert_eq!(
        s.test_command(&dirs, &compat).unwrap(),
        format!(
            "{SYMPY} {TRACE} '/testbed/(pkg/mod\\.py)' bin/test -C --verbose sympy/core/tests/test_basic.p"
        )
    );
    // … and "ose" of --verbose when there are no directives.
    assert!(s
        .test_command(&[], &compat)
        .unwrap()
        .ends_with(" bin/test -C --verb"));
    assert!(s
        .test_command(&[], &cov())
        .unwrap()
        .ends_with(" bin/test -C --verbose"));
    // Without coverage the command is untouched either way.
    assert_eq!(
        s.test_command(
            &dirs,
            &EvalOptions {
                coverage: false,
                ..compat
            }
        )
        .unwrap(),
        format!("{SYMPY} bin/test -C --verbose sympy/core/tests/test_basic.py")
    );
}

#[test]
fn other_commands_are_run_by_the_tracer_as_scripts() {
    let s = spec("django/django", "3.0");
    assert_eq!(
        s.test_command(&d(&["a.tests"]), &cov()).unwrap(),
        format!(
            "{TRACE} '/testbed/(pkg/mod\\.py)' ./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 a.tests"
        )
    );
    // humaneval's `python test.py` is broken under the tracer in the original; kept as is.
    let h = spec("swe-bench/humaneval", "1.0");
    assert_eq!(
        h.test_command(&d(&["test.py"]), &cov()).unwrap(),
        format!("{TRACE} '/testbed/(pkg/mod\\.py)' python test.py")
    );
}

#[test]
fn reproduction_script_mode() {
    let s = spec("pytest-dev/pytest", "8.0");
    let repro = |coverage| EvalOptions {
        exec_mode: ExecMode::ReproductionScript("scripts/repro.py".into()),
        coverage,
        ..EvalOptions::default()
    };
    assert_eq!(
        s.test_command(&d(&["ignored.py"]), &repro(false)).unwrap(),
        "python3 /testbed/scripts/repro.py"
    );
    assert_eq!(
        s.test_command(&[], &repro(true)).unwrap(),
        format!(
            "{TRACE} '/testbed/(pkg/mod\\.py)' /testbed/scripts/repro.py && python3 /testbed/scripts/repro.py"
        )
    );
    // No test command is needed in this mode, even for a repository without one.
    let dbt = spec("dbt-labs/dbt-core", "1.7");
    assert!(dbt.test_command(&[], &repro(false)).is_ok());
    assert!(matches!(
        dbt.test_command(&[], &nocov()),
        Err(SpecError::NoTestCommand { .. })
    ));
}

#[test]
fn include_pattern_lists_escaped_files_of_both_sides_sorted() {
    let patch = "diff --git a/z/b-c.py b/z/b-c.py\n\
                 diff --git a/old name.py b/new+name.py\n\
                 diff --git a/a.py b/a.py\n";
    let s = spec_in(SpecTable::embedded(), "pytest-dev/pytest", "8.0", patch);
    let cmd = s.test_command(&[], &cov()).unwrap();
    assert!(
        cmd.contains("'/testbed/(a\\.py|new\\+name\\.py|old\\ name\\.py|z/b\\-c\\.py)'"),
        "{cmd}"
    );
    let empty = spec_in(SpecTable::embedded(), "pytest-dev/pytest", "8.0", "");
    assert!(empty
        .test_command(&[], &cov())
        .unwrap()
        .contains("--include-pattern '/testbed/()'"));
}

#[test]
fn the_shared_variant_is_read_back_from_every_rendered_script() {
    use swtbench_core::layout::SharedVariant;
    use swtbench_spec::RunInputs;
    let s = spec("pytest-dev/pytest", "8.0");
    let model = "diff --git a/testing/test_x.py b/testing/test_x.py\n--- a/testing/test_x.py\n+++ b/testing/test_x.py\n@@ -1 +1 @@\n-a\n+b\n";
    let inputs = RunInputs {
        model_patch: model,
        gold_test_patch: model,
        gold_code_patch: "diff --git a/pkg/mod.py b/pkg/mod.py\n",
    };
    let mut seen = std::collections::BTreeSet::new();
    for repro in [false, true] {
        for coverage in [false, true] {
            for tracer_fixed in [false, true] {
                let opts = EvalOptions {
                    exec_mode: if repro {
                        ExecMode::ReproductionScript("repro.py".into())
                    } else {
                        ExecMode::UnitTest
                    },
                    coverage,
                    tracer_fixed,
                    ..EvalOptions::default()
                };
                for run in s.render_runs(&inputs, &opts).unwrap() {
                    assert_eq!(
                        SharedVariant::of_eval_script(&run.eval_script),
                        opts.shared_variant(),
                        "{opts:?} {}",
                        run.kind
                    );
                    let fixed_line = run
                        .eval_script
                        .lines()
                        .any(|l| l == "export SWTBENCH_TRACE_COMPAT=0");
                    assert_eq!(fixed_line, coverage && tracer_fixed);
                }
                seen.insert(opts.shared_variant().dir_key("h"));
            }
        }
    }
    // Six distinct directories (the fixed tracer means nothing without coverage); only the
    // default keeps the plain name.
    assert_eq!(seen.len(), 6, "{seen:?}");
    assert_eq!(
        EvalOptions::default().shared_variant(),
        SharedVariant::DEFAULT
    );
    assert!(seen.contains("h"));
}
