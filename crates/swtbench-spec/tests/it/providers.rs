//! Entries beyond the original's table: the venv provider, user base images and Dockerfiles, the
//! mirror build variant of the instance Dockerfile, and the skip-install option.

use std::path::Path;
use std::process::Command;

use serde_json::json;
use swtbench_core::hash::sha256_hex;
use swtbench_core::{Instance, PatchLayout, RunKind};
use swtbench_spec::{
    Arch, EvalOptions, ExecSpec, Provider, ReadError, RunInputs, SpecError, SpecTable,
    SubmoduleSource, TableSyntax, MIRROR_CONTEXT_DIR, SUBMODULES_CONTEXT_DIR,
};

const CODE: &str = "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1 +1 @@\n-a\n+b\n";
const TESTS: &str = "diff --git a/tests/test_ops.py b/tests/test_ops.py\n--- a/tests/test_ops.py\n+++ b/tests/test_ops.py\n@@ -1 +1 @@\n-a\n+b\n";

fn instance(repo: &str, version: &str) -> Instance {
    let row = json!({
        "instance_id": format!("{}-1", repo.replace('/', "__")), "repo": repo, "version": version,
        "base_commit": "b0b0", "environment_setup_commit": "e0e0",
        "patch": CODE, "test_patch": TESTS,
    });
    Instance::from_row(&row, PatchLayout::Swebench).unwrap()
}

fn table(extra: &str) -> SpecTable {
    let mut t = SpecTable::embedded().clone();
    let read = |p: &str| -> Result<String, ReadError> {
        if p == "base.Dockerfile" {
            Ok(
                "FROM debian:bookworm\nRUN apt-get update && apt-get install -y python3-venv git\n"
                    .into(),
            )
        } else {
            Err("no such file".into())
        }
    };
    t.merge(SpecTable::parse(extra, "custom.toml", TableSyntax::Toml, &read).unwrap());
    t
}

const FIXTURE_TABLE: &str = r#"
[repos."swtfix/calc"]
test_command = "pytest -rA -p no:cacheprovider"
requirements_paths = ["requirements.txt"]

[[repos."swtfix/calc".specs]]
versions = ["0.1"]
provider = "venv"
base_image = "swtbench-fixture-base:bookworm"
python = "3.11"
packages = "requirements.txt"
install = "python -m pip install -e ."
pip_packages = ["pytest"]

[[repos."swtfix/calc".specs]]
versions = ["0.2"]
provider = "venv"
base_dockerfile = "base.Dockerfile"
interpreter = "/usr/bin/python3.11"
packages = "pytest pytest-timeout"

[[repos."swtfix/calc".specs]]
versions = ["0.3"]
base_image = "my-conda-base:1"
python = "3.9"

[[repos."swtfix/calc".specs]]
versions = ["0.4"]
python = "3.9"

[[repos."swtfix/calc".specs]]
versions = ["0.5"]
provider = "venv"
base_image = "swtbench-fixture-base:bookworm"
packages = "environment.yml"
"#;

fn files(_: &str, _: &str, path: &str) -> Result<Option<String>, ReadError> {
    Ok((path == "requirements.txt").then(|| "pytest==8.0\n-e .\n".to_string()))
}

fn render(version: &str) -> ExecSpec {
    ExecSpec::new(
        &instance("swtfix/calc", version),
        &table(FIXTURE_TABLE),
        Arch::X86_64,
        &files,
    )
    .unwrap()
}

#[test]
fn venv_on_a_local_base_image() {
    let s = render("0.1");
    assert_eq!(s.provider(), Provider::Venv);
    assert_eq!(s.keys.base, "swtbench-fixture-base:bookworm");
    assert_eq!(s.base_dockerfile, None);
    assert_eq!(
        s.setup_env_sh,
        "#!/bin/bash\nset -euxo pipefail\npython3 -m venv /opt/swtbench-venv\n\
         source /opt/swtbench-venv/bin/activate\n\
         cat <<'EOF_59812759871' > $HOME/requirements.txt\npytest==8.0\n\nEOF_59812759871\n\
         python -m pip install -r $HOME/requirements.txt\nrm $HOME/requirements.txt\n\
         python -m pip install pytest\n"
    );
    assert_eq!(
        s.env_dockerfile,
        "FROM --platform=linux/x86_64 swtbench-fixture-base:bookworm\n\n\
         COPY ./setup_env.sh /root/\nRUN chmod +x /root/setup_env.sh\nRUN /bin/bash /root/setup_env.sh\n\n\
         WORKDIR /testbed/\n\n# Automatically activate the testbed environment\n\
         RUN echo \"source /opt/swtbench-venv/bin/activate\" > /root/.bashrc\n"
            .to_string()
            + &swtbench_tracer::native_dockerfile_lines()
    );
    assert_eq!(
        s.setup_repo_sh,
        "#!/bin/bash\nset -euxo pipefail\n\
         git clone -o origin https://github.com/swtfix/calc /testbed\nchmod -R 777 /testbed\ncd /testbed\n\
         git reset --hard b0b0\ngit remote remove origin\nsource /opt/swtbench-venv/bin/activate\n\
         echo \"Current environment: $VIRTUAL_ENV\"\npython -m pip install -e .\n"
    );
    // Keys: same SHA-256 rule, over the env Dockerfile + setup_env.sh for non-reference entries.
    let env_hash = &sha256_hex(format!("{}{}", s.env_dockerfile, s.setup_env_sh))[..22];
    let repo_hash = &sha256_hex(&s.setup_repo_sh)[..22];
    assert_eq!(s.keys.env, format!("exec.env.x86_64.{env_hash}:latest"));
    assert_eq!(
        s.keys.instance,
        format!("exec.eval.x86_64.{env_hash}.{repo_hash}:latest")
    );
}

#[test]
fn venv_eval_scripts_keep_the_trace_lines_and_activate_the_venv() {
    let s = render("0.1");
    let inputs = RunInputs {
        model_patch: TESTS,
        gold_test_patch: TESTS,
        gold_code_patch: CODE,
    };
    let runs = s.render_runs(&inputs, &EvalOptions::default()).unwrap();
    let post = &runs[1];
    assert_eq!(post.kind, RunKind::PredPost);
    let script = &post.eval_script;
    assert!(!script.contains("conda"), "{script}");
    assert_eq!(
        script
            .matches("\nsource /opt/swtbench-venv/bin/activate\n")
            .count(),
        2
    );
    assert!(script.contains(
        "\npython3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(calc/ops\\.py)' -m pytest -rA -p no:cacheprovider tests/test_ops.py\ncat coverage.cover\ngit checkout b0b0\ngit apply /root/pre_state.patch\n"
    ));
    // The gold code patch comes before the test patch in post runs.
    let code_at = script.find("diff --git a/calc/ops.py").unwrap();
    let test_at = script.find("diff --git a/tests/test_ops.py").unwrap();
    assert!(code_at < test_at);
    // Base runs apply the literal text `None` in place of a test patch.
    assert!(runs[4]
        .eval_script
        .contains("git apply -v - <<'EOF_114329324912'\nNone\nEOF_114329324912\n"));
    assert_eq!(runs[4].patch_list, vec![None]);
    assert_eq!(runs[5].patch_list, vec![Some(CODE.to_string()), None]);
}

#[test]
fn venv_with_a_base_dockerfile_and_a_package_list() {
    let s = render("0.2");
    let text = "FROM debian:bookworm\nRUN apt-get update && apt-get install -y python3-venv git\n";
    assert_eq!(s.base_dockerfile.as_deref(), Some(text));
    assert_eq!(
        s.keys.base,
        format!("exec.base.x86_64.{}:latest", &sha256_hex(text)[..22])
    );
    assert!(s
        .setup_env_sh
        .contains("\n/usr/bin/python3.11 -m venv /opt/swtbench-venv\nsource /opt/swtbench-venv/bin/activate\npython -m pip install pytest pytest-timeout\n"));
    assert!(s
        .env_dockerfile
        .starts_with(&format!("FROM --platform=linux/x86_64 {}\n", s.keys.base)));
}

#[test]
fn conda_on_another_base_gets_another_env_key_than_on_the_default_base() {
    let other = render("0.3");
    let default = render("0.4");
    assert_eq!(other.setup_env_sh, default.setup_env_sh);
    assert_eq!(default.keys.base, "exec.base.x86_64:latest");
    assert_eq!(
        default.keys.env,
        format!(
            "exec.env.x86_64.{}:latest",
            &sha256_hex(&default.setup_env_sh)[..22]
        )
    );
    assert_ne!(other.keys.env, default.keys.env);
    assert!(other.env_dockerfile.contains("conda activate testbed"));
}

#[test]
fn environment_yml_needs_conda() {
    let e = ExecSpec::new(
        &instance("swtfix/calc", "0.5"),
        &table(FIXTURE_TABLE),
        Arch::X86_64,
        &files,
    )
    .unwrap_err();
    assert!(matches!(e, SpecError::Unsupported { .. }));
    assert!(e.to_string().contains("swtfix/calc 0.5"), "{e}");
}

#[test]
fn skip_install_leaves_out_only_the_install_line() {
    let s = render("0.1");
    let inputs = RunInputs {
        model_patch: TESTS,
        gold_test_patch: TESTS,
        gold_code_patch: CODE,
    };
    let with = s
        .render_run(RunKind::GoldPre, &inputs, &EvalOptions::default())
        .unwrap();
    let without = s
        .render_run(
            RunKind::GoldPre,
            &inputs,
            &EvalOptions {
                skip_install: true,
                ..EvalOptions::default()
            },
        )
        .unwrap();
    assert_eq!(
        with.eval_script
            .replacen("python -m pip install -e .\n", "", 1),
        without.eval_script
    );
    assert_ne!(with.eval_script, without.eval_script);
}

#[test]
fn mirror_variant_redirects_the_clone_and_keeps_the_key() {
    let s = ExecSpec::new(
        &instance("django/django", "3.0"),
        SpecTable::embedded(),
        Arch::X86_64,
        &|_: &str, _: &str, _: &str| Ok(Some("pytz\n".to_string())),
    )
    .unwrap();
    let m = s.instance_dockerfile_with_mirror();
    assert_eq!(
        m,
        format!(
            "FROM --platform=linux/x86_64 {env}\n\n\
             COPY ./{dir} /root/{dir}\n\
             RUN if [ -e \"$HOME/.gitconfig\" ]; then cp -p \"$HOME/.gitconfig\" /root/{dir}/home-gitconfig; fi \\\n \
             && git config --file \"$HOME/.gitconfig\" url.\"/root/{dir}\".insteadOf \"https://github.com/django/django\" \\\n \
             && git config --file \"$HOME/.gitconfig\" --add url.\"/root/{dir}\".insteadOf \"https://github.com/django/django.git\" \\\n \
             && for c in {chars}; do git config --file \"$HOME/.gitconfig\" url.\"https://github.com/django/django$c\".insteadOf \"https://github.com/django/django$c\"; done \\\n \
             && git config --file \"$HOME/.gitconfig\" core.abbrev \"$(git config --file /root/{dir}/config core.abbrev)\"\n\
             COPY ./setup_repo.sh /root/\nRUN /bin/bash /root/setup_repo.sh\n\
             RUN git -C /testbed config core.abbrev \"$(git config --file /root/{dir}/config core.abbrev)\" \\\n \
             && rm -f \"$HOME/.gitconfig\" \\\n \
             && if [ -e /root/{dir}/home-gitconfig ]; then mv /root/{dir}/home-gitconfig \"$HOME/.gitconfig\"; fi \\\n \
             && rm -rf /root/{dir}\n\n\
             WORKDIR /testbed/\n",
            env = s.keys.env,
            dir = MIRROR_CONTEXT_DIR,
            chars = "a b c d e f g h i j k l m n o p q r s t u v w x y z \
                     A B C D E F G H I J K L M N O P Q R S T U V W X Y Z \
                     0 1 2 3 4 5 6 7 8 9 - _ ."
        )
    );
    // The plain Dockerfile's steps are all there, in order.
    for line in s.instance_dockerfile.lines().filter(|l| !l.is_empty()) {
        assert!(m.contains(line), "{line}");
    }
}

fn git(dir: &Path, args: &[&str], home: &Path) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs the mirror variant's git steps and the clone/reset lines of `setup_repo.sh` on the host
/// (with `/testbed` and `/root` moved into a temporary directory): the unchanged GitHub URL must
/// resolve to the mirror, and the redirect must be gone afterwards.
#[test]
fn mirror_redirect_works_with_real_git() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let work = root.join("work");
    new_repo(&work, &home, "a.txt", "one\n");
    let base = git(&work, &["rev-parse", "HEAD"], &home).trim().to_string();
    std::fs::write(work.join("a.txt"), "two\n").unwrap();
    git(&work, &["commit", "-qam", "two"], &home);
    let ctx_mirror = root.join("context").join(MIRROR_CONTEXT_DIR);
    mirror_clone(&work, &ctx_mirror, &home);
    // The context's repository names the abbreviation length of a full clone.
    git(&ctx_mirror, &["config", "core.abbrev", "11"], &home);
    // What the env image's user already had in $HOME/.gitconfig comes back unchanged.
    let user_cfg = "[user]\n\tname = someone\n";
    std::fs::write(home.join(".gitconfig"), user_cfg).unwrap();

    let row = json!({"instance_id": "acme__w-1", "repo": "acme/w", "version": "1",
        "base_commit": base, "patch": "", "test_patch": ""});
    let inst = Instance::from_row(&row, PatchLayout::Swebench).unwrap();
    let t = table("[repos.\"acme/w\"]\ntest_command = \"pytest\"\n[[repos.\"acme/w\".specs]]\nversions = [\"1\"]\npython = \"3.11\"\n");
    let spec = ExecSpec::new(&inst, &t, Arch::X86_64, &files).unwrap();

    let image_root = root.join("image-root");
    let testbed = root.join("testbed");
    let mirror = image_root.join(MIRROR_CONTEXT_DIR).display().to_string();
    let check_urls = |home: &Path| {
        // The repository's URLs reach the mirror; a longer repository name (a submodule such as
        // astropy's astropy-helpers) keeps its own URL.
        for (url, want) in [
            ("https://github.com/acme/w", mirror.clone()),
            ("https://github.com/acme/w.git", mirror.clone()),
            ("https://github.com/acme/w-helpers.git", String::new()),
            ("https://github.com/acme/w_x", String::new()),
            ("https://github.com/acme/w.js", String::new()),
            ("https://github.com/acme/wx", String::new()),
        ] {
            let got = git(root, &["ls-remote", "--get-url", url], home);
            let want = if want.is_empty() { url } else { want.as_str() };
            assert_eq!(got.trim(), want, "{url}");
        }
    };
    replay(
        &spec,
        &spec.instance_dockerfile_with_mirror(),
        root,
        &home,
        &[(MIRROR_CONTEXT_DIR, &ctx_mirror)],
        &check_urls,
        &[],
    );
    assert_eq!(
        std::fs::read_to_string(testbed.join("a.txt")).unwrap(),
        "one\n"
    );
    let head = git(&testbed, &["rev-parse", "HEAD"], &home);
    assert_eq!(head.trim(), base);
    assert_eq!(git(&testbed, &["remote"], &home).trim(), "");
    assert!(!image_root.join(MIRROR_CONTEXT_DIR).exists());
    let cfg = std::fs::read_to_string(home.join(".gitconfig")).unwrap_or_default();
    assert_eq!(cfg, user_cfg);
    assert_eq!(
        git(&testbed, &["config", "core.abbrev"], &home).trim(),
        "11"
    );
    assert_eq!(
        git(&testbed, &["rev-parse", "--short", "HEAD"], &home)
            .trim()
            .len(),
        11
    );
}

/// Replays a mirror Dockerfile on the host, with `/root` and `/testbed` moved into `root`:
/// `COPY` of the context directories in `contexts` (name, source), the `RUN` lines, and of
/// `setup_repo.sh` only its git lines (the rest needs the environment) followed by `after_clone`
/// (what the install would run in the checkout). `before_setup` looks at the git configuration
/// just before `setup_repo.sh`.
fn replay(
    spec: &ExecSpec,
    dockerfile: &str,
    root: &Path,
    home: &Path,
    contexts: &[(&str, &Path)],
    before_setup: &dyn Fn(&Path),
    after_clone: &[&str],
) {
    let image_root = root.join("image-root");
    let testbed = root.join("testbed");
    let relocate = |s: &str| {
        s.replace("/root/", &format!("{}/", image_root.display()))
            .replace("/testbed", testbed.to_str().unwrap())
    };
    std::fs::create_dir_all(&image_root).unwrap();
    let joined = dockerfile.replace("\\\n", "");
    for line in joined.lines() {
        if let Some(rest) = line.strip_prefix("COPY ./") {
            let (src, _dst) = rest.split_once(' ').unwrap();
            if let Some((_, from)) = contexts.iter().find(|(name, _)| *name == src) {
                let status = Command::new("cp")
                    .args(["-a"])
                    .arg(from)
                    .arg(image_root.join(src))
                    .status()
                    .unwrap();
                assert!(status.success());
            }
        } else if let Some(cmd) = line.strip_prefix("RUN ") {
            if cmd.contains("setup_repo.sh") {
                before_setup(home);
                let mut lines: Vec<String> = spec
                    .setup_repo_sh
                    .lines()
                    .filter(|l| {
                        l.starts_with("git ") || l.starts_with("cd ") || l.starts_with("chmod ")
                    })
                    .map(relocate)
                    .collect();
                lines.extend(after_clone.iter().map(|l| relocate(l)));
                run_sh(&lines.join(" && "), home);
            } else {
                run_sh(&relocate(cmd), home);
            }
        }
    }
}

/// A checkout whose install clones a submodule (astropy's `setup.py` runs `git submodule update
/// --init` for `astropy_helpers`): with the submodule's mirror in the build context, its GitHub
/// URL is served from there, at the commit the base commit points to; afterwards nothing of it
/// or of the redirect is left.
#[test]
fn mirror_build_serves_a_submodule_from_its_mirror() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    // The submodule's repository: two commits, the first is the one the base commit uses.
    let helpers = root.join("helpers");
    new_repo(&helpers, &home, "h.py", "ONE = 1\n");
    std::fs::write(helpers.join("h.py"), "ONE = 2\n").unwrap();
    git(&helpers, &["commit", "-qam", "h2"], &home);
    let h1 = git(&helpers, &["rev-parse", "HEAD~1"], &home)
        .trim()
        .to_string();
    // The repository with the submodule at h1, declared with its GitHub URL.
    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"], &home);
    std::fs::write(work.join("a.txt"), "one\n").unwrap();
    std::fs::write(
        work.join(".gitmodules"),
        "[submodule \"helpers\"]\n\tpath = helpers\n\turl = https://github.com/acme/w-helpers.git\n",
    )
    .unwrap();
    git(&work, &["add", "-A"], &home);
    git(
        &work,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{h1},helpers"),
        ],
        &home,
    );
    git(&work, &["commit", "-q", "-m", "base"], &home);
    let base = git(&work, &["rev-parse", "HEAD"], &home).trim().to_string();
    let ctx = root.join("context");
    let ctx_mirror = ctx.join(MIRROR_CONTEXT_DIR);
    let ctx_helpers = ctx.join("acme__w-helpers.git");
    mirror_clone(&work, &ctx_mirror, &home);
    mirror_clone(&helpers, &ctx_helpers, &home);
    git(&ctx_mirror, &["config", "core.abbrev", "11"], &home);
    let subs_ctx = ctx.join("subs");
    std::fs::create_dir_all(&subs_ctx).unwrap();
    std::fs::rename(&ctx_helpers, subs_ctx.join("acme__w-helpers.git")).unwrap();

    let row = json!({"instance_id": "acme__w-1", "repo": "acme/w", "version": "1",
        "base_commit": base, "patch": "", "test_patch": ""});
    let inst = Instance::from_row(&row, PatchLayout::Swebench).unwrap();
    let t = table("[repos.\"acme/w\"]\ntest_command = \"pytest\"\n[[repos.\"acme/w\".specs]]\nversions = [\"1\"]\npython = \"3.11\"\n");
    let spec = ExecSpec::new(&inst, &t, Arch::X86_64, &files).unwrap();
    let subs = [SubmoduleSource {
        url: "https://github.com/acme/w-helpers.git".into(),
        dir: "acme__w-helpers.git".into(),
    }];
    let dockerfile = spec.instance_dockerfile_with_mirrors(&subs);
    assert_ne!(dockerfile, spec.instance_dockerfile_with_mirror());
    let sub_dir = root
        .join("image-root")
        .join(SUBMODULES_CONTEXT_DIR)
        .join("acme__w-helpers.git")
        .display()
        .to_string();
    let check = |home: &Path| {
        for url in [
            "https://github.com/acme/w-helpers.git",
            "https://github.com/acme/w-helpers",
        ] {
            let got = git(root, &["ls-remote", "--get-url", url], home);
            assert_eq!(got.trim(), sub_dir, "{url}");
        }
    };
    replay(
        &spec,
        &dockerfile,
        root,
        &home,
        &[
            (MIRROR_CONTEXT_DIR, &ctx_mirror),
            (SUBMODULES_CONTEXT_DIR, &subs_ctx),
        ],
        &check,
        &["git submodule update --init -- helpers"],
    );
    let testbed = root.join("testbed");
    assert_eq!(
        std::fs::read_to_string(testbed.join("helpers/h.py")).unwrap(),
        "ONE = 1\n"
    );
    assert!(!root
        .join("image-root")
        .join(SUBMODULES_CONTEXT_DIR)
        .exists());
    assert!(!root.join("image-root").join(MIRROR_CONTEXT_DIR).exists());
    assert!(!home.join(".gitconfig").exists());
}

/// `git clone --mirror from to`.
fn mirror_clone(from: &Path, to: &Path, home: &Path) {
    let (from, to) = (from.to_str().unwrap(), to.to_str().unwrap());
    git(Path::new("/"), &["clone", "-q", "--mirror", from, to], home);
}

/// A new repository at `dir` with one commit holding `file`.
fn new_repo(dir: &Path, home: &Path, file: &str, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"], home);
    std::fs::write(dir.join(file), text).unwrap();
    git(dir, &["add", "-A"], home);
    git(dir, &["commit", "-q", "-m", "first"], home);
}

fn run_sh(cmd: &str, home: &Path) {
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", cmd])
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
