//! Environment locks on the spec table: a locked environment installs exactly its entry's pins
//! with `--no-deps`, its image keys change with the pins and only its own do, entries that match
//! no table entry are refused with their line, and an entry made for an instance whose
//! environment changed since refuses that instance.

use serde_json::json;
use swtbench_core::{Instance, PatchLayout};
use swtbench_spec::lock::{job_entries, lock_jobs, LockHow, LOCK_OUTPUT_PATH};
use swtbench_spec::{
    Arch, EnvLock, ExecSpec, Provider, ReadError, SpecError, SpecTable, TableSyntax,
};

fn instance(id: &str, repo: &str) -> Instance {
    let row = json!({
        "instance_id": id, "repo": repo, "version": "0.1",
        "base_commit": "b0b0", "environment_setup_commit": "e0e0",
        "patch": "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n",
        "test_patch": "diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -1 +1 @@\n-a\n+b\n",
    });
    Instance::from_row(&row, PatchLayout::Swebench).unwrap()
}

fn no_files(_: &str, _: &str, p: &str) -> Result<Option<String>, ReadError> {
    Err(format!("no file should be read, asked for {p}").into())
}

const TABLE: &str = r#"
[repos."swtfix/calc"]
test_command = "pytest -rA"
[[repos."swtfix/calc".specs]]
versions = ["0.1"]
python = "3.11"
provider = "venv"
base_image = "swtbench-fixture-base:bookworm"
pip_packages = ["pytest==8.3.3"]
install = "python -m pip install -e ."

[repos."swtfix/textkit"]
test_command = "pytest -rA"
[[repos."swtfix/textkit".specs]]
versions = ["0.1"]
python = "3.11"
provider = "venv"
base_image = "swtbench-fixture-base:bookworm"
pip_packages = ["pytest==8.3.3"]
install = "python -m pip install -e ."
"#;

/// The fixture-like table moved to uv on a local Python image, as `--env-provider uv` does.
fn uv_table() -> SpecTable {
    let no = |p: &str| -> Result<String, ReadError> { Err(format!("no {p}").into()) };
    let mut t = SpecTable::embedded().clone();
    t.merge(SpecTable::parse(TABLE, "fx.toml", TableSyntax::Toml, &no).unwrap());
    t.with_env_provider(Provider::Uv, Some("py:{version}")).0
}

fn instances() -> Vec<Instance> {
    vec![
        instance("swtfix__calc-1", "swtfix/calc"),
        instance("swtfix__calc-2", "swtfix/calc"),
        instance("swtfix__textkit-1", "swtfix/textkit"),
    ]
}

fn specs(table: &SpecTable) -> Vec<ExecSpec> {
    instances()
        .iter()
        .map(|i| ExecSpec::new(i, table, Arch::X86_64, &no_files).unwrap())
        .collect()
}

const PINS: &[&str] = &[
    "iniconfig==2.0.0",
    "packaging==24.1",
    "pip==24.2",
    "pluggy==1.5.0",
    "pytest==8.3.3",
];

/// The lock `envs lock` would write if every resolve froze [`PINS`].
fn lock_of(table: &SpecTable) -> EnvLock {
    let jobs = lock_jobs(&specs(table)).unwrap();
    let mut entries = Vec::new();
    for job in &jobs {
        entries.extend(job_entries(
            job,
            PINS.iter().map(|p| p.to_string()).collect(),
            "test".into(),
        ));
    }
    EnvLock::new("", entries)
}

#[test]
fn one_resolve_per_environment_with_a_script_that_freezes() {
    let table = uv_table();
    let jobs = lock_jobs(&specs(&table)).unwrap();
    // calc and textkit render the same setup_env.sh on the same image: one environment, two
    // entries.
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    assert_eq!(job.python_image, "py:3.11");
    assert_eq!(
        job.entries.keys().cloned().collect::<Vec<_>>(),
        [
            ("swtfix/calc".to_string(), "0.1".to_string()),
            ("swtfix/textkit".to_string(), "0.1".to_string())
        ]
    );
    let LockHow::Resolve { script, output } = &job.how else {
        panic!("{:?}", job.how)
    };
    assert_eq!(output, LOCK_OUTPUT_PATH);
    assert!(
        script.contains("uv pip install pytest==8.3.3\n"),
        "{script}"
    );
    assert!(
        script.ends_with(&format!("uv pip freeze > {LOCK_OUTPUT_PATH}\n")),
        "{script}"
    );
    // What only the image needs is left out of the resolve.
    assert!(
        !script.contains("apt-get") && !script.contains("useradd"),
        "{script}"
    );
    let lock = lock_of(&table);
    assert_eq!(lock.entries.len(), 2);
    assert_eq!(
        lock.entries[0].instances,
        ["swtfix__calc-1", "swtfix__calc-2"]
    );

    // Not uv: refused, with the instance and the way out.
    let no = |p: &str| -> Result<String, ReadError> { Err(format!("no {p}").into()) };
    let mut venv = SpecTable::embedded().clone();
    venv.merge(SpecTable::parse(TABLE, "fx.toml", TableSyntax::Toml, &no).unwrap());
    let refused = lock_jobs(&specs(&venv)).unwrap_err();
    assert_eq!(refused.len(), 3);
    assert!(
        refused[0].1.contains("--env-provider uv"),
        "{:?}",
        refused[0]
    );
}

#[test]
fn locked_environments_install_exactly_the_pins_and_only_their_keys_change() {
    let table = uv_table();
    let unlocked = specs(&table);
    let lock = lock_of(&table);
    let locked_table = table.with_env_lock(lock.clone()).unwrap();
    let locked = specs(&locked_table);
    for (u, l) in unlocked.iter().zip(&locked) {
        assert_ne!(u.keys.env, l.keys.env, "{}", u.instance_id);
        assert_ne!(u.keys.instance, l.keys.instance);
        assert_eq!(u.setup_repo_sh, l.setup_repo_sh);
        assert!(
            l.setup_env_sh.contains(&format!(
                "cat <<'EOF_59812759871' > $HOME/requirements.txt\n{}\nEOF_59812759871\nuv pip install --no-deps -r $HOME/requirements.txt\n",
                PINS.join("\n")
            )),
            "{}",
            l.setup_env_sh
        );
        assert!(
            !l.setup_env_sh.contains("uv pip install pytest"),
            "{}",
            l.setup_env_sh
        );
        let pins = l.pins.as_ref().unwrap();
        assert_eq!(pins.pins, PINS);
        assert!(pins.source.contains("environment lock"), "{}", pins.source);
    }
    // Same pins, same text: calc and textkit still share one environment under the lock.
    assert_eq!(locked[0].keys.env, locked[2].keys.env);

    // One entry's pin changed: that entry's instances get new keys, the others keep theirs.
    let mut edited = lock.clone();
    let calc = edited
        .entries
        .iter_mut()
        .find(|e| e.repo == "swtfix/calc")
        .unwrap();
    calc.pins[0] = "iniconfig==2.1.0".into();
    let edited_specs = specs(&table.with_env_lock(edited).unwrap());
    assert_ne!(edited_specs[0].keys.env, locked[0].keys.env);
    assert_ne!(edited_specs[1].keys.instance, locked[1].keys.instance);
    assert_eq!(
        edited_specs[2].keys, locked[2].keys,
        "textkit is unaffected"
    );

    // An environment without an entry renders exactly as without the lock.
    let mut partial = lock.clone();
    partial.entries.retain(|e| e.repo == "swtfix/calc");
    let partial_specs = specs(&table.with_env_lock(partial).unwrap());
    assert_eq!(partial_specs[2], unlocked[2]);
    assert_eq!(partial_specs[0].keys, locked[0].keys);
}

#[test]
fn the_file_round_trips_and_entries_must_match_the_table() {
    let table = uv_table();
    let text = lock_of(&table).render();
    let read = EnvLock::parse(&text, "team.lock").unwrap();
    let from_file = specs(&table.with_env_lock(read).unwrap());
    let in_memory = specs(&table.with_env_lock(lock_of(&table)).unwrap());
    for (a, b) in from_file.iter().zip(&in_memory) {
        assert_eq!(
            a.keys, b.keys,
            "the file's origin and lines are not in the keys"
        );
    }

    // Without --env-provider uv the entries match no environment of the table.
    let no = |p: &str| -> Result<String, ReadError> { Err(format!("no {p}").into()) };
    let mut venv = SpecTable::embedded().clone();
    venv.merge(SpecTable::parse(TABLE, "fx.toml", TableSyntax::Toml, &no).unwrap());
    let e = venv
        .with_env_lock(EnvLock::parse(&text, "team.lock").unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("team.lock:5: entry swtfix/calc 0.1 is locked for provider uv")
            && e.contains("--env-provider"),
        "{e}"
    );
    // An entry for a version the table does not have.
    let bad = text.replacen("version = \"0.1\"", "version = \"9.9\"", 1);
    let e = table
        .with_env_lock(EnvLock::parse(&bad, "team.lock").unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("team.lock:5: entry swtfix/calc 9.9 matches no environment")
            && e.contains("9.9"),
        "{e}"
    );
    // Another Python in the table than in the entry.
    let bad = text.replacen("python = \"3.11\"", "python = \"3.12\"", 1);
    let e = table
        .with_env_lock(EnvLock::parse(&bad, "team.lock").unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("locked for Python 3.12"), "{e}");
}

#[test]
fn an_instance_whose_environment_changed_since_the_lock_is_refused() {
    let table = uv_table();
    let text = lock_of(&table).render();
    // The same table on another Python image: other unlocked keys.
    let other = {
        let no = |p: &str| -> Result<String, ReadError> { Err(format!("no {p}").into()) };
        let mut t = SpecTable::embedded().clone();
        t.merge(SpecTable::parse(TABLE, "fx.toml", TableSyntax::Toml, &no).unwrap());
        t.with_env_provider(Provider::Uv, Some("other:{version}")).0
    };
    let locked = other
        .with_env_lock(EnvLock::parse(&text, "team.lock").unwrap())
        .unwrap();
    let e = ExecSpec::new(
        &instance("swtfix__calc-1", "swtfix/calc"),
        &locked,
        Arch::X86_64,
        &no_files,
    )
    .unwrap_err();
    assert!(matches!(e, SpecError::EnvLock { .. }), "{e:?}");
    let e = e.to_string();
    assert!(
        e.starts_with("swtfix__calc-1: the environment lock team.lock:5 has an entry for it made from other inputs")
            && e.contains("envs lock"),
        "{e}"
    );
    // An instance the lock was not made for is evaluated unlocked.
    let spec = ExecSpec::new(
        &instance("swtfix__calc-9", "swtfix/calc"),
        &locked,
        Arch::X86_64,
        &no_files,
    )
    .unwrap();
    assert!(spec.pins.is_none());
}

#[test]
fn frozen_environments_are_written_as_they_are() {
    let (table, _) = SpecTable::embedded().with_env_provider(Provider::Uv, None);
    let row = json!({
        "instance_id": "astropy__astropy-12907", "repo": "astropy/astropy", "version": "4.3",
        "base_commit": "b0b0", "environment_setup_commit": "e0e0",
        "patch": "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n",
        "test_patch": "diff --git a/astropy/tests/test_x.py b/astropy/tests/test_x.py\n--- a/astropy/tests/test_x.py\n+++ b/astropy/tests/test_x.py\n@@ -1 +1 @@\n-a\n+b\n",
    });
    let i = Instance::from_row(&row, PatchLayout::Swebench).unwrap();
    let spec = ExecSpec::new(&i, &table, Arch::X86_64, &no_files).unwrap();
    let jobs = lock_jobs(std::slice::from_ref(&spec)).unwrap();
    let LockHow::Frozen { pins, source } = &jobs[0].how else {
        panic!("{:?}", jobs[0].how)
    };
    assert_eq!(pins, &spec.pins.as_ref().unwrap().pins);
    assert!(source.contains("frozen environment"), "{source}");
    // Locked with its own frozen pins, the environment is the same one: same keys.
    let lock = EnvLock::new("", job_entries(&jobs[0], pins.clone(), source.clone()));
    let locked = ExecSpec::new(
        &i,
        &table.with_env_lock(lock).unwrap(),
        Arch::X86_64,
        &no_files,
    )
    .unwrap();
    assert_eq!(locked.keys, spec.keys);
    assert_eq!(locked.setup_env_sh, spec.setup_env_sh);
}

#[test]
fn the_default_lock_gives_way_to_an_environment_of_ones_own_and_says_so() {
    let table = uv_table();
    let mut lock = EnvLock::parse(&lock_of(&table).render(), "the embedded lock").unwrap();
    lock.default = true;
    // The same table on another Python image: other unlocked keys.
    let other = {
        let no = |p: &str| -> Result<String, ReadError> { Err(format!("no {p}").into()) };
        let mut t = SpecTable::embedded().clone();
        t.merge(SpecTable::parse(TABLE, "fx.toml", TableSyntax::Toml, &no).unwrap());
        t.with_env_provider(Provider::Uv, Some("other:{version}")).0
    };
    let unlocked = ExecSpec::new(
        &instance("swtfix__calc-1", "swtfix/calc"),
        &other,
        Arch::X86_64,
        &no_files,
    )
    .unwrap();
    let spec = ExecSpec::new(
        &instance("swtfix__calc-1", "swtfix/calc"),
        &other.with_env_lock(lock).unwrap(),
        Arch::X86_64,
        &no_files,
    )
    .unwrap();
    assert!(spec.pins.is_none());
    assert_eq!(spec.keys, unlocked.keys);
    // The unlocked environment's own warnings, and one more.
    assert_eq!(
        spec.env_warnings[..spec.env_warnings.len() - 1],
        unlocked.env_warnings[..],
        "{:?}",
        spec.env_warnings
    );
    let last = spec.env_warnings.last().unwrap();
    assert!(
        last.starts_with("swtfix__calc-1: the embedded lock has an entry for this environment made from other inputs")
            && last.ends_with("it is installed unlocked"),
        "{last}"
    );
}

#[test]
fn keep_matching_drops_the_entries_another_table_cannot_take() {
    let table = uv_table();
    let lock = lock_of(&table);
    assert_eq!(lock.entries.len(), 2);
    let (kept, dropped) = lock.clone().keep_matching(&table);
    assert_eq!((kept.entries.len(), dropped), (2, 0));
    // The conda table has these repositories on another provider (or not at all).
    let (kept, dropped) = lock.keep_matching(SpecTable::embedded());
    assert_eq!((kept.entries.len(), dropped), (0, 2));
}

#[test]
fn the_embedded_lock_is_resolved_uv_environments_the_embedded_table_takes() {
    let lock = EnvLock::embedded();
    assert!(lock.default);
    let (uv, _) = SpecTable::embedded().with_env_provider(Provider::Uv, None);
    let (kept, dropped) = lock.clone().keep_matching(&uv);
    assert_eq!(
        dropped, 0,
        "entries of the embedded lock the uv table does not take"
    );
    assert_eq!(kept.entries.len(), lock.entries.len());
    for e in &lock.entries {
        assert_eq!(e.provider, Provider::Uv, "{} {}", e.repo, e.version);
        assert_eq!(
            e.source.as_str(),
            "resolved",
            "{} {}: frozen environments are the frozen pins already",
            e.repo,
            e.version
        );
        assert!(
            !e.pins.is_empty() && !e.instances.is_empty(),
            "{} {}",
            e.repo,
            e.version
        );
    }
    // Written as `envs lock` writes it: the same bytes back.
    assert_eq!(lock.render(), swtbench_spec::lock::EMBEDDED_LOCK);
}
