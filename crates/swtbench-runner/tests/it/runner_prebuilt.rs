//! The plan with prebuilt instance images (`--instance-image`): nothing is built for such an
//! instance, its scripts activate conda as SWE-bench's images want, its run keys hold the image's
//! digest, and an image that is neither local nor in its registry skips the instance with why.
//! Against the recording fake engine: an image at another commit and an image that cannot be
//! pulled fail their instances with what went wrong, nothing runs, no container is left.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;
use swtbench_core::{Instance, InstanceId, PatchLayout, Prediction};
use swtbench_plan::plan::{ImageAction, InstanceAction, MemoryOutputs, SkipCause};
use swtbench_plan::prebuilt::{
    PrebuiltInventory, PrebuiltLookup, PrebuiltSettings, PrebuiltSource,
};
use swtbench_plan::{plan, Plan, PlanInput, RunSettings};
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

struct Setup {
    instances: Vec<Instance>,
    predictions: BTreeMap<InstanceId, Prediction>,
    settings: RunSettings,
    _dir: tempfile::TempDir,
}

fn make_plan(prebuilt: &PrebuiltInventory) -> Plan {
    plan_of(&setup(), prebuilt)
}

fn setup() -> Setup {
    let instances = vec![
        instance("acme__calc-1"),
        instance("acme__calc-2"),
        instance("acme__calc-3"),
    ];
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
    Setup {
        instances,
        predictions,
        settings,
        _dir: dir,
    }
}

fn plan_of(s: &Setup, prebuilt: &PrebuiltInventory) -> Plan {
    let (instances, predictions, settings) = (&s.instances, &s.predictions, &s.settings);
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
    // No image is local, not even the spec's base image: a prebuilt instance needs none.
    let images = BTreeMap::new();
    plan(
        &PlanInput {
            settings,
            model: "org/model",
            instances,
            predictions,
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

#[tokio::test]
async fn an_image_at_another_commit_or_one_that_cannot_be_pulled_fails_its_instance() {
    use swtbench_backend::{FakeBackend, FakeCall, FakeExec};
    use swtbench_plan::prebuilt::LayoutProblem;
    use swtbench_runner::events::{InstanceOutcome, RecordingSink};
    use swtbench_runner::outcome::PrebuiltError;
    use swtbench_runner::outcome::{ImageError, InstanceError};

    let fake = std::sync::Arc::new(FakeBackend::new());
    let present = reference("acme_1776_calc-1");
    fake.add_image(&present, BTreeMap::new());
    // The layout check finds /testbed at another commit.
    fake.on_exec(
        "swtbench-layout",
        FakeExec::ok("swtbench-layout: head ffffffffffffffffffffffffffffffffffffffff\n"),
    );
    let s = setup();
    let mut settings = s.settings.clone();
    settings.images.prebuilt = Some(PrebuiltSettings {
        source: PrebuiltSource::Template(format!("{REG}/sweb.eval.x86_64.{{id_1776}}:latest")),
        auth: BTreeMap::new(),
    });
    let s = Setup { settings, ..s };
    let mut inv = inventory("sha256:fake");
    // The fake engine names its image by id only: its digest is its id.
    let id = fake
        .images()
        .into_iter()
        .find(|i| i.tags.contains(&present))
        .unwrap()
        .id;
    inv.insert(present.clone(), PrebuiltLookup::Local { digest: id });
    let plan = plan_of(&s, &inv);
    let eval = swtbench_runner::Evaluation {
        settings: s.settings.clone(),
        plan,
        instances: s
            .instances
            .iter()
            .map(|i| (i.instance_id.to_string(), i.clone()))
            .collect(),
        images: BTreeMap::new(),
        tracer: None,
        submitted_ids: s.predictions.keys().map(|k| k.to_string()).collect(),
        network: swtbench_backend::BuildNetwork::none(),
        shard_outcomes: None,
    };
    let sink = std::sync::Arc::new(RecordingSink::default());
    let out = swtbench_runner::run(fake.clone(), eval, sink, swtbench_runner::Cancel::new()).await;
    let outcome = |id: &str| {
        out.results
            .iter()
            .find(|r| r.instance_id == id)
            .unwrap()
            .outcome
            .clone()
    };
    match outcome("acme__calc-1") {
        InstanceOutcome::Error {
            reason:
                reason @ InstanceError::Images(ImageError::Prebuilt(PrebuiltError::Layout {
                    problem: LayoutProblem::WrongCommit { .. },
                    ..
                })),
        } => assert!(
            reason.to_string().contains(
                "/testbed is at commit ffffffffffffffffffffffffffffffffffffffff, the instance's \
                 base_commit is 0123456789abcdef0123456789abcdef01234567"
            ),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    match outcome("acme__calc-2") {
        InstanceOutcome::Error {
            reason: reason @ InstanceError::Images(ImageError::Prebuilt(PrebuiltError::Pull { .. })),
        } => assert!(
            reason.to_string().starts_with(&format!(
                "prebuilt image {} could not be pulled",
                reference("acme_1776_calc-2")
            )),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    // One container, the layout check's: labelled, given the script, removed; nothing else ran.
    let calls = fake.calls();
    let created: Vec<&FakeCall> = calls
        .iter()
        .filter(|c| matches!(c, FakeCall::ContainerCreate { .. }))
        .collect();
    assert_eq!(created.len(), 1, "{calls:?}");
    let FakeCall::ContainerCreate { id, spec } = created[0] else {
        unreachable!()
    };
    assert_eq!(spec.image, present);
    assert_eq!(
        spec.labels.get("swtbench.run").map(String::as_str),
        Some("layout_check")
    );
    assert_eq!(
        spec.labels.get("swtbench.run_id").map(String::as_str),
        Some("r1")
    );
    let execs: Vec<&FakeCall> = calls
        .iter()
        .filter(|c| matches!(c, FakeCall::Exec { .. }))
        .collect();
    assert_eq!(execs.len(), 1, "only the layout check: {execs:?}");
    // Removed by the check itself, not by the clean-up sweep at the end of the run.
    let exec_at = calls
        .iter()
        .position(|c| matches!(c, FakeCall::Exec { .. }))
        .unwrap();
    let next = calls[exec_at + 1..].iter().find(|c| {
        matches!(
            c,
            FakeCall::ContainerRemove { .. } | FakeCall::ContainersWithLabel { .. }
        )
    });
    assert!(
        matches!(next, Some(FakeCall::ContainerRemove { id: r }) if r == id),
        "{calls:?}"
    );
    assert!(fake.containers().is_empty(), "no container is left");
    assert!(
        out.results.iter().all(|r| r.report.is_none()),
        "nothing is graded"
    );
}
