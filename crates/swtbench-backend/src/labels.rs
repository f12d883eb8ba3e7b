//! Label keys carried by every image and container swtbench creates, and label filters for finding
//! them again (cleanup after Ctrl-C, `swtbench clean --run-id R`).
//!
//! Only names and filter values live here; no engine calls.

use std::collections::BTreeMap;

/// Present (value `true`) on everything swtbench creates.
pub const MANAGED: &str = "swtbench.managed";
/// The run id (`--run-id`) a container or temporary image belongs to.
pub const RUN_ID: &str = "swtbench.run_id";
/// The instance a container runs.
pub const INSTANCE_ID: &str = "swtbench.instance_id";
/// Which of the six runs (`pred_pre`, `gold_post`, …) a container executes.
pub const RUN: &str = "swtbench.run";
/// The process that created a container (`<host>/<pid>/<start time>`, see
/// `swtbench_core::owner`), so that a process removes only its own containers and the leftovers
/// of dead ones, never those of another live process. Every container swtbench creates carries
/// it (the Docker backend adds its connection's owner), and so does the isolated network; an
/// image never does (a commit build sets it to the empty value, which names no owner).
pub const SESSION: &str = "swtbench.session";
/// What kind of image this is: `base`, `env`, `instance`, or a test's own kind.
pub const KIND: &str = "swtbench.kind";
/// The tag swtbench gave an image it built. Labels are inherited: an image a user builds `FROM`
/// one of swtbench's carries all of the above, so only an image that still has the tag this label
/// names is swtbench's own (see [`owned_tag`]).
pub const IMAGE: &str = "swtbench.image";

/// The name of every commit build's container starts with this (the container's [`IMAGE`] label
/// names the image it builds).
pub const BUILD_CONTAINER_PREFIX: &str = "swtbench-build-";

/// The tag of an image swtbench made, when it still carries it: the image's [`IMAGE`] label, when
/// that is one of `tags`. `None` for an image swtbench did not make, such as one built `FROM`
/// swtbench's (it inherits the label but has tags of its own), and for images made before the
/// label existed (see the caller's fallback).
pub fn owned_tag(labels: &BTreeMap<String, String>, tags: &[String]) -> Option<String> {
    let want = normal_ref(labels.get(IMAGE)?);
    tags.iter().find(|t| normal_ref(t) == want).cloned()
}

/// An image reference as engines may spell it: `name` is `name:latest`, and Podman lists local
/// images as `localhost/name`, Docker Hub's as `docker.io/library/name`.
fn normal_ref(r: &str) -> String {
    let r = r
        .strip_prefix("localhost/")
        .or_else(|| r.strip_prefix("docker.io/library/"))
        .unwrap_or(r);
    if r.rsplit('/').next().is_some_and(|last| last.contains(':')) {
        r.to_string()
    } else {
        format!("{r}:latest")
    }
}

/// The labels of a run container: managed + run id + instance id + run.
pub fn run_labels(run_id: &str, instance_id: &str, run: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED.to_string(), "true".to_string()),
        (RUN_ID.to_string(), run_id.to_string()),
        (INSTANCE_ID.to_string(), instance_id.to_string()),
        (RUN.to_string(), run.to_string()),
    ])
}

/// A conjunction of label conditions: every condition must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelFilter {
    conditions: Vec<(String, Option<String>)>,
}

impl LabelFilter {
    /// Everything carrying `key=value`.
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Self {
        LabelFilter::default().and(key, value)
    }

    /// Everything swtbench created.
    pub fn managed() -> Self {
        LabelFilter::new(MANAGED, "true")
    }

    /// Everything belonging to one run id.
    pub fn run_id(run_id: &str) -> Self {
        LabelFilter::new(RUN_ID, run_id)
    }

    /// Also require `key=value`.
    pub fn and(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.conditions.push((key.into(), Some(value.into())));
        self
    }

    /// Also require that `key` is present, whatever its value.
    pub fn and_present(mut self, key: impl Into<String>) -> Self {
        self.conditions.push((key.into(), None));
        self
    }

    /// The filter values in the engine's `label=` syntax (`key` or `key=value`).
    pub fn to_engine_filters(&self) -> Vec<String> {
        self.conditions
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{k}={v}"),
                None => k.clone(),
            })
            .collect()
    }

    /// Whether a label set satisfies every condition (used by the fake engine).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.conditions
            .iter()
            .all(|(k, v)| match (labels.get(k), v) {
                (Some(actual), Some(expected)) => actual == expected,
                (Some(_), None) => true,
                (None, _) => false,
            })
    }

    /// True when there is no condition at all (which would match everything on the engine).
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_is_owned_only_while_it_carries_the_tag_its_label_names() {
        let labels = BTreeMap::from([
            (KIND.to_string(), "base".to_string()),
            (IMAGE.to_string(), "exec.base.x86_64:latest".to_string()),
        ]);
        let tags = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            owned_tag(&labels, &tags(&["other:1", "exec.base.x86_64:latest"])),
            Some("exec.base.x86_64:latest".into())
        );
        // Built FROM it by a user: the label came along, the tag did not.
        assert_eq!(owned_tag(&labels, &tags(&["mybase:1"])), None);
        assert_eq!(owned_tag(&labels, &[]), None);
        let mut bare = labels.clone();
        bare.insert(IMAGE.into(), "127.0.0.1:5000/fixture".into());
        assert_eq!(
            owned_tag(&bare, &tags(&["127.0.0.1:5000/fixture:latest"])),
            Some("127.0.0.1:5000/fixture:latest".into())
        );
        // Podman lists a local `exec.base.x86_64:latest` as `localhost/exec.base.x86_64:latest`.
        assert_eq!(
            owned_tag(&labels, &tags(&["localhost/exec.base.x86_64:latest"])),
            Some("localhost/exec.base.x86_64:latest".into())
        );
        let mut none = labels;
        none.remove(IMAGE);
        assert_eq!(owned_tag(&none, &tags(&["exec.base.x86_64:latest"])), None);
    }

    #[test]
    fn filters_render_in_engine_syntax_and_match_like_the_engine() {
        let f = LabelFilter::run_id("r1")
            .and(RUN, "gold_pre")
            .and_present(INSTANCE_ID);
        assert_eq!(
            f.to_engine_filters(),
            vec![
                "swtbench.run_id=r1",
                "swtbench.run=gold_pre",
                "swtbench.instance_id"
            ]
        );
        let mut labels = run_labels("r1", "a__b-1", "gold_pre");
        assert!(f.matches(&labels));
        labels.insert(RUN.into(), "gold_post".into());
        assert!(!f.matches(&labels));
        labels.remove(INSTANCE_ID);
        labels.insert(RUN.into(), "gold_pre".into());
        assert!(!f.matches(&labels));
    }
}
