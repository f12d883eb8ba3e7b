//! `--build-files`: a repository's instances copy the files onto the checkout before the install,
//! the files' digest is part of `setup_repo.sh` and so of the instance key, and nothing changes
//! for other repositories or without build files.

use std::collections::BTreeMap;

use serde_json::json;
use swtbench_core::{Instance, PatchLayout};
use swtbench_spec::{Arch, BuildFiles, ExecSpec, ReadError, SpecTable, BUILD_FILES_CONTEXT_DIR};

fn instance(id: &str, repo: &str, version: &str) -> Instance {
    let code =
        "diff --git a/lib/x.py b/lib/x.py\n--- a/lib/x.py\n+++ b/lib/x.py\n@@ -1 +1 @@\n-a\n+b\n";
    let row = json!({
        "instance_id": id, "repo": repo, "version": version,
        "base_commit": "b0b0", "environment_setup_commit": "e0e0",
        "patch": code, "test_patch": code.replace("lib/x.py", "lib/tests/test_x.py"),
    });
    Instance::from_row(&row, PatchLayout::Swebench).unwrap()
}

fn no_files(_: &str, _: &str, _: &str) -> Result<Option<String>, ReadError> {
    Ok(None)
}

fn files(digest: &str) -> BTreeMap<String, BuildFiles> {
    BTreeMap::from([(
        "matplotlib/matplotlib".to_string(),
        BuildFiles {
            dir: "/srv/build-files/matplotlib__matplotlib".into(),
            digest: digest.to_string(),
            files: 3,
            bytes: 100,
        },
    )])
}

#[test]
fn build_files_go_onto_the_checkout_before_the_install_and_into_the_instance_key() {
    let (table, _) = SpecTable::embedded().with_env_provider(swtbench_spec::Provider::Uv, None);
    let mpl = instance(
        "matplotlib__matplotlib-25311",
        "matplotlib/matplotlib",
        "3.7",
    );
    let plain = ExecSpec::new(&mpl, &table, Arch::X86_64, &no_files).unwrap();
    let with = table.clone().with_build_files(files(&"a".repeat(64)));
    let spec = ExecSpec::new(&mpl, &with, Arch::X86_64, &no_files).unwrap();

    let copy = format!(
        "cp -a /root/{BUILD_FILES_CONTEXT_DIR}/. /testbed/  # build files sha256:{}",
        "a".repeat(64)
    );
    let lines: Vec<&str> = spec.setup_repo_sh.lines().collect();
    let at = |l: &str| lines.iter().position(|x| *x == l);
    let cp = at(&copy).expect("setup_repo.sh copies the build files");
    assert!(
        at("git reset --hard b0b0").unwrap() < cp,
        "after the checkout"
    );
    let install = lines
        .iter()
        .position(|l| l.contains("pip install -e ."))
        .expect("the install line");
    assert!(cp < install, "before the install");
    assert_eq!(
        lines[cp + 1],
        format!("rm -rf /root/{BUILD_FILES_CONTEXT_DIR}")
    );
    // Without the two lines the script is the one without build files.
    let without: Vec<&str> = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != cp && *i != cp + 1)
        .map(|(_, l)| *l)
        .collect();
    assert_eq!(without, plain.setup_repo_sh.lines().collect::<Vec<_>>());

    let copy_line = format!("COPY ./{BUILD_FILES_CONTEXT_DIR} /root/{BUILD_FILES_CONTEXT_DIR}");
    for df in [
        &spec.instance_dockerfile,
        &spec.instance_dockerfile_with_mirror(),
    ] {
        let copy_at = df
            .find(&copy_line)
            .expect("the Dockerfile copies the files");
        assert!(copy_at < df.find("RUN /bin/bash /root/setup_repo.sh").unwrap());
    }
    for df in [
        &plain.instance_dockerfile,
        &plain.instance_dockerfile_with_mirror(),
    ] {
        assert!(!df.contains(BUILD_FILES_CONTEXT_DIR), "{df}");
    }
    assert_eq!(spec.build_files.as_ref().unwrap().files, 3);
    assert!(plain.build_files.is_none());

    // Same environment, another instance image; other contents, another key again.
    assert_eq!(spec.keys.env, plain.keys.env);
    assert_ne!(spec.keys.instance, plain.keys.instance);
    let other = table.with_build_files(files(&"b".repeat(64)));
    let other = ExecSpec::new(&mpl, &other, Arch::X86_64, &no_files).unwrap();
    assert_ne!(other.keys.instance, spec.keys.instance);
}

#[test]
fn other_repositories_are_untouched_by_build_files() {
    let (table, _) = SpecTable::embedded().with_env_provider(swtbench_spec::Provider::Uv, None);
    let with = table.clone().with_build_files(files(&"a".repeat(64)));
    let flask = instance("pytest-dev__pytest-5103", "pytest-dev/pytest", "5.0");
    let a = ExecSpec::new(&flask, &table, Arch::X86_64, &no_files).unwrap();
    let b = ExecSpec::new(&flask, &with, Arch::X86_64, &no_files).unwrap();
    assert_eq!(a, b);
}
