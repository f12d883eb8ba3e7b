//! Prebuilt instance images (`--instance-image`), the pure half: images in SWE-bench's layout
//! that someone else built (SWE-bench's `swebench/sweb.eval.x86_64.*` on Docker Hub, Epoch AI's
//! registry, a team's own), used instead of building the env and instance images.
//!
//! What such an image must be: a conda installation at `/opt/miniconda3` whose
//! `bin/activate` makes `conda activate testbed` work, and the repository at `/testbed`, checked
//! out at the instance's `base_commit` and installed in that environment. The eval scripts of the
//! conda provider rely on exactly that, so a prebuilt instance's scripts are rendered for conda
//! whatever the spec table's provider is.
//!
//! This names the image of an instance (a template, or the dataset row's image name), splits
//! image names the way Docker does, picks an image's content digest (which goes into the run keys
//! instead of the instance image key), and reads the layout check's verdict. The runner's
//! `prebuilt` module pulls and checks the images.

use std::collections::BTreeMap;

use serde::Serialize;
use swtbench_core::engine::RegistryAuth;
use swtbench_core::Instance;

/// The instance id as it is, lower-cased (Docker wants lower-case repository names).
pub const PLACEHOLDER_ID: &str = "{id}";
/// The instance id with `__` spelled `_1776_`, lower-cased: the spelling of SWE-bench's Docker
/// Hub names (`swebench/sweb.eval.x86_64.django_1776_django-11099`).
pub const PLACEHOLDER_ID_1776: &str = "{id_1776}";
/// The value of `--instance-image` that takes each instance's image name from its dataset row.
pub const FROM_DATASET: &str = "dataset";
/// Dataset columns that name an instance's prebuilt image, in the order they are looked at.
pub const DATASET_IMAGE_FIELDS: &[&str] = &["image_name", "docker_image", "instance_image"];

/// Where each instance's prebuilt image name comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "template", rename_all = "snake_case")]
pub enum PrebuiltSource {
    /// A template with [`PLACEHOLDER_ID`] and/or [`PLACEHOLDER_ID_1776`].
    Template(String),
    /// The dataset row's image name ([`DATASET_IMAGE_FIELDS`]).
    Dataset,
}

/// `--instance-image` resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrebuiltSettings {
    pub source: PrebuiltSource,
    /// Credentials for pulls, by registry host (from Docker's config); never printed.
    pub auth: BTreeMap<String, RegistryAuth>,
}

/// What is wrong with an `--instance-image` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("--instance-image {template:?}: unknown placeholder {placeholder}")]
    UnknownPlaceholder {
        template: String,
        placeholder: String,
    },
    #[error(
        "--instance-image {template:?} has no placeholder: every instance would use the same image"
    )]
    NoPlaceholder { template: String },
    #[error("--instance-image {template:?}: unclosed '{{'")]
    Unclosed { template: String },
}

impl TemplateError {
    pub fn hint(&self) -> &'static str {
        "use {id} (the instance id) or {id_1776} (with __ spelled _1776_), e.g. \
         'docker.io/swebench/sweb.eval.x86_64.{id_1776}:latest', or 'dataset'"
    }
}

/// Parses `--instance-image`: [`FROM_DATASET`], or a template whose placeholders are known.
pub fn parse_source(text: &str) -> Result<PrebuiltSource, TemplateError> {
    if text == FROM_DATASET {
        return Ok(PrebuiltSource::Dataset);
    }
    let mut rest = text;
    let mut placeholders = 0;
    while let Some(start) = rest.find('{') {
        let after = &rest[start..];
        let Some(end) = after.find('}') else {
            return Err(TemplateError::Unclosed {
                template: text.into(),
            });
        };
        let placeholder = &after[..=end];
        if placeholder != PLACEHOLDER_ID && placeholder != PLACEHOLDER_ID_1776 {
            return Err(TemplateError::UnknownPlaceholder {
                template: text.into(),
                placeholder: placeholder.into(),
            });
        }
        placeholders += 1;
        rest = &after[end + 1..];
    }
    if placeholders == 0 {
        return Err(TemplateError::NoPlaceholder {
            template: text.into(),
        });
    }
    Ok(PrebuiltSource::Template(text.to_string()))
}

/// The template with an instance id put in.
pub fn render_template(template: &str, instance_id: &str) -> String {
    let id = instance_id.to_lowercase();
    template
        .replace(PLACEHOLDER_ID_1776, &id.replace("__", "_1776_"))
        .replace(PLACEHOLDER_ID, &id)
}

/// The image name the dataset row gives, when it gives one.
pub fn dataset_image(instance: &Instance) -> Option<String> {
    DATASET_IMAGE_FIELDS.iter().find_map(|f| {
        instance
            .extra
            .get(*f)
            .and_then(|v| v.as_str())
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    })
}

/// The prebuilt image of an instance: the template's, else the dataset row's. `None`: the
/// source is the dataset and the row names none.
pub fn reference_for(source: &PrebuiltSource, instance: &Instance) -> Option<String> {
    match source {
        PrebuiltSource::Template(t) => Some(render_template(t, instance.instance_id.as_str())),
        PrebuiltSource::Dataset => dataset_image(instance),
    }
}

/// An image name split as Docker splits it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageName {
    /// `host[:port]` as written (`docker.io` when the name has none).
    pub registry: String,
    /// The repository inside the registry (`library/…` for a one-part Docker Hub name).
    pub repository: String,
    pub tag: String,
}

/// Docker Hub's names and the host its registry API answers on.
const DOCKER_HUB: &str = "docker.io";
const DOCKER_HUB_API: &str = "registry-1.docker.io";

impl ImageName {
    /// The host Docker's config keeps the registry's credentials under.
    pub fn credentials_host(&self) -> &str {
        if self.registry == DOCKER_HUB {
            "index.docker.io"
        } else {
            &self.registry
        }
    }

    /// The host the registry's HTTP API is at.
    pub fn api_host(&self) -> &str {
        if self.registry == DOCKER_HUB || self.registry == "index.docker.io" {
            DOCKER_HUB_API
        } else {
            &self.registry
        }
    }
}

/// Splits `reference` (`[host[:port]/]repo[:tag]`): the first part names a registry when it has
/// a dot or a port or is `localhost`, as Docker decides.
pub fn parse_image_name(reference: &str) -> ImageName {
    let (registry, path) = match reference.split_once('/') {
        Some((first, rest))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            (first.to_string(), rest.to_string())
        }
        _ => (DOCKER_HUB.to_string(), reference.to_string()),
    };
    let (repo, tag) = match path.rsplit_once(':') {
        Some((r, t)) if !t.contains('/') => (r.to_string(), t.to_string()),
        _ => (path.clone(), "latest".to_string()),
    };
    let repository = if registry == DOCKER_HUB && !repo.contains('/') {
        format!("library/{repo}")
    } else {
        repo
    };
    ImageName {
        registry,
        repository,
        tag,
    }
}

/// The content digest of a local image that goes into the run keys: the manifest digest the
/// registry of `name` gave it (what a registry look-up answers before the pull, so a run's key is
/// the same before and after it), else any registry's manifest digest, else the image id.
pub fn local_digest(name: &ImageName, id: &str, repo_digests: &[String]) -> String {
    let digest_of = |r: &String| r.rsplit_once('@').map(|(_, d)| d.to_string());
    let own = repo_digests.iter().find(|r| {
        r.rsplit_once('@').is_some_and(|(repo, _)| {
            let n = parse_image_name(repo);
            n.repository == name.repository
                && (n.registry == name.registry || n.api_host() == name.api_host())
        })
    });
    own.or_else(|| repo_digests.first())
        .and_then(digest_of)
        .unwrap_or_else(|| id.to_string())
}

/// What planning knows of a prebuilt image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "where", rename_all = "snake_case")]
pub enum PrebuiltLookup {
    /// The engine has it.
    Local { digest: String },
    /// Not local; its registry has it (the manifest digest, when the registry said).
    Remote { digest: Option<String> },
    /// Not local, and its registry does not have it.
    Missing,
    /// Not local, and its registry could not be asked (why).
    Unreachable { message: String },
    /// Not looked up (a dry run without the engine).
    Unknown,
}

/// What planning knows of each prebuilt image, by reference.
pub type PrebuiltInventory = BTreeMap<String, PrebuiltLookup>;

/// An instance's prebuilt image, as planned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrebuiltImage {
    pub reference: String,
    /// The content digest the run keys hold (`None`: not known at planning, a dry run without
    /// the engine).
    pub digest: Option<String>,
    /// Not local: it is pulled before the first run.
    pub pull: bool,
}

impl PrebuiltImage {
    /// What the run keys hold instead of the instance image key.
    pub fn key_identity(&self) -> String {
        format!(
            "prebuilt@{}",
            self.digest.as_deref().unwrap_or("unresolved")
        )
    }
}

/// Why an instance has no usable prebuilt image at planning time (a plan skip).
pub fn unavailable_text(reference: &str, lookup: &PrebuiltLookup) -> Option<String> {
    let name = parse_image_name(reference);
    match lookup {
        PrebuiltLookup::Missing => Some(format!(
            "prebuilt image {reference} is neither local nor in registry {}",
            name.registry
        )),
        PrebuiltLookup::Unreachable { message } => Some(format!(
            "prebuilt image {reference}: registry {} could not be asked: {message}",
            name.registry
        )),
        _ => None,
    }
}

/// The layout check, run with bash in the image. It prints one `swtbench-layout:` line with its
/// verdict (and a few lines of the failing command's output after it).
pub const LAYOUT_SCRIPT: &str = r#"
if [ ! -f /opt/miniconda3/bin/activate ]; then echo "swtbench-layout: no-activate"; exit 0; fi
if ! out=$( { source /opt/miniconda3/bin/activate && conda activate testbed; } 2>&1 ); then
  echo "swtbench-layout: activate-failed"; printf '%s\n' "$out" | tail -n 5; exit 0
fi
if [ ! -d /testbed ]; then echo "swtbench-layout: no-testbed"; exit 0; fi
if ! head=$(git -C /testbed rev-parse HEAD 2>&1); then
  echo "swtbench-layout: not-git"; printf '%s\n' "$head" | tail -n 3; exit 0
fi
echo "swtbench-layout: head $head"
"#;

/// What the layout check found wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutProblem {
    #[error("/opt/miniconda3/bin/activate does not exist")]
    NoActivate,
    #[error("`source /opt/miniconda3/bin/activate && conda activate testbed` failed: {0}")]
    ActivateFailed(String),
    #[error("/testbed does not exist")]
    NoTestbed,
    #[error("/testbed is not a git repository: {0}")]
    NotGit(String),
    #[error("/testbed is at commit {found}, the instance's base_commit is {expected}")]
    WrongCommit { found: String, expected: String },
    #[error("the check did not run as expected (exit code {exit_code:?}): {output}")]
    Unexpected {
        exit_code: Option<i64>,
        output: String,
    },
}

/// The verdict of [`LAYOUT_SCRIPT`]'s output for an instance at `base_commit`.
pub fn layout_verdict(
    exit_code: Option<i64>,
    output: &str,
    base_commit: &str,
) -> Result<(), LayoutProblem> {
    let mut lines = output.lines();
    let verdict = lines
        .by_ref()
        .find_map(|l| l.trim().strip_prefix("swtbench-layout: "));
    let rest = lines.map(str::trim).collect::<Vec<_>>().join("; ");
    match verdict {
        Some("no-activate") => Err(LayoutProblem::NoActivate),
        Some("activate-failed") => Err(LayoutProblem::ActivateFailed(rest)),
        Some("no-testbed") => Err(LayoutProblem::NoTestbed),
        Some("not-git") => Err(LayoutProblem::NotGit(rest)),
        Some(v) if v.starts_with("head ") => {
            let found = v["head ".len()..].trim();
            if found == base_commit {
                Ok(())
            } else {
                Err(LayoutProblem::WrongCommit {
                    found: found.to_string(),
                    expected: base_commit.to_string(),
                })
            }
        }
        _ => Err(LayoutProblem::Unexpected {
            exit_code,
            output: output.trim().chars().take(400).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_put_in_the_id_lower_cased_and_in_docker_hubs_spelling() {
        let t = "docker.io/swebench/sweb.eval.x86_64.{id_1776}:latest";
        assert_eq!(
            render_template(t, "django__django-11099"),
            "docker.io/swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
        );
        assert_eq!(
            render_template("ghcr.io/x/{id}:v", "Org__Repo-1"),
            "ghcr.io/x/org__repo-1:v"
        );
    }

    #[test]
    fn a_source_is_a_template_with_known_placeholders_or_the_dataset() {
        assert_eq!(parse_source("dataset"), Ok(PrebuiltSource::Dataset));
        assert!(matches!(
            parse_source("r/{id}:x"),
            Ok(PrebuiltSource::Template(_))
        ));
        assert!(matches!(
            parse_source("r/{name}"),
            Err(TemplateError::UnknownPlaceholder { placeholder, .. }) if placeholder == "{name}"
        ));
        assert!(matches!(
            parse_source("r/img:latest"),
            Err(TemplateError::NoPlaceholder { .. })
        ));
        assert!(matches!(
            parse_source("r/{id"),
            Err(TemplateError::Unclosed { .. })
        ));
    }

    #[test]
    fn image_names_split_as_docker_splits_them() {
        let n = parse_image_name("swebench/sweb.eval.x86_64.a_1776_b-1:latest");
        assert_eq!(n.registry, "docker.io");
        assert_eq!(n.repository, "swebench/sweb.eval.x86_64.a_1776_b-1");
        assert_eq!(n.api_host(), "registry-1.docker.io");
        let n = parse_image_name("127.0.0.1:5000/swebench/x");
        assert_eq!(
            (n.registry.as_str(), n.repository.as_str(), n.tag.as_str()),
            ("127.0.0.1:5000", "swebench/x", "latest")
        );
        assert_eq!(parse_image_name("ubuntu").repository, "library/ubuntu");
    }

    #[test]
    fn the_digest_is_the_own_registrys_manifest_digest_else_the_id() {
        let name = parse_image_name("127.0.0.1:5000/swebench/x:latest");
        let digests = vec![
            "other.io/y@sha256:aaa".to_string(),
            "127.0.0.1:5000/swebench/x@sha256:bbb".to_string(),
        ];
        assert_eq!(local_digest(&name, "sha256:id", &digests), "sha256:bbb");
        assert_eq!(
            local_digest(&name, "sha256:id", &digests[..1]),
            "sha256:aaa"
        );
        assert_eq!(local_digest(&name, "sha256:id", &[]), "sha256:id");
    }

    #[test]
    fn the_layout_verdict_names_what_failed() {
        let c = "abc123";
        assert_eq!(
            layout_verdict(Some(0), "swtbench-layout: head abc123\n", c),
            Ok(())
        );
        assert_eq!(
            layout_verdict(Some(0), "swtbench-layout: head def456\n", c),
            Err(LayoutProblem::WrongCommit {
                found: "def456".into(),
                expected: c.into()
            })
        );
        assert_eq!(
            layout_verdict(Some(0), "swtbench-layout: no-activate\n", c),
            Err(LayoutProblem::NoActivate)
        );
        assert_eq!(
            layout_verdict(
                Some(0),
                "swtbench-layout: activate-failed\nEnvironmentNameNotFound: testbed\n",
                c
            ),
            Err(LayoutProblem::ActivateFailed(
                "EnvironmentNameNotFound: testbed".into()
            ))
        );
        assert!(matches!(
            layout_verdict(Some(127), "bash: not found", c),
            Err(LayoutProblem::Unexpected {
                exit_code: Some(127),
                ..
            })
        ));
    }

    fn row(extra: serde_json::Map<String, serde_json::Value>) -> Instance {
        Instance {
            instance_id: "a__b-1".into(),
            repo: "a/b".into(),
            version: "1".into(),
            base_commit: "abc".into(),
            environment_setup_commit: "abc".into(),
            golden_code_patch: String::new(),
            golden_test_patch: String::new(),
            fail_to_pass: Vec::new(),
            pass_to_pass: Vec::new(),
            extra,
        }
    }

    #[test]
    fn the_dataset_row_names_the_image_in_one_of_its_columns() {
        let mut extra = serde_json::Map::new();
        extra.insert("docker_image".into(), "reg.io/a/b:1".into());
        let instance = row(extra);
        assert_eq!(dataset_image(&instance).as_deref(), Some("reg.io/a/b:1"));
        assert_eq!(
            reference_for(&PrebuiltSource::Dataset, &instance).as_deref(),
            Some("reg.io/a/b:1")
        );
        let plain = row(serde_json::Map::new());
        assert_eq!(reference_for(&PrebuiltSource::Dataset, &plain), None);
    }
}
