//! The plan with prebuilt instance images (`--instance-image`): nothing is built for such an
//! instance, its scripts activate conda as SWE-bench's images want, its run keys hold the image's
//! digest, and an image that is neither local nor in its registry skips the instance with why.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;
use swtbench_core::{Instance, InstanceId, PatchLayout, Prediction};
use swtbench_runner::plan::{ImageAction, InstanceAction, MemoryOutputs, SkipCause};
use swtbench_runner::prebuilt::{
    PrebuiltInventory, PrebuiltLookup, PrebuiltSettings, PrebuiltSource,
};
use swtbench_runner::{plan, Plan, PlanInput, RunSettings};
use swtbench_spec::{Arch, ExecSpec, SpecTable, TableSyntax};

const TABLE: &str = r#"
[repos."acme/calc"]
test_command = "pytest -rA"
log_parser = "pytest"
[[repos."acme/calc".specs]]
versions = ["1.0"]
provider = "venv"
base_image = "acme-base:1"
install = "python -m pip install -e ."
"#;

const CODE: &str = "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1,2 +1,2 @@\n def sub(a, b):\n-    return a + b\n+    return a - b\n";
const TESTS: &str = "diff --git a/tests/test_ops.py b/tests/test_ops.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_ops.py\n@@ -0,0 +1,2 @@\n+def test_sub():\n+    assert sub(3, 1) == 2\n";

const REG: &str = "127.0.0.1:5000/swebench";

fn instance(id: &str) -> Instance {
    Instance::from_row(
        &json!({
            "instance_id": id, "repo": "acme/calc", "version": "1.0",
            "base_commit": "0123456789abcdef0123456789abcdef01234567",
            "patch": CODE, "test_patch": TESTS,
        }),
        PatchLayout::Swebench,
    )
    .unwrap()
}

fn reference(id_1776: &str) -> String {
    format!("{REG}/sweb.eval.x86_64.{id_1776}:latest")
}

fn make_plan(prebuilt: &PrebuiltInventory) -> Plan {
    let instances = vec![
        instance("acme__calc-1"),
        instance("acme__calc-2"),
        instance("acme__calc-3"),
    ];
    let mut t = SpecTable::embedded().clone();
    t.merge(SpecTable::parse(TABLE, "t.toml", TableSyntax::Toml, &|_| Err("no".into())).unwrap());
    let no_files = |_: &str, _: &str, _: &str| Ok(None);
    let specs = instances
        .iter()
        .map(|i| {
            (
                i.instance_id.to_string(),
                ExecSpec::new(i, &t, Arch::X86_64, &no_files),
            )
        })
        .collect();
    let predictions: BTreeMap<InstanceId, Prediction> = instances
        .iter()
        .map(|i| {
            (
                i.instance_id.clone(),
                Prediction {
                    instance_id: i.instance_id.clone(),
                    model_name_or_path: "org/model".into(),
                    model_patch: Some(TESTS.into()),
                },
            )
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let mut settings = RunSettings::new("r1", dir.path());
    settings.eval.coverage = false;
    settings.exec.timeout = Duration::from_secs(20);
    settings.images.prebuilt = Some(PrebuiltSettings {
        source: PrebuiltSource::Template(format!("{REG}/sweb.eval.x86_64.{{id_1776}}:latest")),
        auth: BTreeMap::new(),
    });
    // No image is local, not even the spec's base image: a prebuilt instance needs none.
    let images = BTreeMap::new();
    plan(
        &PlanInput {
            settings: &settings,
            model: "org/model",
            instances: &instances,
            predictions: &predictions,
            specs: &specs,
            table: &t,
            images: &images,
            registry: None,
            prebuilt: Some(prebuilt),
            tracer_sha256: None,
        },
        &MemoryOutputs::default(),
    )
}

fn inventory(first_digest: &str) -> PrebuiltInventory {
    BTreeMap::from([
        (
            reference("acme_1776_calc-1"),
            PrebuiltLookup::Local {
                digest: first_digest.into(),
            },
        ),
        (
            reference("acme_1776_calc-2"),
            PrebuiltLookup::Remote {
                digest: Some("sha256:bbb".into()),
            },
        ),
        (reference("acme_1776_calc-3"), PrebuiltLookup::Missing),
    ])
}

#[test]
fn prebuilt_instances_build_nothing_and_key_their_runs_on_the_digest() {
    let p = make_plan(&inventory("sha256:aaa"));
    let one = p.instance("acme__calc-1").unwrap();
    assert_eq!(one.action, InstanceAction::Evaluate);
    assert!(one.images.is_none(), "no image chain");
    let pre = one.prebuilt.as_ref().unwrap();
    assert_eq!(pre.reference, reference("acme_1776_calc-1"));
    assert!(!pre.pull);
    assert_eq!(one.runs.len(), 6);
    for r in &one.runs {
        assert_eq!(r.key_inputs.instance_image, "prebuilt@sha256:aaa");
    }
    let spec = one.spec.as_ref().unwrap();
    assert_eq!(spec.provider(), swtbench_spec::Provider::Conda);

    let two = p.instance("acme__calc-2").unwrap();
    assert!(two.prebuilt.as_ref().unwrap().pull);
    assert_eq!(two.runs[0].key_inputs.instance_image, "prebuilt@sha256:bbb");

    let three = p.instance("acme__calc-3").unwrap();
    match &three.action {
        InstanceAction::Skip {
            cause: SkipCause::Prebuilt(why),
        } => assert!(
            why.contains(&reference("acme_1776_calc-3"))
                && why.contains("neither local nor in registry 127.0.0.1:5000"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }

    // Only the prebuilt images, nothing to build.
    let actions: Vec<(&str, &ImageAction)> = p
        .images
        .iter()
        .map(|i| (i.tag.as_str(), &i.action))
        .collect();
    assert_eq!(
        actions,
        vec![
            (
                reference("acme_1776_calc-1").as_str(),
                &ImageAction::Prebuilt("present".into())
            ),
            (
                reference("acme_1776_calc-2").as_str(),
                &ImageAction::Prebuilt("pull".into())
            ),
        ]
    );
    assert_eq!(p.counts.images_build, 0);
    assert_eq!(p.counts.images_prebuilt, 2);
    assert_eq!(p.counts.images_prebuilt_pull, 1);
    let text = p.to_text();
    assert!(text.contains("1 skipped"), "{text}");
    assert!(text.contains("2 prebuilt (1 to pull)"), "{text}");

    // Another digest under the same name: other keys, so the runs are made again.
    let moved = make_plan(&inventory("sha256:ccc"));
    let (a, b) = (
        &one.runs[0].key,
        &moved.instance("acme__calc-1").unwrap().runs[0].key,
    );
    assert_ne!(a, b);
}
