//! The uv provider: its Dockerfile and setup script, the frozen pins of SWE-bench Verified
//! instances, the activation line where conda's is, `--env-provider uv` over the embedded table,
//! and image keys that never collide with a conda or venv environment.

use serde_json::json;
use swtbench_core::{Instance, PatchLayout};
use swtbench_spec::{
    Arch, BaseImage, EvalOptions, ExecSpec, Provider, ReadError, RunInputs, SpecTable, TableSyntax,
    UV_VERSION,
};

const CODE: &str = "diff --git a/astropy/x.py b/astropy/x.py\n--- a/astropy/x.py\n+++ b/astropy/x.py\n@@ -1 +1 @@\n-a\n+b\n";
const TESTS: &str = "diff --git a/astropy/tests/test_x.py b/astropy/tests/test_x.py\n--- a/astropy/tests/test_x.py\n+++ b/astropy/tests/test_x.py\n@@ -1 +1 @@\n-a\n+b\n";

fn instance(id: &str, repo: &str, version: &str) -> Instance {
    let row = json!({
        "instance_id": id, "repo": repo, "version": version,
        "base_commit": "b0b0", "environment_setup_commit": "e0e0",
        "patch": CODE, "test_patch": TESTS,
    });
    Instance::from_row(&row, PatchLayout::Swebench).unwrap()
}

fn no_files(_: &str, _: &str, p: &str) -> Result<Option<String>, ReadError> {
    Err(format!("no file should be read, asked for {p}").into())
}

fn table(extra: &str) -> SpecTable {
    let mut t = SpecTable::embedded().clone();
    let no = |p: &str| -> Result<String, ReadError> { Err(format!("no {p}").into()) };
    t.merge(SpecTable::parse(extra, "uv.toml", TableSyntax::Toml, &no).unwrap());
    t
}

const CALC: &str = r#"
[repos."swtfix/calc"]
test_command = "pytest -rA -p no:cacheprovider"

[[repos."swtfix/calc".specs]]
versions = ["0.1"]
provider = "uv"
python = "3.11"
python_image = "swtbench-test-python:{version}-slim-bookworm"
pip_packages = ["pytest==8.3.3"]
install = "python -m pip install -e . --no-build-isolation"

[[repos."swtfix/calc".specs]]
versions = ["0.2"]
provider = "uv"
python = "3.11"
no_deps = true
packages = "iniconfig==2.0.0"
pip_packages = ["pytest==8.3.3"]

[[repos."swtfix/calc".specs]]
versions = ["0.3"]
provider = "venv"
base_image = "swtbench-fixture-base:bookworm"
python = "3.11"
pip_packages = ["pytest==8.3.3"]
install = "python -m pip install -e . --no-build-isolation"

[[repos."swtfix/calc".specs]]
versions = ["0.4"]
provider = "uv"
python = "3.11"
frozen_pins = true
packages = "pytest"
"#;

#[test]
fn uv_dockerfile_and_setup_script() {
    let t = table(CALC);
    let s = ExecSpec::new(
        &instance("swtfix__calc-1", "swtfix/calc", "0.1"),
        &t,
        Arch::X86_64,
        &no_files,
    )
    .unwrap();
    assert_eq!(s.provider(), Provider::Uv);
    assert_eq!(s.keys.base, "swtbench-test-python:3.11-slim-bookworm");
    assert_eq!(
        s.base_dockerfile, None,
        "the Python image is never built by swtbench"
    );
    assert_eq!(
        s.env_dockerfile,
        "FROM --platform=linux/x86_64 swtbench-test-python:3.11-slim-bookworm\n\n\
         COPY ./setup_env.sh /root/\nRUN chmod +x /root/setup_env.sh\nRUN /bin/bash /root/setup_env.sh\n\n\
         WORKDIR /testbed/\n\n# Automatically activate the testbed environment\n\
         RUN echo \"source /opt/swtbench-venv/bin/activate\" > /root/.bashrc\n"
            .to_string()
            + &swtbench_tracer::native_dockerfile_lines()
    );
    assert_eq!(
        s.setup_env_sh,
        format!(
            "#!/bin/bash\nset -euxo pipefail\nexport UV_NO_CACHE=1\n\
             missing=''; command -v git >/dev/null || missing=git; command -v gcc >/dev/null || missing=\"$missing build-essential\"; if [ -n \"$missing\" ]; then apt-get update && apt-get install -y --no-install-recommends $missing && rm -rf /var/lib/apt/lists/*; fi\n\
             id -u nonroot >/dev/null 2>&1 || useradd -m nonroot\n\
             python -m pip install --no-cache-dir --disable-pip-version-check uv=={UV_VERSION}\n\
             python -m uv venv --seed --python \"$(command -v python)\" /opt/swtbench-venv\n\
             ln -sf \"$(python -c 'import uv; print(uv.find_uv_bin())')\" /opt/swtbench-venv/bin/uv\n\
             source /opt/swtbench-venv/bin/activate\n\
             uv pip install pytest==8.3.3\n"
        )
    );
    assert!(s.pins.is_none() && s.env_warnings.is_empty());
    // setup_repo.sh activates the venv where the conda one activates testbed.
    assert!(s.setup_repo_sh.contains(
        "git remote remove origin\nsource /opt/swtbench-venv/bin/activate\necho \"Current environment: $VIRTUAL_ENV\"\npython -m pip install -e . --no-build-isolation\n"
    ), "{}", s.setup_repo_sh);
}

#[test]
fn no_deps_installs_without_dependencies() {
    let t = table(CALC);
    let s = ExecSpec::new(
        &instance("swtfix__calc-2", "swtfix/calc", "0.2"),
        &t,
        Arch::X86_64,
        &no_files,
    )
    .unwrap();
    assert_eq!(s.keys.base, "python:3.11-slim-bookworm");
    assert!(
        s.setup_env_sh.ends_with(
            "uv pip install --no-deps iniconfig==2.0.0\nuv pip install --no-deps pytest==8.3.3\n"
        ),
        "{}",
        s.setup_env_sh
    );
}

#[test]
fn keys_include_provider_and_python_image() {
    let t = table(CALC);
    let uv = ExecSpec::new(
        &instance("swtfix__calc-1", "swtfix/calc", "0.1"),
        &t,
        Arch::X86_64,
        &no_files,
    )
    .unwrap();
    let venv = ExecSpec::new(
        &instance("swtfix__calc-1", "swtfix/calc", "0.3"),
        &t,
        Arch::X86_64,
        &no_files,
    )
    .unwrap();
    assert_ne!(uv.keys.env, venv.keys.env);
    assert_ne!(uv.keys.instance, venv.keys.instance);
    // Another Python image: another key, same scripts.
    let other = t
        .with_env_provider(Provider::Uv, Some("my-registry/python:{version}-slim"))
        .0;
    let o = ExecSpec::new(
        &instance("swtfix__calc-1", "swtfix/calc", "0.1"),
        &other,
        Arch::X86_64,
        &no_files,
    )
    .unwrap();
    assert_eq!(o.keys.base, "my-registry/python:3.11-slim");
    assert_ne!(o.keys.env, uv.keys.env);
    // The venv entry mapped to uv: built on the Python image, not the venv base image.
    let v2 = ExecSpec::new(
        &instance("swtfix__calc-1", "swtfix/calc", "0.3"),
        &other,
        Arch::X86_64,
        &no_files,
    )
    .unwrap();
    assert_eq!(v2.keys.base, "my-registry/python:3.11-slim");
    assert_eq!(v2.provider(), Provider::Uv);
}

#[test]
fn verified_instance_gets_its_frozen_pins_without_the_project() {
    let (t, _) = SpecTable::embedded().with_env_provider(Provider::Uv, None);
    let i = instance("astropy__astropy-12907", "astropy/astropy", "4.3");
    let s = ExecSpec::new(&i, &t, Arch::X86_64, &no_files).unwrap();
    assert_eq!(s.keys.base, "python:3.9-slim-bookworm");
    let pins = s.pins.as_ref().unwrap();
    assert_eq!(pins.frozen_python, "3.9.20");
    assert!(
        pins.source
            .contains("frozen environment of astropy__astropy-12907"),
        "{}",
        pins.source
    );
    let sh = &s.setup_env_sh;
    assert!(
        sh.contains("\npytest==7.4.0\n") && sh.contains("\npyerfa==2.0.0.3\n"),
        "{sh}"
    );
    assert!(!sh.lines().any(|l| l.starts_with("astropy==")), "{sh}");
    assert!(sh.contains("\npytest-astropy==0.10.0\n"), "{sh}");
    assert!(!sh.contains("libgcc") && !sh.contains("openssl=="), "{sh}");
    assert!(
        sh.contains(
            "\nuv pip install --no-deps -r $HOME/requirements.txt\nrm $HOME/requirements.txt\n"
        ),
        "{sh}"
    );
    // The frozen set is the whole environment: the spec's pip_packages are not installed again.
    assert!(!sh.contains("uv pip install attrs"), "{sh}");
    // pre_install and install stay.
    assert!(
        s.setup_repo_sh.contains("sed -i 's/requires = "),
        "{}",
        s.setup_repo_sh
    );
    assert!(s
        .setup_repo_sh
        .ends_with("python -m pip install -e .[test] --verbose\n"));
}

#[test]
fn activation_line_stands_where_conda_activates_testbed() {
    let i = instance("astropy__astropy-12907", "astropy/astropy", "4.3");
    let conda = ExecSpec::new(&i, SpecTable::embedded(), Arch::X86_64, &no_files);
    // The conda entry embeds pip_packages only, so it needs no file either.
    let conda = conda.unwrap();
    let (t, _) = SpecTable::embedded().with_env_provider(Provider::Uv, None);
    let uv = ExecSpec::new(&i, &t, Arch::X86_64, &no_files).unwrap();
    let inputs = RunInputs {
        model_patch: TESTS,
        gold_test_patch: TESTS,
        gold_code_patch: CODE,
    };
    for coverage in [false, true] {
        let opts = EvalOptions {
            coverage,
            ..EvalOptions::default()
        };
        let c = conda.render_runs(&inputs, &opts).unwrap();
        let u = uv.render_runs(&inputs, &opts).unwrap();
        assert_eq!(c.len(), u.len());
        for (c, u) in c.iter().zip(&u) {
            let expected = c.eval_script.replace(
                "source /opt/miniconda3/bin/activate\nconda activate testbed\n",
                "source /opt/swtbench-venv/bin/activate\n",
            );
            assert_eq!(u.eval_script, expected, "{:?}", c.kind);
            assert!(c.eval_script.contains("conda activate testbed"));
        }
    }
    let expected_repo = conda.setup_repo_sh.replace(
        "source /opt/miniconda3/bin/activate\nconda activate testbed\necho \"Current environment: $CONDA_DEFAULT_ENV\"\n",
        "source /opt/swtbench-venv/bin/activate\necho \"Current environment: $VIRTUAL_ENV\"\n",
    );
    assert_eq!(uv.setup_repo_sh, expected_repo);
}

#[test]
fn env_provider_uv_serves_old_pythons_with_venv_and_pip() {
    let (t, notes) = SpecTable::embedded().with_env_provider(Provider::Uv, None);
    assert!(t
        .repos
        .values()
        .flat_map(|r| r.versions.values())
        .all(|s| s.provider == Provider::Uv));
    assert!(
        notes.contains(&"django/django 3.0 (Python 3.6)".to_string()),
        "{notes:?}"
    );
    assert!(
        !notes.iter().any(|n| n.starts_with("astropy/astropy 4.3")),
        "{notes:?}"
    );
    let astropy = t.lookup("astropy/astropy", "4.3").unwrap();
    assert_eq!(astropy.spec.base, BaseImage::Default);
    assert_eq!(astropy.spec.frozen_pins, Some(true));
    // django 3.0 (Python 3.6): the frozen pins, installed by pip in a venv of the Python image.
    let s = ExecSpec::new(
        &instance("django__django-11099", "django/django", "3.0"),
        &t,
        Arch::X86_64,
        &no_files,
    )
    .unwrap();
    assert_eq!(s.keys.base, "python:3.6-slim-bookworm");
    let sh = &s.setup_env_sh;
    assert!(!sh.contains("uv "), "{sh}");
    assert!(
        sh.contains(
            "\npython -m venv /opt/swtbench-venv\nsource /opt/swtbench-venv/bin/activate\n"
        ),
        "{sh}"
    );
    assert!(
        sh.contains("\nasgiref==3.4.1\n") && !sh.lines().any(|l| l.starts_with("django==")),
        "{sh}"
    );
    assert!(sh.ends_with("python -m pip install --no-deps -r $HOME/requirements.txt\nrm $HOME/requirements.txt\n"), "{sh}");
    // The frozen environment's pip first (3.6's own pip 18.1 cannot read bcrypt's manylinux2014
    // wheels and builds it from source, which needs Rust), then the pins.
    let pip_first = sh
        .find("\npython -m pip install --no-deps pip==21.2.2\n")
        .expect("the pinned pip is installed first");
    assert!(
        sh.contains("\npip==21.2.2\n") && sh.contains("\nbcrypt=="),
        "{sh}"
    );
    assert!(pip_first < sh.find("cat <<").unwrap(), "{sh}");
    // Where uv makes the environment, uv installs everything.
    let s = ExecSpec::new(
        &instance("django__django-15061", "django/django", "4.0"),
        &t,
        Arch::X86_64,
        &no_files,
    )
    .unwrap();
    assert!(
        s.setup_env_sh.contains("uv pip install --no-deps -r")
            && !s
                .setup_env_sh
                .contains("python -m pip install --no-deps pip=="),
        "{}",
        s.setup_env_sh
    );
}

#[test]
fn instances_without_frozen_pins_borrow_or_warn() {
    let (t, _) = SpecTable::embedded().with_env_provider(Provider::Uv, None);
    // Not in Verified, but astropy 4.3 is: borrowed.
    let s = ExecSpec::new(
        &instance("astropy__astropy-99999", "astropy/astropy", "4.3"),
        &t,
        Arch::X86_64,
        &no_files,
    )
    .unwrap();
    let pins = s.pins.unwrap();
    assert!(
        pins.source.contains("borrowed from astropy__astropy-"),
        "{}",
        pins.source
    );
    assert!(s.env_warnings.is_empty());
    // No Verified instance of this repository: the spec's packages, unpinned, with a warning.
    let t = table(CALC);
    let s = ExecSpec::new(
        &instance("swtfix__calc-4", "swtfix/calc", "0.4"),
        &t,
        Arch::X86_64,
        &no_files,
    )
    .unwrap();
    assert!(s.pins.is_none());
    assert!(
        s.setup_env_sh
            .ends_with("source /opt/swtbench-venv/bin/activate\nuv pip install pytest\n"),
        "{}",
        s.setup_env_sh
    );
    assert_eq!(s.env_warnings.len(), 1);
    assert!(
        s.env_warnings[0].contains("unpinned"),
        "{:?}",
        s.env_warnings
    );
}

#[test]
fn invalid_uv_entries_are_explained() {
    let no = |p: &str| -> Result<String, ReadError> { Err(format!("no {p}").into()) };
    for (text, needle) in [
        ("[[repos.\"a/b\".specs]]\nversions = [\"1\"]\nprovider = \"uv\"\n", "`python` is required for uv"),
        ("[[repos.\"a/b\".specs]]\nversions = [\"1\"]\npython = \"3.9\"\nfrozen_pins = true\n", "apply to provider = \"uv\" only"),
        ("[[repos.\"a/b\".specs]]\nversions = [\"1\"]\nprovider = \"uv\"\npython = \"3.9\"\ninterpreter = \"python3\"\n", "venv\" only"),
    ] {
        let e = SpecTable::parse(text, "bad.toml", TableSyntax::Toml, &no).unwrap_err().to_string();
        assert!(e.contains(needle) && e.contains("bad.toml"), "{e}");
    }
}

/// uv environments install an entry's system packages (`pre_install`'s apt-get and locale lines)
/// once, in the env image; the lines that edit the checkout stay in `setup_repo.sh`, in their
/// order. A conda environment keeps every line where the original has it.
#[test]
fn uv_environments_install_system_packages_once_in_the_env_image() {
    let (uv, _) = SpecTable::embedded().with_env_provider(Provider::Uv, None);
    // Requirement files, where an entry reads them, are empty here.
    let files = |_: &str, _: &str, _: &str| Ok::<_, ReadError>(Some(String::new()));
    let render = |t: &SpecTable, id: &str, repo: &str, version: &str| {
        ExecSpec::new(&instance(id, repo, version), t, Arch::X86_64, &files).unwrap()
    };
    let sphinx_pre = uv
        .lookup("sphinx-doc/sphinx", "7.2")
        .unwrap()
        .spec
        .pre_install
        .clone()
        .unwrap();
    let s = render(&uv, "sphinx-doc__sphinx-11500", "sphinx-doc/sphinx", "7.2");
    for line in &sphinx_pre {
        let in_env = s.setup_env_sh.lines().any(|l| l == line);
        let in_repo = s.setup_repo_sh.lines().any(|l| l == line);
        if line.starts_with("apt-get") {
            assert!(in_env && !in_repo, "{line}\n{}", s.setup_env_sh);
        } else {
            assert!(in_repo && !in_env, "{line}\n{}", s.setup_repo_sh);
        }
    }
    // Before anything is installed into the environment, after the compiler and the user.
    let env_lines: Vec<&str> = s.setup_env_sh.lines().collect();
    let apt = env_lines
        .iter()
        .position(|l| *l == "apt-get update && apt-get install -y graphviz")
        .unwrap();
    let user = env_lines
        .iter()
        .position(|l| l.starts_with("id -u nonroot"))
        .unwrap();
    let first_install = env_lines
        .iter()
        .position(|l| l.contains("pip install"))
        .unwrap();
    assert!(user < apt && apt < first_install, "{}", s.setup_env_sh);

    // Django's locale lines move together, in order.
    let d = render(&uv, "django__django-11000", "django/django", "2.2");
    let env = &d.setup_env_sh;
    let gen = env.find("locale-gen en_US.UTF-8").unwrap();
    let conf = env.find("echo 'en_US UTF-8' > /etc/locale.gen").unwrap();
    let apt = env
        .find("apt-get update && apt-get install -y locales")
        .unwrap();
    assert!(apt < conf && conf < gen, "{env}");
    assert!(!d.setup_repo_sh.contains("locale"), "{}", d.setup_repo_sh);

    // conda: as the original.
    let conda = SpecTable::embedded();
    let c = render(conda, "django__django-11000", "django/django", "2.2");
    assert!(c.setup_repo_sh.contains("locale-gen en_US.UTF-8"));
    assert!(!c.setup_env_sh.contains("locale-gen"));
}

#[test]
fn only_system_lines_count_as_system_packages() {
    use swtbench_spec::system_pre_install as system;
    for yes in [
        "apt-get update && apt-get install -y locales",
        "  DEBIAN_FRONTEND=noninteractive apt-get install -y graphviz",
        "locale-gen en_US.UTF-8",
        "echo 'en_US UTF-8' > /etc/locale.gen",
    ] {
        assert!(system(yes), "{yes}");
    }
    for no in [
        "sed -i 's/pytest/pytest -rA/' tox.ini",
        "echo 'x' > setup.cfg",
        "echo 'x' > /etc/a b",
        "python -m pip install -e .",
        "grep -q 'x' setup.py && sed -i 's/x/y/' setup.py || true",
    ] {
        assert!(!system(no), "{no}");
    }
}

/// Django 3.0–3.2 make their locale before every test run (`locale-gen` in the eval commands):
/// their uv env image gets Debian's `locales` (the original's base image has it; a slim Python
/// image does not, and without it Python 3.6 writes ASCII and a test printing `…` fails). Entries
/// that install `locales` themselves (Django 1.x–2.2) or make no locale (Django 4.0) are unchanged,
/// and `envs lock` does not run the line.
#[test]
fn entries_that_make_a_locale_at_test_time_get_debian_locales() {
    let (t, _) = SpecTable::embedded().with_env_provider(Provider::Uv, None);
    let files = |_: &str, _: &str, _: &str| -> Result<Option<String>, ReadError> {
        Ok(Some("asgiref\n".to_string()))
    };
    let setup = |version: &str| {
        let i = instance("django__django-1", "django/django", version);
        ExecSpec::new(&i, &t, Arch::X86_64, &files).unwrap()
    };
    let line = "[ -f /etc/locale.gen ] || { apt-get update && apt-get install -y --no-install-recommends locales && rm -rf /var/lib/apt/lists/*; }";
    for version in ["3.0", "3.1", "3.2"] {
        let s = setup(version);
        assert!(
            s.setup_env_sh.contains(&format!("\n{line}\n")),
            "{version}: {}",
            s.setup_env_sh
        );
        assert!(!s.lock_script("/out.txt").contains("locales"), "{version}");
        let runs = s
            .render_runs(
                &RunInputs {
                    model_patch: TESTS,
                    gold_test_patch: TESTS,
                    gold_code_patch: CODE,
                },
                &EvalOptions::default(),
            )
            .unwrap();
        assert!(runs[0]
            .eval_script
            .contains("/etc/locale.gen && locale-gen"));
    }
    for version in ["2.2", "4.0", "5.0"] {
        let s = setup(version);
        assert!(
            !s.setup_env_sh.contains(line),
            "{version}: {}",
            s.setup_env_sh
        );
    }
    // Django 2.2's own system lines install and make the locale once, in the env image.
    assert!(setup("2.2")
        .setup_env_sh
        .contains("apt-get update && apt-get install -y locales\n"));
}

/// sphinxcontrib-jsmath 2.0.0 (October 2026) needs Sphinx 5; Sphinx 3.0–4.4 install it unpinned
/// while the table caps the other helpers, and a test loading `sphinxcontrib.jsmath` then fails
/// with `VersionRequirementError` (sphinx-8474's math renderer tests). Under uv those entries'
/// setup.py gets the same cap for jsmath, after the table's own edits and before the install;
/// the conda recipe (the original's) and the entries without the caps (Sphinx ≥ 4.5) are unchanged.
#[test]
fn sphinx_entries_that_cap_the_helpers_cap_jsmath_under_uv() {
    let line = "sed -i 's/sphinxcontrib-jsmath/sphinxcontrib-jsmath<=1.0.1/' setup.py";
    let (uv, _) = SpecTable::embedded().with_env_provider(Provider::Uv, None);
    let conda = SpecTable::embedded();
    let setup = |t: &SpecTable, version: &str| {
        let i = instance("sphinx-doc__sphinx-1", "sphinx-doc/sphinx", version);
        ExecSpec::new(&i, t, Arch::X86_64, &no_files).unwrap()
    };
    for version in ["3.0", "3.4", "4.0", "4.1", "4.4"] {
        let repo = setup(&uv, version).setup_repo_sh;
        let helpers = repo
            .find("sed -i 's/sphinxcontrib-applehelp/")
            .unwrap_or_else(|| panic!("{version}: {repo}"));
        let at = repo
            .find(&format!("{line}\npython -m pip install -e .[test]\n"))
            .unwrap_or_else(|| panic!("{version}: {repo}"));
        assert!(helpers < at, "{version}: {repo}");
        assert_eq!(repo.matches(line).count(), 1, "{version}");
        assert!(
            !setup(conda, version).setup_repo_sh.contains("jsmath"),
            "{version}"
        );
    }
    for version in ["2.4", "4.5", "5.0", "7.1"] {
        assert!(
            !setup(&uv, version).setup_repo_sh.contains("jsmath"),
            "{version}"
        );
    }
}
