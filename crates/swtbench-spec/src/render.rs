//! Image-defining text for one instance: the three Dockerfiles, `setup_env.sh`, `setup_repo.sh`
//! and the image keys derived from them (§3.1–§3.4).
//!
//! For table entries that use conda on the default base image (every entry of the embedded table)
//! the text is byte-identical to the original harness's, so keys match and images built by either
//! tool are interchangeable, apart from the lines every env Dockerfile ends with here: the build of
//! the coverage tracer's native line counter ([`swtbench_tracer::native_dockerfile_lines`], files
//! from [`env_context_files`]), which is outside the original's key rule (an env image without it
//! gives the same coverage, counted in Python). Entries with another provider or base image render
//! their own text and hash it with the same rule (see [`ImageKeys`]), so their keys change with the
//! native counter's source. Nothing here touches Docker or the network: requirement files come in
//! through a [`FileSource`].

use swtbench_core::hash::sha256_prefix;
use swtbench_core::Instance;

use crate::build_files::BuildFiles;
use crate::error::{ReadError, SpecError};
use crate::pins::{FrozenPins, PinChoice};
use crate::reqs::{self, ENV_HEREDOC, ENV_NAME};
use crate::table::{
    python_image, BaseImage, Entry, Provider, SpecTable, VersionSpec, DEFAULT_PYTHON_IMAGE,
};

/// Where the repository lives inside the images (`/testbed`, from the env name).
pub const REPO_DIR: &str = "/testbed";
/// Directory of the virtual environment made by the `venv` provider.
pub const VENV_DIR: &str = "/opt/swtbench-venv";
/// The uv release the `uv` provider installs from PyPI (the `uv` wheel carries the binary).
pub const UV_VERSION: &str = "0.9.5";
/// `setup_env.sh` of a uv entry: what the original's base image (Ubuntu with `build-essential`)
/// has and a slim Python image lacks, when it lacks it: git for `setup_repo.sh`, and a C compiler
/// for the repositories and packages that are built from source (astropy, matplotlib,
/// scikit-learn; pins without a wheel for the image's Python).
const UV_SYSTEM_LINE: &str = "missing=''; command -v git >/dev/null || missing=git; command -v gcc >/dev/null || missing=\"$missing build-essential\"; if [ -n \"$missing\" ]; then apt-get update && apt-get install -y --no-install-recommends $missing && rm -rf /var/lib/apt/lists/*; fi";
/// `setup_env.sh` of a uv entry whose eval commands make a locale with `locale-gen` (Django
/// 3.0–3.2 uncomment `en_US.UTF-8` in `/etc/locale.gen` before every test run): Debian's
/// `locales`, which the original's base image has and a slim Python image lacks. Without it the
/// locale is never made, Python 3.6 falls back to ASCII for its output, and a test that prints
/// `…` fails with `UnicodeEncodeError`.
const UV_LOCALES_LINE: &str = "[ -f /etc/locale.gen ] || { apt-get update && apt-get install -y --no-install-recommends locales && rm -rf /var/lib/apt/lists/*; }";
/// The cap on `sphinxcontrib-jsmath` for Sphinx < 5 checkouts under uv (see
/// `caps_sphinx_helpers_but_not_jsmath`): 1.0.1 is the last release that loads in Sphinx 3 and 4.
const UV_JSMATH_LINE: &str =
    "sed -i 's/sphinxcontrib-jsmath/sphinxcontrib-jsmath<=1.0.1/' setup.py";
/// `setup_env.sh` of a uv entry: the user tests may run as.
const UV_NONROOT_LINE: &str = "id -u nonroot >/dev/null 2>&1 || useradd -m nonroot";
/// Directory name of the bare mirror inside the build context of a mirror instance build.
pub const MIRROR_CONTEXT_DIR: &str = "swtbench-mirror.git";
/// Directory of the submodules' small repositories inside the build context of a mirror build.
pub const SUBMODULES_CONTEXT_DIR: &str = "swtbench-submodules";

/// A submodule of the instance's checkout served from a local mirror: the URL its `.gitmodules`
/// names and the small repository's directory under [`SUBMODULES_CONTEXT_DIR`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmoduleSource {
    pub url: String,
    pub dir: String,
}

/// Number of hex characters of SHA-256 used in image keys.
pub const KEY_HASH_LEN: usize = 22;

/// The image the conda environments' base image is built `FROM`: Docker Hub's, pulled by the
/// engine when it does not have it (the original's base template).
pub const CONDA_BASE_FROM: &str = "ubuntu:22.04";

// The original's templates (src/dockerfiles.py), reproduced byte for byte: the base template
// starts with a newline and every template ends with one.
const BASE_DOCKERFILE: &str = r#"
FROM --platform={platform} ubuntu:22.04

ARG DEBIAN_FRONTEND=noninteractive
ENV TZ=Etc/UTC

RUN apt update && apt install -y \
wget \
git \
build-essential \
libffi-dev \
libtiff-dev \
python3 \
python3-pip \
python-is-python3 \
jq \
curl \
locales \
locales-all \
tzdata \
xxd \
&& rm -rf /var/lib/apt/lists/*

# Download and install conda
RUN wget 'https://repo.anaconda.com/miniconda/Miniconda3-py311_23.11.0-2-Linux-{conda_arch}.sh' -O miniconda.sh \
    && bash miniconda.sh -b -p /opt/miniconda3
# Add conda to PATH
ENV PATH=/opt/miniconda3/bin:$PATH
# Add conda to shell startup scripts like .bashrc (DO NOT REMOVE THIS)
RUN conda init --all
RUN conda config --append channels conda-forge

RUN adduser --disabled-password --gecos 'dog' nonroot
"#;

const ENV_DOCKERFILE_CONDA: &str = r#"FROM --platform={platform} {base_image_name}

COPY ./setup_env.sh /root/
RUN chmod +x /root/setup_env.sh
RUN /bin/bash -c "source ~/.bashrc && /root/setup_env.sh"

WORKDIR /testbed/

# Automatically activate the testbed environment
RUN echo "source /opt/miniconda3/etc/profile.d/conda.sh && conda activate testbed" > /root/.bashrc
"#;

const ENV_DOCKERFILE_VENV: &str = r#"FROM --platform={platform} {base_image_name}

COPY ./setup_env.sh /root/
RUN chmod +x /root/setup_env.sh
RUN /bin/bash /root/setup_env.sh

WORKDIR /testbed/

# Automatically activate the testbed environment
RUN echo "source /opt/swtbench-venv/bin/activate" > /root/.bashrc
"#;

// The uv provider: the same shape as the venv one (the activation line is the venv's), on a Python
// image.
const ENV_DOCKERFILE_UV: &str = ENV_DOCKERFILE_VENV;

const INSTANCE_DOCKERFILE: &str = r#"FROM --platform={platform} {env_image_name}

{build_files}COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
"#;

// Mirror builds: the build context holds a small bare repository made from the mirror for this
// instance (the commits reachable from base_commit, the tags among them, and only base_commit's
// trees and blobs; its config names the abbreviation length of a full clone). git is told to clone
// https://github.com/<repo> from its local path (a local clone copies the object files, where
// file:// would walk the history and stop at the first missing tree), so setup_repo.sh (and the
// instance key) stay unchanged. The abbreviation length is set for setup_repo.sh (setuptools-scm
// computes the version during the install) and then kept in /testbed's config; $HOME/.gitconfig is
// restored to what the env image had, and the small repository is removed.
// git's insteadOf rewrites every URL that starts with the value, so the redirect alone would also
// send https://github.com/<repo>-helpers.git (astropy's astropy_helpers submodule, cloned by its
// setup.py during the install) to a path that does not exist; every longer repository name is
// mapped to itself (the longest match wins), and only <repo> and <repo>.git reach the mirror.
const INSTANCE_DOCKERFILE_MIRROR: &str = r#"FROM --platform={platform} {env_image_name}

COPY ./{mirror_dir} /root/{mirror_dir}
RUN if [ -e "$HOME/.gitconfig" ]; then cp -p "$HOME/.gitconfig" /root/{mirror_dir}/home-gitconfig; fi \
 && git config --file "$HOME/.gitconfig" url."/root/{mirror_dir}".insteadOf "https://github.com/{repo}" \
 && git config --file "$HOME/.gitconfig" --add url."/root/{mirror_dir}".insteadOf "https://github.com/{repo}.git" \
 && for c in {name_chars}; do git config --file "$HOME/.gitconfig" url."https://github.com/{repo}$c".insteadOf "https://github.com/{repo}$c"; done \
 && git config --file "$HOME/.gitconfig" core.abbrev "$(git config --file /root/{mirror_dir}/config core.abbrev)"
{submodules}{build_files}COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh
RUN git -C /testbed config core.abbrev "$(git config --file /root/{mirror_dir}/config core.abbrev)" \
 && rm -f "$HOME/.gitconfig" \
 && if [ -e /root/{mirror_dir}/home-gitconfig ]; then mv /root/{mirror_dir}/home-gitconfig "$HOME/.gitconfig"; fi \
 && rm -rf /root/{mirror_dir}{submodules_rm}

WORKDIR /testbed/
"#;

/// The characters that may follow a repository's name in a longer one on GitHub (letters, digits,
/// `-`, `_`, `.`), separated by spaces: the mirror Dockerfile's shell loop over them.
fn repo_name_chars() -> String {
    let chars = ('a'..='z')
        .chain('A'..='Z')
        .chain('0'..='9')
        .chain(['-', '_', '.']);
    chars.map(String::from).collect::<Vec<_>>().join(" ")
}

/// CPU architecture of the images.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    X86_64,
    Arm64,
}

impl Arch {
    /// The architecture of the machine this binary was built for.
    pub fn host() -> Arch {
        if cfg!(target_arch = "aarch64") {
            Arch::Arm64
        } else {
            Arch::X86_64
        }
    }

    /// Parses `x86_64`/`amd64` or `arm64`/`aarch64`.
    pub fn parse(s: &str) -> Option<Arch> {
        match s {
            "x86_64" | "amd64" => Some(Arch::X86_64),
            "arm64" | "aarch64" => Some(Arch::Arm64),
            _ => None,
        }
    }

    /// The name used in image keys.
    pub fn as_str(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
        }
    }

    /// The Docker platform string.
    pub fn platform(self) -> &'static str {
        match self {
            Arch::X86_64 => "linux/x86_64",
            Arch::Arm64 => "linux/arm64/v8",
        }
    }

    fn conda_arch(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "aarch64",
        }
    }

    /// The image architecture for an instance: arm64 on arm64 hosts unless the table forces x86.
    pub fn for_instance(host: Arch, instance_id: &str, table: &SpecTable) -> Arch {
        if host == Arch::Arm64 && !table.uses_x86(instance_id) {
            Arch::Arm64
        } else {
            Arch::X86_64
        }
    }
}

/// Reads files of a repository at a commit, for requirement and environment files.
/// `Ok(None)` means the file does not exist there; `Err` means it could not be determined.
pub trait FileSource {
    fn file(&self, repo: &str, commit: &str, path: &str) -> Result<Option<String>, ReadError>;
}

impl<F> FileSource for F
where
    F: Fn(&str, &str, &str) -> Result<Option<String>, ReadError>,
{
    fn file(&self, repo: &str, commit: &str, path: &str) -> Result<Option<String>, ReadError> {
        self(repo, commit, path)
    }
}

/// The three image keys (tags).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ImageKeys {
    /// `exec.base.<arch>:latest`; for a user-supplied Dockerfile
    /// `exec.base.<arch>.<sha256[:22] of the Dockerfile>:latest`; for an existing image its tag.
    pub base: String,
    /// `exec.env.<arch>.<env_hash>:latest`. `env_hash` is the first 22 hex characters of SHA-256
    /// of `setup_env.sh`; for entries that are not conda-on-the-default-base it is taken over the
    /// env Dockerfile followed by `setup_env.sh`, so a different base gives a different key.
    pub env: String,
    /// `exec.eval.<arch>.<env_hash>.<sha256[:22] of setup_repo.sh>:latest`.
    pub instance: String,
}

/// Everything a container engine needs for one instance, apart from the per-run eval scripts
/// (see [`ExecSpec::render_runs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ExecSpec {
    pub instance_id: String,
    pub repo: String,
    pub version: String,
    pub base_commit: String,
    pub environment_setup_commit: String,
    pub arch: Arch,
    /// The table entry the instance uses.
    pub spec: VersionSpec,
    /// Test command prefix from the table; `None` when the table has none (dbt-core).
    pub test_command_prefix: Option<String>,
    /// Extensions dropped from test directives for this repository.
    pub non_test_extensions: Vec<String>,
    /// Files of the gold code patch the tracer counts lines in, sorted.
    pub coverage_files: Vec<String>,
    /// `None` when the base image is an existing local image (nothing to build).
    pub base_dockerfile: Option<String>,
    pub env_dockerfile: String,
    pub setup_env_sh: String,
    pub instance_dockerfile: String,
    pub setup_repo_sh: String,
    /// `--build-files` of the instance's repository: the instance build's context holds them in
    /// [`BUILD_FILES_CONTEXT_DIR`](crate::BUILD_FILES_CONTEXT_DIR) and `setup_repo.sh` copies
    /// them onto the checkout.
    pub build_files: Option<BuildFiles>,
    /// `--compiler-cache`: the cache volume the instance build mounts, and how its steps use it
    /// (`None` without the flag).
    pub compiler_cache: Option<crate::compiler_cache::CompilerCache>,
    pub keys: ImageKeys,
    /// The environment-creating part of `setup_env.sh` (the original's `req_install_commands`).
    pub req_install_commands: Vec<String>,
    /// uv with `frozen_pins`: the pinned set installed and where it came from.
    pub pins: Option<EnvPins>,
    /// What the environment cannot serve as asked (no frozen pins: packages unpinned), for people.
    pub env_warnings: Vec<String>,
    /// The gold validation found this instance broken under its provider, and why
    /// ([`crate::validation`]), for people.
    pub validation_warning: Option<String>,
}

/// The frozen pins an instance's uv environment installs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvPins {
    /// `name==version`, as installed (`--no-deps`).
    pub pins: Vec<String>,
    /// The frozen environment's exact Python version.
    pub frozen_python: String,
    /// Where the pins come from ([`PinChoice::describe`]).
    pub source: String,
    /// What the conversion left out of the frozen environment.
    pub dropped: Vec<String>,
}

impl ExecSpec {
    /// Renders the image texts of `instance`. Requirement files are read through `files` only
    /// when the entry's `packages` style needs them.
    ///
    /// With an environment lock on the table ([`SpecTable::with_env_lock`]), an instance whose
    /// environment has a lock entry installs the entry's pins instead (see [`crate::lock`]).
    pub fn new(
        instance: &Instance,
        table: &SpecTable,
        host: Arch,
        files: &dyn FileSource,
    ) -> Result<ExecSpec, SpecError> {
        let unlocked = ExecSpec::render(instance, table, host, files, None)?;
        let Some(lock) = &table.env_lock else {
            return Ok(unlocked);
        };
        match lock.find(&instance.repo, &instance.version, &unlocked.keys.env) {
            Some(entry) => {
                let pins = entry.env_pins(&lock.origin, unlocked.pins.as_ref());
                ExecSpec::render(instance, table, host, files, Some(pins))
            }
            None => match lock.made_for(instance.instance_id.as_str(), &instance.repo, &instance.version) {
                // The default lock gives way to an environment of one's own, and says so.
                Some(entry) if lock.default => {
                    let mut unlocked = unlocked;
                    unlocked.env_warnings.push(format!(
                        "{}: {} has an entry for this environment made from other inputs (environment {}, now {}: another Python image or spec entry); it is installed unlocked",
                        instance.instance_id, lock.origin, entry.unlocked_env, unlocked.keys.env
                    ));
                    Ok(unlocked)
                }
                Some(entry) => Err(SpecError::EnvLock {
                    instance: instance.instance_id.to_string(),
                    message: format!(
                        "the environment lock {}:{} has an entry for it made from other inputs (environment {}, now {}): the spec entry, the provider or the Python image changed since; write the lock again with `swtbench envs lock`",
                        lock.origin, entry.line, entry.unlocked_env, unlocked.keys.env
                    ),
                }),
                None => Ok(unlocked),
            },
        }
    }

    fn render(
        instance: &Instance,
        table: &SpecTable,
        host: Arch,
        files: &dyn FileSource,
        locked: Option<EnvPins>,
    ) -> Result<ExecSpec, SpecError> {
        let entry = table.lookup(&instance.repo, &instance.version)?;
        let arch = Arch::for_instance(host, instance.instance_id.as_str(), table);
        let spec = entry.spec;
        let commit = instance.environment_setup_commit.as_str();
        let mut env_warnings = Vec::new();
        let pins = env_pins(instance, spec, locked, &mut env_warnings);
        let req_install_commands = req_install_commands(&entry, commit, files, pins.as_ref())?;
        let setup_env_sh = setup_env_script(spec, &req_install_commands, pins.is_some());
        let build_files = table.build_files.get(&instance.repo).cloned();
        let setup_repo_sh = repo_script(instance, &entry, build_files.as_ref());

        let platform = arch.platform();
        let (base_key, base_dockerfile) = base_image(spec, arch);
        let env_dockerfile = env_dockerfile(spec, platform, &base_key, table.compiler_cache);
        // The compiler cache's install line changes the key of every entry, reference ones too.
        let env_hash = if spec.is_reference() && !table.compiler_cache {
            sha256_prefix(&setup_env_sh, KEY_HASH_LEN)
        } else {
            sha256_prefix(format!("{env_dockerfile}{setup_env_sh}"), KEY_HASH_LEN)
        };
        let env_key = format!("exec.env.{}.{}:latest", arch.as_str(), env_hash);
        let instance_hash = sha256_prefix(&setup_repo_sh, KEY_HASH_LEN);
        let instance_key = format!(
            "exec.eval.{}.{}.{}:latest",
            arch.as_str(),
            env_hash,
            instance_hash
        );
        let instance_dockerfile = INSTANCE_DOCKERFILE
            .replace("{build_files}", &build_files_copy(build_files.as_ref()))
            .replace("{platform}", platform)
            .replace("{env_image_name}", &env_key);

        let compiler_cache = table
            .compiler_cache
            .then(|| crate::compiler_cache::CompilerCache::for_env(&env_key));
        let validation_warning = crate::validation::Validation::embedded().warning(
            instance.instance_id.as_str(),
            spec.provider,
            &env_key,
        );
        Ok(ExecSpec {
            instance_id: instance.instance_id.to_string(),
            repo: instance.repo.clone(),
            version: instance.version.clone(),
            base_commit: instance.base_commit.clone(),
            environment_setup_commit: instance.environment_setup_commit.clone(),
            arch,
            // A uv entry's Python image is an existing image like any `base_image`: the runner
            // looks it up and never builds it.
            spec: {
                let mut s = spec.clone();
                if s.provider == Provider::Uv && s.base == BaseImage::Default {
                    s.base = BaseImage::Image(base_key.clone());
                }
                s
            },
            test_command_prefix: entry.test_command().map(str::to_string),
            non_test_extensions: table
                .non_test_extensions(&instance.repo)
                .into_iter()
                .map(str::to_string)
                .collect(),
            coverage_files: swtbench_core::directives::coverage_files(&instance.golden_code_patch),
            base_dockerfile,
            env_dockerfile,
            setup_env_sh,
            instance_dockerfile,
            setup_repo_sh,
            build_files,
            compiler_cache,
            keys: ImageKeys {
                base: base_key,
                env: env_key,
                instance: instance_key,
            },
            validation_warning,
            req_install_commands,
            pins,
            env_warnings,
        })
    }

    /// The Docker platform string of the images.
    pub fn platform(&self) -> &'static str {
        self.arch.platform()
    }

    /// The user the test container runs as (`root`, or `nonroot` when the entry says so).
    pub fn user(&self) -> &'static str {
        if self.spec.runs_as_nonroot() {
            "nonroot"
        } else {
            "root"
        }
    }

    pub fn provider(&self) -> Provider {
        self.spec.provider
    }

    /// The instance Dockerfile for builds whose context holds, in [`MIRROR_CONTEXT_DIR`], the
    /// small bare repository made from the mirror for this instance (`swtbench_data::slim_repo`):
    /// `git clone https://github.com/<repo>` in the unchanged `setup_repo.sh` is redirected to its
    /// local path with `url.<path>.insteadOf`, the abbreviation length of a full clone (the
    /// repository's `core.abbrev`) is applied during the build and kept in `/testbed/.git/config`,
    /// and the repository and the redirect are removed again afterwards. The tree, the branch,
    /// `git status`, `git describe` and the history's commits are those of a GitHub build (the
    /// older commits' trees and blobs are left out), so the instance key stays the same (it only
    /// depends on `setup_repo.sh`).
    pub fn instance_dockerfile_with_mirror(&self) -> String {
        self.instance_dockerfile_with_mirrors(&[])
    }

    /// [`ExecSpec::instance_dockerfile_with_mirror`], with submodules of the checkout served from
    /// their own small repositories under [`SUBMODULES_CONTEXT_DIR`] (a setup that clones them,
    /// as astropy's `setup.py` clones `astropy_helpers` during the install, then needs no
    /// network): each submodule's URL, with and without `.git`, is redirected to its directory,
    /// git is allowed to clone submodules from local paths for the build, and the directories are
    /// removed with the redirect.
    pub fn instance_dockerfile_with_mirrors(&self, submodules: &[SubmoduleSource]) -> String {
        let mut sub_copy = String::new();
        let mut sub_rm = String::new();
        if !submodules.is_empty() {
            let mut redirect = format!(
                "COPY ./{SUBMODULES_CONTEXT_DIR} /root/{SUBMODULES_CONTEXT_DIR}\n\
                 RUN git config --file \"$HOME/.gitconfig\" protocol.file.allow always"
            );
            for sub in submodules {
                let bare = sub.url.strip_suffix(".git").unwrap_or(&sub.url);
                for url in [bare.to_string(), format!("{bare}.git")] {
                    redirect.push_str(&format!(
                        " \\\n && git config --file \"$HOME/.gitconfig\" --add url.\"/root/{SUBMODULES_CONTEXT_DIR}/{}\".insteadOf \"{url}\"",
                        sub.dir
                    ));
                }
            }
            redirect.push('\n');
            sub_copy = redirect;
            sub_rm = format!(" \\\n && rm -rf /root/{SUBMODULES_CONTEXT_DIR}");
        }
        INSTANCE_DOCKERFILE_MIRROR
            .replace("{submodules}", &sub_copy)
            .replace("{submodules_rm}", &sub_rm)
            .replace(
                "{build_files}",
                &build_files_copy(self.build_files.as_ref()),
            )
            .replace("{platform}", self.platform())
            .replace("{env_image_name}", &self.keys.env)
            .replace("{mirror_dir}", MIRROR_CONTEXT_DIR)
            .replace("{name_chars}", &repo_name_chars())
            .replace("{repo}", &self.repo)
    }

    /// `keys.json`: `{"base": …, "env": …, "instance": …}`, pretty-printed, with a final newline.
    pub fn keys_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(&self.keys).unwrap_or_default();
        s.push('\n');
        s
    }

    /// The script `swtbench envs lock` runs in a throwaway container of the Python image to
    /// resolve a uv environment: `setup_env.sh` without what only the image needs (git and the
    /// compiler from Debian, the `nonroot` user), then the installed set, one requirement a line, written to `output`
    /// (`uv pip freeze`; `pip freeze --all` where the environment is made with pip).
    pub fn lock_script(&self, output: &str) -> String {
        let mut lines: Vec<&str> = self
            .setup_env_sh
            .split('\n')
            .filter(|l| {
                !l.is_empty() && ![UV_SYSTEM_LINE, UV_LOCALES_LINE, UV_NONROOT_LINE].contains(l)
            })
            .collect();
        let freeze = if uv_serves(&self.spec) {
            format!("uv pip freeze > {output}")
        } else {
            format!("python -m pip freeze --all > {output}")
        };
        lines.push(&freeze);
        script(&lines)
    }

    /// The lines that activate the environment in scripts run inside the container.
    pub(crate) fn activate_lines(&self) -> &'static [&'static str] {
        match self.spec.provider {
            Provider::Conda => &[
                "source /opt/miniconda3/bin/activate",
                "conda activate testbed",
            ],
            Provider::Venv | Provider::Uv => &["source /opt/swtbench-venv/bin/activate"],
        }
    }
}

/// The files an env image's build context holds besides `setup_env.sh`: (path in the context,
/// text, mode). They are what the end of every env Dockerfile copies in (the coverage tracer's
/// native line counter and its build script).
pub fn env_context_files() -> Vec<(String, &'static str, u32)> {
    swtbench_tracer::native_context_files()
        .into_iter()
        .collect()
}

/// Inserts `lines` right after the first `FROM` line of a Dockerfile (which must have one), for
/// build-only additions that do not belong in the key-defining scripts: a CA bundle for
/// TLS-intercepting proxies, proxy variables, labels. Returns the text unchanged when there is no
/// `FROM` line.
pub fn insert_after_from(dockerfile: &str, lines: &[&str]) -> String {
    let mut out = String::with_capacity(dockerfile.len() + 64);
    let mut done = false;
    for line in dockerfile.split_inclusive('\n') {
        out.push_str(line);
        if !done && line.trim_start().to_ascii_uppercase().starts_with("FROM ") {
            if !line.ends_with('\n') {
                out.push('\n');
            }
            for l in lines {
                out.push_str(l);
                out.push('\n');
            }
            done = true;
        }
    }
    out
}

/// Joins script lines the way the original does: `\n` between lines and one at the end.
pub(crate) fn script(lines: &[&str]) -> String {
    // Sized once: a line can hold a patch of tens of megabytes, and growing the string would
    // copy it.
    let mut s = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for line in lines {
        s.push_str(line);
        s.push('\n');
    }
    s
}

/// The instance Dockerfile's `COPY` of the build files, when there are any.
/// The pins an instance's environment is installed with: `locked` when given, else the frozen
/// environment chosen for it when its uv entry asks for frozen pins (a warning in
/// `env_warnings` when there is none).
fn env_pins(
    instance: &Instance,
    spec: &VersionSpec,
    locked: Option<EnvPins>,
    env_warnings: &mut Vec<String>,
) -> Option<EnvPins> {
    let choice = if locked.is_some() {
        PinChoice::None
    } else if spec.provider == Provider::Uv && spec.frozen_pins == Some(true) {
        let c = FrozenPins::embedded().for_instance(
            instance.instance_id.as_str(),
            &instance.repo,
            &instance.version,
        );
        if c == PinChoice::None {
            env_warnings.push(format!(
                "{}: {}",
                instance.instance_id,
                c.describe(instance.instance_id.as_str())
            ));
        }
        c
    } else {
        PinChoice::None
    };
    locked.or_else(|| {
        choice.env().map(|env| EnvPins {
            pins: env.pins.clone(),
            frozen_python: env.python.clone(),
            source: choice.describe(instance.instance_id.as_str()),
            dropped: env.dropped.clone(),
        })
    })
}

/// The environment's setup script: the requirement install commands (inside the conda
/// activation for conda entries), then the install of the entry's pip packages (none when a uv
/// entry is `pinned`: the frozen set is the whole environment).
fn setup_env_script(spec: &VersionSpec, req_install_commands: &[String], pinned: bool) -> String {
    let mut env_lines: Vec<&str> = vec!["#!/bin/bash", "set -euxo pipefail"];
    let no_deps = if spec.no_deps == Some(true) {
        " --no-deps"
    } else {
        ""
    };
    let pip_line = match (spec.provider, &spec.pip_packages) {
        // The frozen set is the whole environment.
        (Provider::Uv, _) if pinned => None,
        (Provider::Uv, Some(p)) if uv_serves(spec) => {
            Some(format!("uv pip install{no_deps} {}", p.join(" ")))
        }
        (Provider::Uv, Some(p)) => Some(format!("python -m pip install{no_deps} {}", p.join(" "))),
        (_, Some(p)) if spec.no_deps == Some(true) => {
            Some(format!("python -m pip install --no-deps {}", p.join(" ")))
        }
        (_, p) => p
            .as_ref()
            .map(|p| format!("python -m pip install {}", p.join(" "))),
    };
    match spec.provider {
        Provider::Conda => {
            env_lines.push("source /opt/miniconda3/bin/activate");
            env_lines.extend(req_install_commands.iter().map(String::as_str));
            env_lines.push("conda activate testbed");
        }
        Provider::Venv | Provider::Uv => {
            env_lines.extend(req_install_commands.iter().map(String::as_str))
        }
    }
    if let Some(l) = &pip_line {
        env_lines.push(l);
    }
    script(&env_lines)
}

/// The key of the entry's base image and its Dockerfile (none for an existing image, such as a
/// uv entry's Python image or a `base_image` tag).
fn base_image(spec: &VersionSpec, arch: Arch) -> (String, Option<String>) {
    let platform = arch.platform();
    match &spec.base {
        // The Python image is an existing image (never built by swtbench).
        BaseImage::Default if spec.provider == Provider::Uv => (
            python_image(
                spec.python_image.as_deref().unwrap_or(DEFAULT_PYTHON_IMAGE),
                spec.python.as_deref().unwrap_or_default(),
            ),
            None,
        ),
        BaseImage::Default => (
            format!("exec.base.{}:latest", arch.as_str()),
            Some(
                BASE_DOCKERFILE
                    .replace("{platform}", platform)
                    .replace("{conda_arch}", arch.conda_arch()),
            ),
        ),
        BaseImage::Image(tag) => (tag.clone(), None),
        BaseImage::Dockerfile { text, .. } => (
            format!(
                "exec.base.{}.{}:latest",
                arch.as_str(),
                sha256_prefix(text, KEY_HASH_LEN)
            ),
            Some(text.clone()),
        ),
    }
}

/// The Dockerfile of the environment image for the entry's provider, on `base_key`, with the
/// tracer's native lines and (with `compiler_cache`) the compiler cache's install lines.
fn env_dockerfile(
    spec: &VersionSpec,
    platform: &str,
    base_key: &str,
    compiler_cache: bool,
) -> String {
    let env_template = match spec.provider {
        Provider::Conda => ENV_DOCKERFILE_CONDA,
        Provider::Venv => ENV_DOCKERFILE_VENV,
        Provider::Uv => ENV_DOCKERFILE_UV,
    };
    env_template
        .replace("{platform}", platform)
        .replace("{base_image_name}", base_key)
        + &swtbench_tracer::native_dockerfile_lines()
        + if compiler_cache {
            crate::compiler_cache::INSTALL_LINES
        } else {
            ""
        }
}

fn build_files_copy(build_files: Option<&BuildFiles>) -> String {
    build_files
        .map(|_| BuildFiles::dockerfile_line())
        .unwrap_or_default()
}

fn repo_script(instance: &Instance, entry: &Entry<'_>, build_files: Option<&BuildFiles>) -> String {
    let spec = entry.spec;
    let clone = format!(
        "git clone -o origin https://github.com/{} {REPO_DIR}",
        instance.repo
    );
    let chmod = format!("chmod -R 777 {REPO_DIR}");
    let cd = format!("cd {REPO_DIR}");
    let reset = format!("git reset --hard {}", instance.base_commit);
    let mut lines: Vec<&str> = vec![
        "#!/bin/bash",
        "set -euxo pipefail",
        &clone,
        &chmod,
        &cd,
        &reset,
        "git remote remove origin",
    ];
    let copy = build_files.map(BuildFiles::repo_script_lines);
    if let Some(copy) = &copy {
        lines.extend(copy.iter().map(String::as_str));
    }
    match spec.provider {
        Provider::Conda => lines.extend([
            "source /opt/miniconda3/bin/activate",
            "conda activate testbed",
            "echo \"Current environment: $CONDA_DEFAULT_ENV\"",
        ]),
        Provider::Venv | Provider::Uv => lines.extend([
            "source /opt/swtbench-venv/bin/activate",
            "echo \"Current environment: $VIRTUAL_ENV\"",
        ]),
    }
    if let Some(l) = &entry.repo_spec.repo_install {
        lines.push(l);
    }
    if let Some(pre) = &spec.pre_install {
        // uv environments install the system packages once, in the env image that the
        // instances of the entry share (see `system_pre_install`); the lines that edit the
        // checkout stay here.
        let hoisted = spec.provider == Provider::Uv;
        lines.extend(
            pre.iter()
                .map(String::as_str)
                .filter(|l| !(hoisted && system_pre_install(l))),
        );
        if hoisted && caps_sphinx_helpers_but_not_jsmath(pre) {
            lines.push(UV_JSMATH_LINE);
        }
    }
    if let Some(install) = &spec.install {
        lines.push(install);
    }
    script(&lines)
}

fn req_install_commands(
    entry: &Entry<'_>,
    commit: &str,
    files: &dyn FileSource,
    pins: Option<&EnvPins>,
) -> Result<Vec<String>, SpecError> {
    match entry.spec.provider {
        Provider::Conda => conda_install_commands(entry, commit, files),
        Provider::Venv => venv_install_commands(entry, commit, files),
        Provider::Uv => uv_install_commands(entry, commit, files, pins),
    }
}

/// The install commands of a conda entry: the `testbed` environment made from the checkout's
/// requirements file or environment file, or from the entry's package list.
fn conda_install_commands(
    entry: &Entry<'_>,
    commit: &str,
    files: &dyn FileSource,
) -> Result<Vec<String>, SpecError> {
    let spec = entry.spec;
    let repo = entry.repo;
    let get = |path: &str| files.file(repo, commit, path);
    let packages = spec.packages.as_deref().unwrap_or("");
    let python = spec.python.as_deref().unwrap_or("");
    let mut out = Vec::new();
    match packages {
        "requirements.txt" => {
            let paths = entry.repo_spec.requirements_paths.as_deref().unwrap_or(&[]);
            let text = reqs::requirements_text(repo, commit, paths, get)?;
            out.push(format!("conda create -n {ENV_NAME} python={python} -y"));
            out.push(heredoc("$HOME/requirements.txt", &text));
            out.push(format!(
                "conda activate {ENV_NAME} && python -m pip install -r $HOME/requirements.txt"
            ));
            out.push("rm $HOME/requirements.txt".to_string());
        }
        "environment.yml" => {
            let paths = entry
                .repo_spec
                .environment_yml_paths
                .as_deref()
                .unwrap_or(&[]);
            let text = reqs::environment_yml_text(repo, commit, paths, ENV_NAME, get)?;
            out.push(heredoc("environment.yml", &text));
            if spec.no_use_env == Some(true) {
                out.push(format!(
                    "conda create -c conda-forge -n {ENV_NAME} python={python} -y"
                ));
                out.push("conda env update -f environment.yml".to_string());
            } else {
                out.push("conda env create --file environment.yml".to_string());
                out.push(format!(
                    "conda activate {ENV_NAME} && conda install python={python} -y"
                ));
            }
            out.push("rm environment.yml".to_string());
        }
        pkgs => out.push(format!(
            "conda create -n {ENV_NAME} python={python} {pkgs} -y"
        )),
    }
    Ok(out)
}

/// The install commands of a venv entry: the virtual environment, then the checkout's
/// requirements file or the entry's package list installed into it.
fn venv_install_commands(
    entry: &Entry<'_>,
    commit: &str,
    files: &dyn FileSource,
) -> Result<Vec<String>, SpecError> {
    let spec = entry.spec;
    let repo = entry.repo;
    let get = |path: &str| files.file(repo, commit, path);
    let packages = spec.packages.as_deref().unwrap_or("");
    let mut out = Vec::new();
    let interpreter = spec.interpreter.as_deref().unwrap_or("python3");
    out.push(format!("{interpreter} -m venv {VENV_DIR}"));
    out.push(format!("source {VENV_DIR}/bin/activate"));
    match packages {
        "requirements.txt" => {
            let paths = entry.repo_spec.requirements_paths.as_deref().unwrap_or(&[]);
            let text = reqs::requirements_text(repo, commit, paths, get)?;
            out.push(heredoc("$HOME/requirements.txt", &text));
            out.push("python -m pip install -r $HOME/requirements.txt".to_string());
            out.push("rm $HOME/requirements.txt".to_string());
        }
        "environment.yml" => {
            return Err(SpecError::Unsupported {
                repo: repo.to_string(),
                version: entry.version.to_string(),
                message: "packages = \"environment.yml\" needs conda; use provider = \"conda\" or list the packages".to_string(),
            })
        }
        pkgs if crate::py::strip(pkgs).is_empty() => {}
        pkgs if spec.no_deps == Some(true) => {
            out.push(format!("python -m pip install --no-deps {pkgs}"))
        }
        pkgs => out.push(format!("python -m pip install {pkgs}")),
    }
    Ok(out)
}

/// The install commands of a uv entry: the system set-up of the Python image, the virtual
/// environment (made by uv where it serves the Python), then the frozen `pins` or else the
/// checkout's requirements file or the entry's package list.
fn uv_install_commands(
    entry: &Entry<'_>,
    commit: &str,
    files: &dyn FileSource,
    pins: Option<&EnvPins>,
) -> Result<Vec<String>, SpecError> {
    let spec = entry.spec;
    let repo = entry.repo;
    let get = |path: &str| files.file(repo, commit, path);
    let packages = spec.packages.as_deref().unwrap_or("");
    let mut out = Vec::new();
    let no_deps = if spec.no_deps == Some(true) {
        " --no-deps"
    } else {
        ""
    };
    // uv makes no environments for Python < 3.8: there, the same image's venv and pip.
    let with_uv = uv_serves(spec);
    let pip = if with_uv {
        "uv pip install"
    } else {
        "python -m pip install"
    };
    uv_venv_commands(spec, with_uv, &mut out);
    if let Some(p) = pins {
        // The pip of an old Python's ensurepip (18.1 on 3.6) does not read newer wheels'
        // platform tags (manylinux2014, manylinux_x_y) and would build those packages
        // from source (bcrypt: with Rust): the pinned pip, the one that made the frozen
        // environment, installs the rest.
        if let Some(pip) = (!with_uv).then(|| pinned_pip(&p.pins)).flatten() {
            out.push(format!("python -m pip install --no-deps {pip}"));
        }
        let mut text = p.pins.join("\n");
        if text.is_empty() {
            text.push_str("# no pins");
        }
        out.push(heredoc("$HOME/requirements.txt", &text));
        out.push(format!("{pip} --no-deps -r $HOME/requirements.txt"));
        out.push("rm $HOME/requirements.txt".to_string());
        return Ok(out);
    }
    match packages {
        "requirements.txt" => {
            let paths = entry.repo_spec.requirements_paths.as_deref().unwrap_or(&[]);
            let text = reqs::requirements_text(repo, commit, paths, get)?;
            out.push(heredoc("$HOME/requirements.txt", &text));
            out.push(format!("{pip}{no_deps} -r $HOME/requirements.txt"));
            out.push("rm $HOME/requirements.txt".to_string());
        }
        "environment.yml" => {
            return Err(SpecError::Unsupported {
                repo: repo.to_string(),
                version: entry.version.to_string(),
                message: "packages = \"environment.yml\" is a conda environment and this instance has no frozen pins; use provider = \"conda\" or list the packages".to_string(),
            })
        }
        pkgs if crate::py::strip(pkgs).is_empty() => {}
        pkgs => out.push(format!("{pip}{no_deps} {pkgs}")),
    }
    Ok(out)
}

/// Appends to `out` the system set-up of a uv entry's Python image (the entry's system
/// `pre_install` lines too) and the making and activation of its virtual environment, by uv
/// when `with_uv`, else by the image's own venv.
fn uv_venv_commands(spec: &VersionSpec, with_uv: bool, out: &mut Vec<String>) {
    // The Python image has neither git (setup_repo.sh clones), a compiler, nor the user
    // the tests may run as; uv comes from PyPI, its cache is not kept in the image.
    if with_uv {
        out.push("export UV_NO_CACHE=1".to_string());
    }
    out.push(UV_SYSTEM_LINE.to_string());
    if makes_locale_at_test_time(spec) {
        out.push(UV_LOCALES_LINE.to_string());
    }
    out.push(UV_NONROOT_LINE.to_string());
    // The entry's system packages (apt-get, locales): the same for every instance of the
    // entry, so they are made once here rather than in each instance image.
    if let Some(pre) = &spec.pre_install {
        out.extend(pre.iter().filter(|l| system_pre_install(l)).cloned());
    }
    if with_uv {
        out.push(format!(
            "python -m pip install --no-cache-dir --disable-pip-version-check uv=={UV_VERSION}"
        ));
        // pip puts the `uv` program into the interpreter's scripts directory, which need
        // not be on PATH (an interpreter under /opt with only `python` linked into
        // /usr/local/bin): uv is started through the interpreter, and the environment gets
        // a link to the program, so that `uv pip install` works once it is activated.
        // --seed: pip, and for Python < 3.12 setuptools and wheel, for the spec's install
        // commands (`python -m pip install -e .`); frozen pins then set their versions.
        out.push(format!(
            "python -m uv venv --seed --python \"$(command -v python)\" {VENV_DIR}"
        ));
        out.push(format!(
            "ln -sf \"$(python -c 'import uv; print(uv.find_uv_bin())')\" {VENV_DIR}/bin/uv"
        ));
    } else {
        out.push(format!("python -m venv {VENV_DIR}"));
    }
    out.push(format!("source {VENV_DIR}/bin/activate"));
}

/// The pin of pip itself among `pins` (`pip==21.2.2`), when it is a plain version.
fn pinned_pip(pins: &[String]) -> Option<&str> {
    pins.iter().map(String::as_str).find(|p| {
        p.strip_prefix("pip==").is_some_and(|v| {
            !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
        })
    })
}

/// Whether a `pre_install` line changes only the system, not the checkout: package installs
/// (`apt-get …`, with or without `DEBIAN_FRONTEND=…` before it) and locale set-up (`locale-gen`,
/// writing `/etc/locale.gen`). Such a line gives every instance of an entry the same result, so
/// uv environments run it once in the env image (the instance images then hold only the
/// checkout and its install). Anything else (`sed -i … setup.py`) edits the checkout and stays
/// in `setup_repo.sh`.
pub fn system_pre_install(line: &str) -> bool {
    let l = line.trim();
    let l = l
        .strip_prefix("DEBIAN_FRONTEND=noninteractive ")
        .unwrap_or(l)
        .trim_start();
    if l.starts_with("apt-get ") || l.starts_with("locale-gen") {
        return true;
    }
    // `echo 'en_US UTF-8' > /etc/locale.gen`: one echo into a file under /etc.
    if let Some(rest) = l.strip_prefix("echo ") {
        if let Some((_, target)) = rest.rsplit_once('>') {
            let target = target.trim();
            return target.starts_with("/etc/") && !target.contains(char::is_whitespace);
        }
    }
    false
}

/// Whether an entry's `pre_install` caps the `sphinxcontrib-*` helpers in `setup.py` (Sphinx
/// 3.0–4.4: each capped below the release that needs Sphinx 5) but not `sphinxcontrib-jsmath`,
/// whose 2.0.0 (October 2026, after the table was written) needs Sphinx 5 too: a uv entry's
/// setup.py then gets the same kind of cap for it (`UV_JSMATH_LINE`).
fn caps_sphinx_helpers_but_not_jsmath(pre_install: &[String]) -> bool {
    pre_install
        .iter()
        .any(|l| l.starts_with("sed -i 's/sphinxcontrib-applehelp/"))
        && !pre_install
            .iter()
            .any(|l| l.contains("sphinxcontrib-jsmath"))
}

/// Whether an entry's eval commands make a locale (`locale-gen`, or an edit of `/etc/locale.gen`)
/// while its system packages do not install `locales` (Django 1.x does, in `pre_install`).
fn makes_locale_at_test_time(spec: &VersionSpec) -> bool {
    let mentions = |lines: &Option<Vec<String>>, what: &[&str]| {
        lines
            .iter()
            .flatten()
            .any(|l| what.iter().any(|w| l.contains(w)))
    };
    mentions(&spec.eval_commands, &["locale-gen", "/etc/locale.gen"])
        && !mentions(&spec.pre_install, &["locales"])
}

/// Whether uv makes the environment of a uv entry: Python 3.8 or newer, or no `python` on an
/// explicit base image (its interpreter is taken as it is). Older Pythons get `python -m venv`
/// and pip on the same image.
fn uv_serves(spec: &VersionSpec) -> bool {
    match spec.python.as_deref() {
        None | Some("") => spec.base != BaseImage::Default,
        Some(p) => crate::table::python_at_least(p, crate::table::UV_MIN_PYTHON),
    }
}

fn heredoc(path: &str, text: &str) -> String {
    format!("cat <<'{ENV_HEREDOC}' > {path}\n{text}\n{ENV_HEREDOC}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_conda_base_image_starts_from_the_named_image() {
        assert!(super::BASE_DOCKERFILE.contains(&format!(
            "FROM --platform={{platform}} {}\n",
            super::CONDA_BASE_FROM
        )));
    }

    use super::*;

    #[test]
    fn inserts_after_the_first_from_line() {
        let base = BASE_DOCKERFILE.replace("{platform}", "linux/x86_64");
        let copy = "COPY ./ca.crt /usr/local/share/ca-certificates/x.crt";
        let out = insert_after_from(&base, &[copy]);
        assert!(out.starts_with(
            "\nFROM --platform=linux/x86_64 ubuntu:22.04\nCOPY ./ca.crt /usr/local/share/ca-certificates/x.crt\n\nARG"
        ));
        assert_eq!(out.len(), base.len() + copy.len() + 1);
        assert_eq!(out.replacen(&format!("{copy}\n"), "", 1), base);
        assert_eq!(insert_after_from("FROM a", &["X"]), "FROM a\nX\n");
        assert_eq!(insert_after_from("RUN x\n", &["X"]), "RUN x\n");
    }
}
