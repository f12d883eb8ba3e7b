//! The planner and the runner against the recording fake engine: what is planned, which
//! containers are made (labels, no network, init), what lands on disk, resume, timeouts, image
//! cache levels, build failures and cancellation. The real engine is exercised by the binary's
//! `engine_*` tests.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use swtbench_backend::{FakeBackend, FakeCall, FakeExec, NetworkAccess};
use swtbench_core::{Instance, InstanceId, PatchLayout, Prediction, RunKind};
use swtbench_plan::plan::{
    ExistingOutput, ImageAction, InstanceAction, MemoryOutputs, OutputLookup, RunAction, SkipCause,
};
use swtbench_plan::{plan, CacheLevel, Plan, PlanInput, RunSettings};
use swtbench_runner::events::{CancelReason, Event, InstanceOutcome, RecordingSink};
use swtbench_runner::images::image_inventory;
use swtbench_runner::outcome::{AbortReason, ImageError, InstanceError};
use swtbench_runner::DiskOutputs;
use swtbench_runner::{Cancel, Evaluation};
use swtbench_spec::{Arch, ExecSpec, SpecError, SpecTable, TableSyntax};

const TABLE: &str = r#"
[repos."acme/calc"]
test_command = "pytest -rA"
log_parser = "pytest"
[[repos."acme/calc".specs]]
versions = ["1.0"]
provider = "venv"
base_image = "acme-base:1"
install = "python -m pip install -e ."

[repos."acme/noparser"]
test_command = "pytest -rA"
[[repos."acme/noparser".specs]]
versions = ["1.0"]
provider = "venv"
base_image = "acme-base:1"
"#;

const CODE: &str = "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1,2 +1,2 @@\n def sub(a, b):\n-    return a + b\n+    return a - b\n";
const GOLD_TESTS: &str = "diff --git a/tests/test_ops.py b/tests/test_ops.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_ops.py\n@@ -0,0 +1,2 @@\n+def test_sub():\n+    assert sub(3, 1) == 2\n";
const MODEL_TESTS: &str = "diff --git a/tests/test_model.py b/tests/test_model.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_model.py\n@@ -0,0 +1,2 @@\n+def test_model_sub():\n+    assert sub(5, 2) == 3\n";

fn instance(id: &str, repo: &str, version: &str) -> Instance {
    Instance::from_row(
        &json!({
            "instance_id": id, "repo": repo, "version": version,
            "base_commit": "0123456789abcdef0123456789abcdef01234567",
            "patch": CODE, "test_patch": GOLD_TESTS,
        }),
        PatchLayout::Swebench,
    )
    .unwrap()
}

fn table() -> SpecTable {
    let mut t = SpecTable::embedded().clone();
    t.merge(SpecTable::parse(TABLE, "t.toml", TableSyntax::Toml, &|_| Err("no".into())).unwrap());
    t
}

fn specs(instances: &[Instance], t: &SpecTable) -> BTreeMap<String, Result<ExecSpec, SpecError>> {
    let no_files = |_: &str, _: &str, _: &str| Ok(None);
    instances
        .iter()
        .map(|i| {
            (
                i.instance_id.to_string(),
                ExecSpec::new(i, t, Arch::X86_64, &no_files),
            )
        })
        .collect()
}

fn prediction(id: &str, patch: Option<&str>) -> (InstanceId, Prediction) {
    (
        InstanceId::from(id),
        Prediction {
            instance_id: InstanceId::from(id),
            model_name_or_path: "org/model".into(),
            model_patch: patch.map(str::to_string),
        },
    )
}

fn settings(dir: &Path) -> RunSettings {
    let mut s = RunSettings::new("r1", dir);
    s.eval.coverage = false;
    s.exec.timeout = Duration::from_secs(20);
    // The fake runs no Python: the evidence hook's step would only be one more exec that the
    // tests' scripted answers (hangs, deaths) would have to tell apart. The engine tests
    // (engine_evidence) cover it.
    s.exec.evidence = false;
    s.max_workers = 2;
    s
}

struct Setup {
    instances: Vec<Instance>,
    predictions: BTreeMap<InstanceId, Prediction>,
    table: SpecTable,
}

fn setup() -> Setup {
    let instances = vec![
        instance("acme__calc-1", "acme/calc", "1.0"),
        instance("acme__calc-2", "acme/calc", "1.0"),
        instance("acme__calc-3", "acme/calc", "1.0"),
        instance("acme__calc-4", "acme/calc", "9.9"),
        instance("acme__noparser-1", "acme/noparser", "1.0"),
        instance("acme__calc-5", "acme/calc", "1.0"),
    ];
    let predictions = BTreeMap::from([
        prediction("acme__calc-1", Some(MODEL_TESTS)),
        prediction("acme__calc-2", Some(GOLD_TESTS)),
        prediction("acme__calc-3", Some("  \n")),
        prediction("acme__calc-4", Some(MODEL_TESTS)),
        prediction("acme__noparser-1", Some(MODEL_TESTS)),
    ]);
    Setup {
        instances,
        predictions,
        table: table(),
    }
}

fn make_plan(
    s: &Setup,
    settings: &RunSettings,
    images: &swtbench_plan::plan::ImageInventory,
    outputs: &dyn swtbench_plan::plan::OutputLookup,
) -> Plan {
    let specs = specs(&s.instances, &s.table);
    plan(
        &PlanInput {
            settings,
            model: "org/model",
            instances: &s.instances,
            predictions: &s.predictions,
            specs: &specs,
            table: &s.table,
            images,
            registry: None,
            prebuilt: None,
            tracer_sha256: None,
        },
        outputs,
    )
}

/// The fake answers eval scripts like pytest would: the model's and the gold tests fail before
/// the gold fix and pass after it.
fn pytest_like(fake: &FakeBackend) {
    pytest_like_taking(fake, |_, _| Duration::ZERO);
}

/// [`pytest_like`], the eval script of each run taking `takes(instance, run)` on the tokio clock.
fn pytest_like_taking(
    fake: &FakeBackend,
    takes: impl Fn(&str, &str) -> Duration + Send + Sync + 'static,
) {
    fake.on_exec_with(move |ctx| {
        let script = ctx.file_text("/eval.sh")?;
        let label = |name: &str| {
            ctx.spec
                .labels
                .get(name)
                .map(String::as_str)
                .unwrap_or_default()
        };
        let run = label(swtbench_backend::labels::RUN);
        let duration = if ctx.command_line().contains("eval.sh") {
            takes(label(swtbench_backend::labels::INSTANCE_ID), run)
        } else {
            Duration::ZERO
        };
        let post = script.contains("+    return a - b");
        let mut out = String::from("+ git apply -v -\n");
        let status = if post { "PASSED" } else { "FAILED" };
        if script.contains("+def test_model_sub") {
            out.push_str("Applied patch tests/test_model.py cleanly.\n");
            out.push_str(&format!("{status} tests/test_model.py::test_model_sub\n"));
        } else if script.contains("+def test_sub") {
            out.push_str("Applied patch tests/test_ops.py cleanly.\n");
            out.push_str(&format!("{status} tests/test_ops.py::test_sub\n"));
        } else {
            out.push_str("ERROR: file or directory not found: tests/test_model.py\n");
        }
        Some(FakeExec::exit(i64::from(!post), out).taking(duration))
    });
}

fn fake_engine() -> Arc<FakeBackend> {
    let fake = Arc::new(FakeBackend::new());
    fake.add_image("acme-base:1", BTreeMap::new());
    pytest_like(&fake);
    fake
}

async fn evaluation(fake: &FakeBackend, s: &Setup, settings: &RunSettings) -> Evaluation {
    let specs = specs(&s.instances, &s.table);
    let tags: Vec<String> = specs
        .values()
        .filter_map(|x| x.as_ref().ok())
        .flat_map(|x| {
            [
                x.keys.base.clone(),
                x.keys.env.clone(),
                x.keys.instance.clone(),
            ]
        })
        .collect();
    let images = image_inventory(fake, tags).await.unwrap();
    let plan = make_plan(s, settings, &images, &DiskOutputs);
    Evaluation {
        settings: settings.clone(),
        plan,
        instances: s
            .instances
            .iter()
            .map(|i| (i.instance_id.to_string(), i.clone()))
            .collect(),
        images,
        tracer: None,
        submitted_ids: s.predictions.keys().map(|k| k.to_string()).collect(),
        network: swtbench_backend::BuildNetwork::none(),
        shard_outcomes: None,
    }
}

/// Plans `settings` against the fake engine and runs it to the end.
async fn run_to_end(
    fake: &Arc<FakeBackend>,
    s: &Setup,
    settings: &RunSettings,
    sink: &Arc<RecordingSink>,
) -> swtbench_runner::RunOutput {
    let eval = evaluation(fake, s, settings).await;
    swtbench_runner::run(fake.clone(), eval, sink.clone(), Cancel::new()).await
}

/// The local base image the table's specs build on, as the engine has it.
fn base_image_inventory() -> swtbench_plan::plan::ImageInventory {
    BTreeMap::from([(
        "acme-base:1".to_string(),
        Some(swtbench_plan::plan::ExistingImage {
            id: "sha256:base".into(),
            created_unix: 1,
            labels: BTreeMap::new(),
        }),
    )])
}

#[test]
fn the_plan_says_what_runs_what_is_reused_and_why_instances_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let s = setup();
    let st = settings(dir.path());
    let images = base_image_inventory();
    let p = make_plan(&s, &st, &images, &MemoryOutputs::default());
    let action = |id: &str| p.instance(id).unwrap().action.clone();
    assert_eq!(action("acme__calc-1"), InstanceAction::Evaluate);
    assert_eq!(action("acme__calc-3"), InstanceAction::EmptyPatch);
    assert!(matches!(
        action("acme__calc-4"),
        InstanceAction::Skip { cause: SkipCause::Spec(e) } if e.to_string().contains("9.9")
    ));
    assert!(matches!(
        action("acme__noparser-1"),
        InstanceAction::Skip {
            cause: SkipCause::NoParser(_)
        }
    ));
    // No prediction: listed, but not part of the run.
    assert!(!p.instance("acme__calc-5").unwrap().in_run());
    assert_eq!(p.counts.instances, 5);

    // calc-1 executes its six runs; calc-2 (the gold tests as prediction) repeats calc-1's gold
    // runs and its own gold runs in its pred runs.
    let runs = |id: &str| p.instance(id).unwrap().runs.clone();
    assert!(runs("acme__calc-1")
        .iter()
        .all(|r| r.action == RunAction::Execute));
    let c2 = runs("acme__calc-2");
    let by = |k: RunKind| c2.iter().find(|r| r.kind == k).unwrap().action.clone();
    assert_eq!(
        by(RunKind::GoldPre),
        RunAction::SameAs {
            instance_id: "acme__calc-1".into(),
            run: RunKind::GoldPre
        }
    );
    assert_eq!(
        by(RunKind::PredPost),
        RunAction::SameAs {
            instance_id: "acme__calc-1".into(),
            run: RunKind::GoldPost
        }
    );
    // Directories follow the original's layout.
    let r = &runs("acme__calc-1")[0];
    assert!(r
        .dir
        .ends_with("run_instance_swt_logs/r1/pred_pre__org__model/acme__calc-1"));
    let base = &runs("acme__calc-1")[4];
    assert!(base
        .dir
        .to_string_lossy()
        .contains("run_instance_swt_logs/base_pre/acme__calc-1/"));
    // The local base image exists, env and instance images must be built.
    assert_eq!(p.counts.images_build, 2);

    // Keyed outputs are reused; unkeyed ones only when asked.
    let mut outputs = MemoryOutputs::default();
    for r in runs("acme__calc-1") {
        outputs
            .runs
            .insert(r.dir.clone(), ExistingOutput::Keyed(r.key.clone()));
    }
    outputs
        .runs
        .insert(runs("acme__calc-2")[4].dir.clone(), ExistingOutput::Unkeyed);
    let p2 = make_plan(&s, &st, &images, &outputs);
    assert!(p2
        .instance("acme__calc-1")
        .unwrap()
        .runs
        .iter()
        .all(|r| r.action == RunAction::Reuse));
    assert!(!p2.instance("acme__calc-1").unwrap().needs_containers());
    assert_eq!(
        p2.instance("acme__calc-2").unwrap().runs[4].action,
        RunAction::Execute
    );
    let mut st2 = st.clone();
    st2.reuse_unkeyed = true;
    let p3 = make_plan(&s, &st2, &images, &outputs);
    assert_eq!(
        p3.instance("acme__calc-2").unwrap().runs[4].action,
        RunAction::ReuseUnkeyed
    );
    // A key from other settings (e.g. coverage on) is not reused.
    let mut cov = st.clone();
    cov.eval.coverage = true;
    let p4 = make_plan(&s, &cov, &images, &outputs);
    assert!(p4
        .instance("acme__calc-1")
        .unwrap()
        .runs
        .iter()
        .all(|r| r.action == RunAction::Execute));

    // The JSON form is versioned and names actions.
    let j: serde_json::Value = serde_json::from_str(&p.to_json()).unwrap();
    assert_eq!(j["format"], 1);
    assert_eq!(j["instances"][0]["status"], "evaluate");
    assert!(p.to_text().contains("acme__calc-3: empty patch"));
}

#[test]
fn the_plan_skips_without_the_base_image_and_rebuilds_images_whose_parent_changed() {
    let dir = tempfile::tempdir().unwrap();
    let s = setup();
    let st = settings(dir.path());
    let images = base_image_inventory();
    // Without the base image (looked up and not found), evaluated instances are skipped with a
    // hint. (Not looked up at all, as in a dry run without the engine, it is not called missing.)
    let missing: BTreeMap<_, _> = images.keys().map(|k| (k.clone(), None)).collect();
    let p5 = make_plan(&s, &st, &missing, &MemoryOutputs::default());
    let unknown = make_plan(&s, &st, &BTreeMap::new(), &MemoryOutputs::default());
    assert!(!matches!(
        unknown.instance("acme__calc-1").unwrap().action,
        InstanceAction::Skip { .. }
    ));
    assert!(matches!(
        p5.instance("acme__calc-1").unwrap().action,
        InstanceAction::Skip {
            cause: SkipCause::BaseImageMissing(_)
        }
    ));
    // An env image built on another version of the local base image is rebuilt, and so is the
    // instance image on top of it.
    let spec = specs(&s.instances, &s.table)
        .remove("acme__calc-1")
        .unwrap()
        .unwrap();
    let mut stale = images.clone();
    let existing = |labels: BTreeMap<String, String>| {
        Some(swtbench_plan::plan::ExistingImage {
            id: "sha256:x".into(),
            created_unix: 2,
            labels,
        })
    };
    stale.insert(
        spec.keys.env.clone(),
        existing(BTreeMap::from([(
            swtbench_plan::plan::BASE_IMAGE_ID_LABEL.to_string(),
            "sha256:old-base".to_string(),
        )])),
    );
    stale.insert(spec.keys.instance.clone(), existing(BTreeMap::new()));
    let p6 = make_plan(&s, &st, &stale, &MemoryOutputs::default());
    let action_of = |tag: &str| {
        p6.images
            .iter()
            .find(|i| i.tag == tag)
            .map(|i| i.action.clone())
            .unwrap()
    };
    assert!(
        matches!(action_of(&spec.keys.env), ImageAction::Rebuild(why) if why.contains("changed"))
    );
    assert!(matches!(
        action_of(&spec.keys.instance),
        ImageAction::Rebuild(_)
    ));
    // The same images with the current base id are reused.
    stale.insert(
        spec.keys.env.clone(),
        existing(BTreeMap::from([(
            swtbench_plan::plan::BASE_IMAGE_ID_LABEL.to_string(),
            "sha256:base".to_string(),
        )])),
    );
    let p7 = make_plan(&s, &st, &stale, &MemoryOutputs::default());
    assert!(p7
        .images
        .iter()
        .filter(|i| i.tag != "acme-base:1")
        .all(|i| i.action == ImageAction::Reuse));
    // An instance image older than its env image (the env was rebuilt by someone else since) is
    // rebuilt, as the builder will: the plan says so, so the build gets its repository mirror.
    let mut newer_env = stale.clone();
    if let Some(Some(env)) = newer_env.get_mut(&spec.keys.env) {
        env.created_unix = 3;
    }
    let p8 = make_plan(&s, &st, &newer_env, &MemoryOutputs::default());
    let inst = p8
        .images
        .iter()
        .find(|i| i.tag == spec.keys.instance)
        .unwrap();
    assert!(
        matches!(&inst.action, ImageAction::Rebuild(why) if why.contains("older than")),
        "{:?}",
        inst.action
    );
}

#[tokio::test]
async fn a_run_executes_in_labelled_offline_containers_grades_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let s = setup();
    let mut st = settings(dir.path());
    st.images.cache_level = CacheLevel::Instance;
    let fake = fake_engine();
    let sink = Arc::new(RecordingSink::default());
    let eval = evaluation(&fake, &s, &st).await;
    let out = swtbench_runner::run(fake.clone(), eval, sink.clone(), Cancel::new()).await;

    let outcome = |id: &str| {
        out.results
            .iter()
            .find(|r| r.instance_id == id)
            .unwrap()
            .outcome
            .clone()
    };
    assert_eq!(outcome("acme__calc-1"), InstanceOutcome::Resolved);
    assert_eq!(outcome("acme__calc-2"), InstanceOutcome::Resolved);
    assert_eq!(outcome("acme__calc-3"), InstanceOutcome::EmptyPatch);
    assert!(matches!(
        outcome("acme__calc-4"),
        InstanceOutcome::Skipped { .. }
    ));
    // 6 runs for calc-1; calc-2 executes only its base runs, the rest is copied.
    assert_eq!(out.stats.runs_executed, 8);
    assert_eq!(out.stats.runs_copied, 4);
    // Every container: the instance image, the network (as the original's), an init, the run's
    // labels; all removed.
    let creates: Vec<_> = fake
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            FakeCall::ContainerCreate { spec, .. } => Some(spec),
            _ => None,
        })
        .collect();
    assert_eq!(creates.len(), 8);
    for c in &creates {
        assert_eq!(c.network, NetworkAccess::Enabled);
        assert!(c.init);
        assert_eq!(c.labels["swtbench.run_id"], "r1");
        assert!(c.image.starts_with("exec.eval.x86_64."));
        assert_eq!(c.user.as_deref(), Some("root"));
    }
    assert!(fake.containers().is_empty(), "no container is left");
    // Each image built once.
    let spec = specs(&s.instances, &s.table)
        .remove("acme__calc-1")
        .unwrap()
        .unwrap();
    assert_eq!(fake.builds_of(&spec.keys.env), 1);
    assert_eq!(fake.builds_of(&spec.keys.instance), 1);
    // Outputs in the original's layout, with keys; the per-run install step is left out.
    let logs = dir.path().join("run_instance_swt_logs");
    let pred_pre = logs.join("r1/pred_pre__org__model/acme__calc-1");
    for f in [
        "eval.sh",
        "exec_spec.json",
        "model_patch.diff",
        "test_output.txt",
        "swtbench_key.json",
    ] {
        assert!(pred_pre.join(f).is_file(), "{f}");
    }
    let eval_sh = std::fs::read_to_string(pred_pre.join("eval.sh")).unwrap();
    assert!(!eval_sh.contains("pip install -e ."), "{eval_sh}");
    let report =
        std::fs::read_to_string(logs.join("r1/org__model/acme__calc-1/report.json")).unwrap();
    assert!(report.contains("\"resolved\": true"));
    assert!(logs
        .join("r1/org__model/acme__calc-3/report.json")
        .is_file());
    let run_report =
        std::fs::read_to_string(dir.path().join("evaluation_results/org__model.r1.json")).unwrap();
    assert!(
        run_report.contains("\"resolved_instances\": 2"),
        "{run_report}"
    );
    assert!(sink
        .events()
        .iter()
        .any(|e| matches!(e, Event::EvaluationFinished { .. })));

    // Again: nothing runs, the reports are the same.
    let calls_before = fake.calls().len();
    let eval = evaluation(&fake, &s, &st).await;
    assert_eq!(eval.plan.counts.runs_execute, 0);
    let again = swtbench_runner::run(fake.clone(), eval, sink, Cancel::new()).await;
    assert_eq!(again.stats.runs_executed, 0);
    let creates_after = fake.count_calls(|c| matches!(c, FakeCall::ContainerCreate { .. }));
    assert_eq!(
        creates_after,
        8,
        "{} calls since",
        fake.calls().len() - calls_before
    );
    assert_eq!(
        std::fs::read_to_string(logs.join("r1/org__model/acme__calc-1/report.json")).unwrap(),
        report
    );
}

#[tokio::test]
async fn a_test_ca_goes_into_every_run_container_and_into_the_run_keys() {
    let dir = tempfile::tempdir().unwrap();
    let s = setup();
    let plain = settings(dir.path());
    let mut st = settings(dir.path());
    st.exec.test_ca = Some(swtbench_plan::settings::TestCa::new(
        b"-----BEGIN CERT".to_vec(),
    ));
    let keys = |st: &RunSettings| -> Vec<String> {
        let p = make_plan(&s, st, &base_image_inventory(), &MemoryOutputs::default());
        p.instances
            .iter()
            .flat_map(|i| i.runs.iter().map(|r| r.key.clone()))
            .collect()
    };
    let (with, without) = (keys(&st), keys(&plain));
    assert!(!with.is_empty());
    assert!(
        with.iter().all(|k| !without.contains(k)),
        "every run's key changes with the bundle"
    );

    let fake = fake_engine();
    let out = run_to_end(&fake, &s, &st, &Arc::new(RecordingSink::default())).await;
    assert!(out.stats.runs_executed > 0);
    let path = swtbench_runner::execute::TEST_CA_PATH;
    let mut created = 0;
    for c in fake.calls() {
        match c {
            FakeCall::ContainerCreate { spec, .. } => {
                created += 1;
                for var in [
                    "SSL_CERT_FILE",
                    "PIP_CERT",
                    "REQUESTS_CA_BUNDLE",
                    "CURL_CA_BUNDLE",
                ] {
                    assert!(
                        spec.env.contains(&(var.to_string(), path.to_string())),
                        "{var}: {:?}",
                        spec.env
                    );
                }
            }
            FakeCall::CopyIn { paths, .. } if paths.iter().any(|p| p == "/eval.sh") => {
                assert!(paths.iter().any(|p| p == path), "{paths:?}");
            }
            _ => {}
        }
    }
    assert_eq!(created, out.stats.runs_executed);
}

#[tokio::test]
async fn a_timeout_keeps_the_output_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = setup();
    s.predictions.retain(|k, _| k.as_str() == "acme__calc-1");
    let st = settings(dir.path());
    let fake = Arc::new(FakeBackend::new());
    fake.add_image("acme-base:1", BTreeMap::new());
    fake.on_exec(
        "eval.sh",
        FakeExec::timeout("Applied patch tests/test_model.py cleanly.\ncollected 1 item\n"),
    );
    let eval = evaluation(&fake, &s, &st).await;
    let out = swtbench_runner::run(
        fake.clone(),
        eval,
        Arc::new(RecordingSink::default()),
        Cancel::new(),
    )
    .await;
    assert_eq!(out.stats.runs_timed_out, 6);
    let r = &out.results[0];
    assert_eq!(r.outcome, InstanceOutcome::Unresolved { applied: true });
    assert!(r
        .reasons
        .iter()
        .any(|x| x.contains("pred_pre timed out after 20 s")));
    let text = std::fs::read_to_string(
        dir.path()
            .join("run_instance_swt_logs/r1/pred_pre__org__model/acme__calc-1/test_output.txt"),
    )
    .unwrap();
    assert!(text.starts_with("Applied patch"));
    assert!(text.contains("[swtbench: the eval script timed out after 20 s"));
    let key: serde_json::Value =
        serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(
                "run_instance_swt_logs/r1/pred_pre__org__model/acme__calc-1/swtbench_key.json",
            ))
            .unwrap(),
        )
        .unwrap();
    assert_eq!(key["result"]["timed_out"], true);
}

#[tokio::test]
async fn the_cache_level_removes_what_the_run_built_above_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = setup();
    s.predictions.retain(|k, _| k.as_str() == "acme__calc-1");
    let spec = specs(&s.instances, &s.table)
        .remove("acme__calc-1")
        .unwrap()
        .unwrap();
    for (level, env_kept, inst_kept) in [
        (CacheLevel::Env, true, false),
        (CacheLevel::None, false, false),
        (CacheLevel::Instance, true, true),
    ] {
        let mut st = settings(dir.path());
        st.run_id = format!("level-{}", level.as_str());
        st.images.cache_level = level;
        let fake = fake_engine();
        let eval = evaluation(&fake, &s, &st).await;
        let out = swtbench_runner::run(
            fake.clone(),
            eval,
            Arc::new(RecordingSink::default()),
            Cancel::new(),
        )
        .await;
        assert_eq!(
            out.results[0].outcome,
            InstanceOutcome::Resolved,
            "{:?}",
            out.warnings
        );
        assert_eq!(fake.builds_of(&spec.keys.instance), 1, "built once");
        let tags: Vec<String> = fake.images().into_iter().flat_map(|i| i.tags).collect();
        let has = |t: &str| tags.iter().any(|x| x == t);
        assert_eq!(has(&spec.keys.env), env_kept, "{level:?} env");
        assert_eq!(has(&spec.keys.instance), inst_kept, "{level:?} instance");
        assert!(has("acme-base:1"), "a local base image is never removed");
    }
    // An image that existed before the run stays, unless --clean.
    for (clean, kept) in [(false, true), (true, false)] {
        let mut st = settings(dir.path());
        st.run_id = format!("clean-{clean}");
        st.images.clean = clean;
        let fake = fake_engine();
        let eval = evaluation(&fake, &s, &st).await;
        swtbench_runner::run(
            fake.clone(),
            eval,
            Arc::new(RecordingSink::default()),
            Cancel::new(),
        )
        .await;
        // Second run with the instance image pre-existing and an output dir of its own.
        let mut st2 = st.clone();
        st2.outputs = swtbench_plan::settings::OutputRoots::under(
            &dir.path().join(format!("second-{clean}")),
        );
        st2.images.cache_level = CacheLevel::Instance;
        let eval = evaluation(&fake, &s, &st2).await;
        swtbench_runner::run(
            fake.clone(),
            eval,
            Arc::new(RecordingSink::default()),
            Cancel::new(),
        )
        .await;
        assert!(fake
            .images()
            .iter()
            .any(|i| i.tags.contains(&spec.keys.instance)));
        let mut st3 = st.clone();
        st3.outputs =
            swtbench_plan::settings::OutputRoots::under(&dir.path().join(format!("third-{clean}")));
        let eval = evaluation(&fake, &s, &st3).await;
        swtbench_runner::run(
            fake.clone(),
            eval,
            Arc::new(RecordingSink::default()),
            Cancel::new(),
        )
        .await;
        let present = fake
            .images()
            .iter()
            .any(|i| i.tags.contains(&spec.keys.instance));
        assert_eq!(present, kept, "clean = {clean}");
    }
}

#[tokio::test]
async fn a_failed_build_is_an_instance_error_and_the_rest_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = setup();
    // A second repository whose instance image fails to build.
    s.instances
        .push(instance("acme__calc-9", "acme/calc", "1.0"));
    s.instances.last_mut().unwrap().base_commit = "fedcba9876543210fedcba9876543210fedcba98".into();
    s.predictions.insert(
        prediction("acme__calc-9", Some(MODEL_TESTS)).0,
        prediction("acme__calc-9", Some(MODEL_TESTS)).1,
    );
    let bad = specs(&s.instances, &s.table)
        .remove("acme__calc-9")
        .unwrap()
        .unwrap();
    let st = settings(dir.path());
    let fake = fake_engine();
    fake.fail_builds(&regex_escape(&bad.keys.instance), "setup_repo.sh failed");
    let eval = evaluation(&fake, &s, &st).await;
    let out = swtbench_runner::run(
        fake.clone(),
        eval,
        Arc::new(RecordingSink::default()),
        Cancel::new(),
    )
    .await;
    let find = |id: &str| out.results.iter().find(|r| r.instance_id == id).unwrap();
    assert!(
        matches!(&find("acme__calc-9").outcome, InstanceOutcome::Error { reason: reason @ InstanceError::Images(ImageError::Build(_)) } if reason.to_string().contains("could not be built"))
    );
    assert_eq!(find("acme__calc-1").outcome, InstanceOutcome::Resolved);
    let rr = out.run_report.unwrap();
    assert!(rr.error_ids.contains(&"acme__calc-9".to_string()));
    assert!(fake.containers().is_empty());
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_stops_everything_and_leaves_no_container() {
    let dir = tempfile::tempdir().unwrap();
    let s = setup();
    let st = settings(dir.path());
    let fake = fake_engine();
    fake.set_build_delay(Duration::from_secs(60));
    let eval = evaluation(&fake, &s, &st).await;
    let cancel = Cancel::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(10)).await;
        c2.request(CancelReason::Interrupt);
    });
    let out = swtbench_runner::run(
        fake.clone(),
        eval,
        Arc::new(RecordingSink::default()),
        cancel,
    )
    .await;
    assert_eq!(out.cancelled, Some(CancelReason::Interrupt));
    assert!(out
        .results
        .iter()
        .any(|r| r.outcome == InstanceOutcome::Interrupted));
    // The empty patch needed no worker and is graded; the run report is written.
    assert!(out
        .results
        .iter()
        .any(|r| r.instance_id == "acme__calc-3" && r.outcome == InstanceOutcome::EmptyPatch));
    assert!(out.run_report_path.is_some());
    assert!(fake.containers().is_empty());
}

#[tokio::test]
async fn a_container_that_dies_under_a_run_is_an_error_and_leaves_no_output_to_reuse() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = setup();
    s.predictions.retain(|k, _| k.as_str() == "acme__calc-1");
    let st = settings(dir.path());
    let fake = Arc::new(FakeBackend::new());
    fake.add_image("acme-base:1", BTreeMap::new());
    // The pred_post container is killed from outside after printing part of the output.
    fake.on_exec_with(|ctx| {
        let script = ctx.file_text("/eval.sh")?;
        (script.contains("+def test_model_sub") && script.contains("+    return a - b")).then(
            || {
                FakeExec::exit(137, "Applied patch tests/test_model.py cleanly.\n")
                    .stopping_container()
            },
        )
    });
    pytest_like(&fake);
    let eval = evaluation(&fake, &s, &st).await;
    let out = swtbench_runner::run(
        fake.clone(),
        eval,
        Arc::new(RecordingSink::default()),
        Cancel::new(),
    )
    .await;
    let r = &out.results[0];
    assert!(
        matches!(&r.outcome, InstanceOutcome::Error { reason: reason @ InstanceError::Run { run: RunKind::PredPost, .. } } if reason.to_string().contains("pred_post") && reason.to_string().contains("stopped")),
        "{:?}",
        r.outcome
    );
    let pred_post = dir
        .path()
        .join("run_instance_swt_logs/r1/pred_post__org__model/acme__calc-1");
    assert!(!pred_post.join("test_output.txt").exists());
    assert!(!pred_post.join("swtbench_key.json").exists());
    assert!(fake.containers().is_empty());

    // The next run executes it again; the run finished before it is reused. (The runs after it
    // were not started: a failing run ends its instance.)
    let again = evaluation(&fake, &s, &st).await;
    let runs = &again.plan.instance("acme__calc-1").unwrap().runs;
    let action = |k: RunKind| runs.iter().find(|r| r.kind == k).unwrap().action.clone();
    assert_eq!(action(RunKind::PredPre), RunAction::Reuse);
    assert_eq!(action(RunKind::PredPost), RunAction::Execute);
}

#[tokio::test]
async fn leftovers_of_dead_processes_are_removed_and_those_of_live_ones_kept() {
    use swtbench_backend::{labels, ContainerBackend, ContainerSpec};
    use swtbench_runner::session::{Session, SESSION};
    let dir = tempfile::tempdir().unwrap();
    let mut s = setup();
    s.predictions.retain(|k, _| k.as_str() == "acme__calc-3"); // empty patch: nothing runs
    let st = settings(dir.path());
    let fake = fake_engine();
    let host = Session::current()
        .as_str()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let stat_start = |pid: u32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let rest = &stat[stat.rfind(')').unwrap() + 1..];
        rest.split_whitespace().nth(19).unwrap().to_string()
    };
    let mut ended = std::process::Command::new("true").spawn().unwrap();
    let ended_label = format!("{host}/{}/{}", ended.id(), stat_start(ended.id()));
    ended.wait().unwrap();
    let mut sleeper = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let live_label = format!("{host}/{}/{}", sleeper.id(), stat_start(sleeper.id()));
    let make = |session: Option<&str>, run_id: &str| {
        let mut spec = ContainerSpec::new("acme-base:1");
        spec.labels = labels::run_labels(run_id, "acme__calc-1", "pred_pre");
        if let Some(l) = session {
            spec.labels.insert(SESSION.into(), l.into());
        }
        let fake = fake.clone();
        async move { fake.container_create(&spec).await.unwrap() }
    };
    let dead = make(Some(&ended_label), "r1").await;
    let unlabelled = make(None, "r1").await;
    let live = make(Some(&live_label), "r1").await;
    let other_host = make(Some("elsewhere/1/1"), "r1").await;
    // A dead process's container of another run id: a leftover all the same.
    let other_run = make(Some(&ended_label), "r2").await;
    // A dead process's commit build (its image's labels, no run id: below the cache level).
    let dead_build = {
        let mut spec = ContainerSpec::new("acme-base:1");
        spec.name = Some("swtbench-build-k1".into());
        spec.labels = [
            (labels::MANAGED, "true"),
            (labels::KIND, "env"),
            (labels::IMAGE, "exec.env.y:latest"),
            (SESSION, ended_label.as_str()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        fake.container_create(&spec).await.unwrap()
    };
    // A user's container of an image a commit build made: it inherits the empty owner.
    let users = {
        let mut spec = ContainerSpec::new("acme-base:1");
        spec.labels = [(labels::IMAGE, "exec.env.y:latest"), (SESSION, "")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        fake.container_create(&spec).await.unwrap()
    };
    // A commit build's container: its image's labels (run id included, for an image above the
    // cache level), no session, no run: possibly another live process's build, kept.
    let build = {
        let mut spec = ContainerSpec::new("acme-base:1");
        spec.labels = [
            (labels::MANAGED, "true"),
            (labels::KIND, "instance"),
            (labels::IMAGE, "exec.eval.x:latest"),
            (labels::RUN_ID, "r1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        fake.container_create(&spec).await.unwrap()
    };
    let eval = evaluation(&fake, &s, &st).await;
    let sink = Arc::new(RecordingSink::default());
    swtbench_runner::run(fake.clone(), eval, sink.clone(), Cancel::new()).await;
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    let mut left: Vec<String> = fake.containers().into_iter().map(|c| c.id).collect();
    left.sort();
    let mut want = vec![live, other_host, build, users];
    want.sort();
    assert_eq!(
        left, want,
        "removed: {dead}, {unlabelled}, {other_run} and {dead_build}"
    );
    let events = sink.events();
    let removed: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::LeftoversRemoved { .. }))
        .collect();
    assert_eq!(removed.len(), 1, "said once: {removed:?}");
    let Event::LeftoversRemoved {
        containers, left, ..
    } = removed[0]
    else {
        unreachable!()
    };
    assert_eq!(*containers, 4);
    let pid = ended_label.split('/').nth(1).unwrap();
    let line = swtbench_runner::leftovers::removed_line(left, 0);
    assert!(
        line.contains(&format!(
            "pid {pid} (run ids r1, r2): 2 test runs, 1 image build (exec.env.y:latest)"
        )) && line.contains("an earlier version (run id r1): 1 test run"),
        "{line}"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Warning { message } if message.contains("2 container(s) of run id r1 belong to another swtbench process")
    )));
}

/// The directory of `kind` under `<logs>/<kind>/<instance>/<hash>/` (shared gold/base runs).
fn shared_run_dir(root: &Path, kind: &str, id: &str) -> std::path::PathBuf {
    let parent = root.join("run_instance_swt_logs").join(kind).join(id);
    std::fs::read_dir(&parent)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

#[tokio::test]
async fn a_shared_output_replaced_by_another_process_is_never_graded_as_this_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = setup();
    s.predictions.retain(|k, _| k.as_str() == "acme__calc-1");
    let st = settings(dir.path());
    let fake = Arc::new(FakeBackend::new());
    fake.add_image("acme-base:1", BTreeMap::new());
    // While base_post runs, "another process" (another coverage setting, say) writes its own
    // gold_pre result, with its own key, into the shared directory this run executed earlier.
    let root = dir.path().to_path_buf();
    fake.on_exec_with(move |ctx| {
        let script = ctx.file_text("/eval.sh")?;
        let is_base_post = !script.contains("+def test_") && script.contains("+    return a - b");
        if is_base_post {
            let gold_pre = shared_run_dir(&root, "gold_pre", "acme__calc-1");
            let key_path = gold_pre.join("swtbench_key.json");
            let mut record: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&key_path).unwrap()).unwrap();
            let other = "PASSED tests/test_ops.py::test_sub\n";
            record["key"] = json!("0".repeat(64));
            record["output_sha256"] = json!(swtbench_core::hash::sha256_hex(other));
            std::fs::write(gold_pre.join("test_output.txt"), other).unwrap();
            std::fs::write(&key_path, record.to_string()).unwrap();
        }
        None
    });
    pytest_like(&fake);
    let eval = evaluation(&fake, &s, &st).await;
    let out = swtbench_runner::run(
        fake.clone(),
        eval,
        Arc::new(RecordingSink::default()),
        Cancel::new(),
    )
    .await;
    let r = &out.results[0];
    assert!(
        matches!(&r.outcome, InstanceOutcome::Error { reason } if reason.to_string().contains("another swtbench process")),
        "{:?}",
        r.outcome
    );
    assert!(r.report.is_none());
    assert!(!dir
        .path()
        .join("run_instance_swt_logs/r1/org__model/acme__calc-1/report.json")
        .exists());

    // The next plan runs gold_pre again. An output edited next to its own key is run again too.
    let pred_pre = dir
        .path()
        .join("run_instance_swt_logs/r1/pred_pre__org__model/acme__calc-1");
    std::fs::write(pred_pre.join("test_output.txt"), "edited\n").unwrap();
    let again = evaluation(&fake, &s, &st).await;
    let runs = &again.plan.instance("acme__calc-1").unwrap().runs;
    let action = |k: RunKind| runs.iter().find(|r| r.kind == k).unwrap().action.clone();
    assert_eq!(action(RunKind::GoldPre), RunAction::Execute);
    assert_eq!(action(RunKind::PredPre), RunAction::Execute);
    assert_eq!(action(RunKind::PredPost), RunAction::Reuse);
    assert_eq!(
        DiskOutputs.existing(&pred_pre),
        ExistingOutput::Inconsistent
    );
}

#[tokio::test(start_paused = true)]
async fn an_engine_that_stops_answering_stops_the_run_instead_of_failing_every_instance() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = setup();
    for id in ["acme__calc-5", "acme__calc-6", "acme__calc-7"] {
        s.instances.push(instance(id, "acme/calc", "1.0"));
        let (k, v) = prediction(id, Some(MODEL_TESTS));
        s.predictions.insert(k, v);
    }
    let mut st = settings(dir.path());
    st.max_workers = 1;
    let fake = Arc::new(FakeBackend::new());
    fake.add_image("acme-base:1", BTreeMap::new());
    let switch = fake.clone();
    // The daemon dies while calc-1's first run executes.
    fake.on_exec_with(move |_| {
        switch.set_unreachable(true);
        None
    });
    pytest_like(&fake);
    let eval = evaluation(&fake, &s, &st).await;
    let out = swtbench_runner::run(
        fake.clone(),
        eval,
        Arc::new(RecordingSink::default()),
        Cancel::new(),
    )
    .await;
    let why = out.aborted.clone().expect("aborted");
    assert!(matches!(why, AbortReason::EngineGone(_)), "{why:?}");
    assert!(why.to_string().contains("stopped answering"), "{why}");
    assert_eq!(out.cancelled, Some(CancelReason::Interrupt));
    // One instance saw the failure; the others were not attempted, each with the reason.
    let errors = out
        .results
        .iter()
        .filter(|r| matches!(r.outcome, InstanceOutcome::Error { .. }))
        .count();
    assert!(errors <= 1, "{:?}", out.results);
    let never = out
        .results
        .iter()
        .filter(|r| r.outcome == InstanceOutcome::Interrupted)
        .collect::<Vec<_>>();
    assert!(never.len() >= 4, "{:?}", out.results);
    assert!(never[0].reasons[0].contains("stopped early"));
    // The container of the broken run could not be removed: said so, with the way out.
    assert!(out
        .warnings
        .iter()
        .any(|w| w.contains("could not be removed") && w.contains("swtbench clean --run-id r1")));
    assert!(out.run_report_path.is_some(), "partial reports are written");
}

#[tokio::test]
async fn temporary_images_a_killed_process_of_the_run_left_are_removed_by_the_next_one() {
    use swtbench_backend::labels::{KIND, MANAGED, RUN_ID};
    let mut s = setup();
    s.predictions.retain(|k, _| k.as_str() == "acme__calc-1");
    let spec = specs(&s.instances, &s.table)
        .remove("acme__calc-1")
        .unwrap()
        .unwrap();
    let labels = |kind: &str, run_id: &str| {
        BTreeMap::from([
            (MANAGED.to_string(), "true".to_string()),
            (KIND.to_string(), kind.to_string()),
            (RUN_ID.to_string(), run_id.to_string()),
        ])
    };
    // (level, whether the runs are on disk already, env kept, instance kept)
    for (level, done, env_kept) in [
        (CacheLevel::None, false, false),
        (CacheLevel::None, true, false),
        (CacheLevel::Env, true, true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut st = settings(dir.path());
        st.images.cache_level = level;
        if done {
            // A first process ran everything (and kept its images: instance level).
            let mut first = st.clone();
            first.images.cache_level = CacheLevel::Instance;
            let fake = fake_engine();
            let eval = evaluation(&fake, &s, &first).await;
            swtbench_runner::run(
                fake,
                eval,
                Arc::new(RecordingSink::default()),
                Cancel::new(),
            )
            .await;
        }
        let fake = fake_engine();
        fake.add_image(&spec.keys.env, labels("env", "r1"));
        fake.add_image(&spec.keys.instance, labels("instance", "r1"));
        // Another run id's temporary image is not this run's to remove.
        fake.add_image("exec.eval.other:latest", labels("instance", "r2"));
        let eval = evaluation(&fake, &s, &st).await;
        let out = swtbench_runner::run(
            fake.clone(),
            eval,
            Arc::new(RecordingSink::default()),
            Cancel::new(),
        )
        .await;
        assert_eq!(out.results[0].outcome, InstanceOutcome::Resolved);
        let tags: Vec<String> = fake.images().into_iter().flat_map(|i| i.tags).collect();
        let has = |t: &str| tags.iter().any(|x| x == t);
        assert_eq!(
            has(&spec.keys.env),
            env_kept,
            "{level:?} done={done}: {tags:?}"
        );
        assert!(!has(&spec.keys.instance), "{level:?} done={done}: {tags:?}");
        assert!(has("exec.eval.other:latest"));
        assert!(has("acme-base:1"));
    }
}

#[tokio::test]
async fn a_failed_shared_run_is_tried_again_by_the_next_instance_that_needs_it() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let mut s = setup();
    // calc-1 and calc-2 share their gold runs (and calc-2's prediction is the gold tests).
    s.predictions
        .retain(|k, _| k.as_str() == "acme__calc-1" || k.as_str() == "acme__calc-2");
    let mut st = settings(dir.path());
    st.max_workers = 1;
    let fake = Arc::new(FakeBackend::new());
    fake.add_image("acme-base:1", BTreeMap::new());
    let failed = Arc::new(AtomicBool::new(false));
    let once = failed.clone();
    // The first execution of the gold tests before the fix loses its container (calc-2's
    // prediction runs the same tests, in a run of its own: that one is not touched).
    fake.on_exec_with(move |ctx| {
        let script = ctx.file_text("/eval.sh")?;
        let gold_pre = script.contains("+def test_sub")
            && !script.contains("+    return a - b")
            && ctx.spec.labels.get(swtbench_backend::labels::RUN)? == "gold_pre";
        (gold_pre && !once.swap(true, Ordering::SeqCst))
            .then(|| FakeExec::exit(137, "").stopping_container())
    });
    pytest_like(&fake);
    let eval = evaluation(&fake, &s, &st).await;
    let out = swtbench_runner::run(
        fake.clone(),
        eval,
        Arc::new(RecordingSink::default()),
        Cancel::new(),
    )
    .await;
    assert!(failed.load(Ordering::SeqCst));
    let find = |id: &str| out.results.iter().find(|r| r.instance_id == id).unwrap();
    assert!(matches!(
        find("acme__calc-1").outcome,
        InstanceOutcome::Error { .. }
    ));
    assert_eq!(
        find("acme__calc-2").outcome,
        InstanceOutcome::Resolved,
        "{:?}",
        find("acme__calc-2").reasons
    );
}

#[tokio::test]
async fn runs_in_another_mode_keep_their_own_shared_dirs_and_replace_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = setup();
    s.predictions.retain(|k, _| k.as_str() == "acme__calc-1");
    let fake = fake_engine();
    let sink = Arc::new(RecordingSink::default());
    let unit = settings(dir.path());
    let mut repro = settings(dir.path());
    repro.run_id = "r2".into();
    repro.eval.exec_mode = swtbench_spec::ExecMode::ReproductionScript("repro.py".into());

    let first = run_to_end(&fake, &s, &unit, &sink).await;
    assert_eq!(first.stats.runs_executed, 6);
    let second = run_to_end(&fake, &s, &repro, &sink).await;
    assert_eq!(
        second.stats.runs_executed, 6,
        "nothing of the unit-test run is the reproduction run's"
    );
    // Both variants' shared runs are on disk, side by side, each with its own mode's script.
    let gold = dir
        .path()
        .join("run_instance_swt_logs/gold_pre/acme__calc-1");
    let mut names: Vec<String> = std::fs::read_dir(&gold)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    let hash = names[0].split('.').next().unwrap().to_string();
    assert_eq!(
        names,
        vec![format!("{hash}.nocov"), format!("{hash}.repro-nocov")]
    );
    let script = |name: &str| std::fs::read_to_string(gold.join(name).join("eval.sh")).unwrap();
    assert!(!script(&names[0]).contains("echo $?"));
    assert!(script(&names[1]).lines().any(|l| l == "echo $?"));

    // The unit-test run again: everything of it is still there.
    let third_eval = evaluation(&fake, &s, &unit).await;
    assert_eq!(third_eval.plan.counts.runs_execute, 0);
    let third = swtbench_runner::run(fake.clone(), third_eval, sink, Cancel::new()).await;
    assert_eq!(third.stats.runs_executed, 0);
}

/// Requests `reason` (each in turn) `after` the moment `ready` first holds, polling every 100 ms
/// of the (paused) tokio clock; answers when the last request was made.
fn cancel_when(
    cancel: &Cancel,
    ready: impl Fn() -> bool + Send + 'static,
    after: Duration,
    reasons: &[CancelReason],
) -> tokio::task::JoinHandle<tokio::time::Instant> {
    let cancel = cancel.clone();
    let reasons = reasons.to_vec();
    tokio::spawn(async move {
        while !ready() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(after).await;
        for r in reasons {
            cancel.request(r);
        }
        tokio::time::Instant::now()
    })
}

/// Two instances whose eval scripts never end, with a 600 s timeout: the runs are cancelled
/// while the scripts hang.
fn hanging_scripts(dir: &Path) -> (Setup, RunSettings, Arc<FakeBackend>) {
    let mut s = setup();
    s.predictions
        .retain(|k, _| k.as_str() == "acme__calc-1" || k.as_str() == "acme__calc-2");
    let mut st = settings(dir);
    st.exec.timeout = Duration::from_secs(600);
    let fake = Arc::new(FakeBackend::new());
    fake.add_image("acme-base:1", BTreeMap::new());
    fake.set_default_exec(FakeExec::hanging("collected 1 item\n"));
    (s, st, fake)
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_stops_a_hanging_eval_script_at_once_and_writes_the_partial_reports() {
    let dir = tempfile::tempdir().unwrap();
    let (s, st, fake) = hanging_scripts(dir.path());
    let eval = evaluation(&fake, &s, &st).await;
    let cancel = Cancel::new();
    let watched = fake.clone();
    let cancelled_at = cancel_when(
        &cancel,
        move || watched.hanging_execs() > 0,
        Duration::from_secs(5),
        &[CancelReason::Interrupt],
    );
    let out = swtbench_runner::run(
        fake.clone(),
        eval,
        Arc::new(RecordingSink::default()),
        cancel,
    )
    .await;
    let took = cancelled_at.await.unwrap().elapsed();
    // On the paused clock: waiting for the script would take the 600 s timeout.
    assert!(
        took < Duration::from_secs(30),
        "the run ended {took:?} after the interrupt"
    );
    assert_eq!(out.cancelled, Some(CancelReason::Interrupt));
    assert_eq!(out.results.len(), 2);
    assert!(out
        .results
        .iter()
        .all(|r| r.outcome == InstanceOutcome::Interrupted));
    assert_eq!(out.stats.runs_timed_out, 0, "no run got to its timeout");
    assert_eq!(
        fake.hanging_execs(),
        0,
        "nobody waits for the script any more"
    );
    assert!(fake.containers().is_empty(), "{:?}", fake.containers());
    assert!(
        fake.count_calls(|c| matches!(c, FakeCall::ContainerRemove { .. })) >= 1,
        "the hanging container was removed"
    );
    // The partial run report lists both as interrupted.
    let path = out.run_report_path.expect("run report written");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let reasons = report["error_reasons"].to_string();
    assert_eq!(reasons.matches("interrupted").count(), 2, "{reasons}");
    // The cancelled run left no output, so a rerun executes it.
    let pred_pre = dir
        .path()
        .join("run_instance_swt_logs/r1/pred_pre__org__model/acme__calc-1");
    assert!(!pred_pre.join("test_output.txt").exists());
    assert!(!pred_pre.join("swtbench_key.json").exists());
}

#[tokio::test(start_paused = true)]
async fn a_kill_stops_a_hanging_eval_script_at_once_without_reports() {
    let dir = tempfile::tempdir().unwrap();
    let (s, st, fake) = hanging_scripts(dir.path());
    let eval = evaluation(&fake, &s, &st).await;
    let cancel = Cancel::new();
    let watched = fake.clone();
    let cancelled_at = cancel_when(
        &cancel,
        move || watched.hanging_execs() > 0,
        Duration::from_secs(5),
        &[CancelReason::Interrupt, CancelReason::Kill],
    );
    let out = swtbench_runner::run(
        fake.clone(),
        eval,
        Arc::new(RecordingSink::default()),
        cancel,
    )
    .await;
    let took = cancelled_at.await.unwrap().elapsed();
    assert!(
        took < Duration::from_secs(30),
        "the run ended {took:?} after the kill"
    );
    assert_eq!(out.cancelled, Some(CancelReason::Kill));
    assert!(out.run_report_path.is_none() && out.run_report.is_none());
    assert_eq!(fake.hanging_execs(), 0);
    assert!(fake.containers().is_empty(), "{:?}", fake.containers());
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_does_not_wait_for_an_image_build_or_its_waiters() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = setup();
    // Both instances need the same images: one build, the other worker waits for it.
    s.predictions
        .retain(|k, _| k.as_str() == "acme__calc-1" || k.as_str() == "acme__calc-2");
    let st = settings(dir.path());
    let fake = fake_engine();
    fake.set_build_delay(Duration::from_secs(600));
    let eval = evaluation(&fake, &s, &st).await;
    let planned: Vec<String> = eval.plan.images.iter().map(|i| i.tag.clone()).collect();
    let cancel = Cancel::new();
    let watched = fake.clone();
    let cancelled_at = cancel_when(
        &cancel,
        move || watched.count_calls(|c| matches!(c, FakeCall::ImageBuild { .. })) > 0,
        Duration::from_secs(5),
        &[CancelReason::Interrupt],
    );
    let sink = Arc::new(RecordingSink::default());
    let out = swtbench_runner::run(fake.clone(), eval, sink.clone(), cancel).await;
    let took = cancelled_at.await.unwrap().elapsed();
    assert!(
        took < Duration::from_secs(30),
        "the run ended {took:?} after the interrupt (a build takes 600 s)"
    );
    assert_eq!(out.cancelled, Some(CancelReason::Interrupt));
    assert!(out
        .results
        .iter()
        .all(|r| r.outcome == InstanceOutcome::Interrupted));
    // One build was started (single flight) and abandoned: no image of the plan appeared.
    let builds: Vec<String> = fake
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            FakeCall::ImageBuild { tag, .. } => Some(tag),
            _ => None,
        })
        .collect();
    assert_eq!(builds.len(), 1, "{builds:?} of {planned:?}");
    let images: Vec<String> = fake.images().into_iter().flat_map(|i| i.tags).collect();
    for tag in planned.iter().filter(|t| t.as_str() != "acme-base:1") {
        assert!(!images.contains(tag), "{tag} was built after all");
    }
    assert!(fake.containers().is_empty());
    assert!(out.run_report_path.is_some());
}

#[tokio::test(start_paused = true)]
async fn a_container_whose_creation_was_under_way_at_the_interrupt_is_removed_too() {
    let dir = tempfile::tempdir().unwrap();
    let (s, st, fake) = hanging_scripts(dir.path());
    // The engine takes a second to create a container, and finishes the creation even when the
    // client has gone away.
    fake.set_create_delay(Duration::from_secs(1));
    let eval = evaluation(&fake, &s, &st).await;
    let cancel = Cancel::new();
    let watched = fake.clone();
    let cancelled_at = cancel_when(
        &cancel,
        move || watched.count_calls(|c| matches!(c, FakeCall::ContainerCreate { .. })) > 0,
        Duration::ZERO,
        &[CancelReason::Interrupt],
    );
    let out = swtbench_runner::run(
        fake.clone(),
        eval,
        Arc::new(RecordingSink::default()),
        cancel,
    )
    .await;
    let took = cancelled_at.await.unwrap().elapsed();
    assert!(took < Duration::from_secs(30), "{took:?}");
    assert_eq!(out.cancelled, Some(CancelReason::Interrupt));
    // Long after every creation the engine got has finished, none of them is left.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(fake.containers().is_empty(), "{:?}", fake.containers());
    assert!(out
        .run_report
        .is_some_and(|r| r.unstopped_containers.is_empty()));
}

#[tokio::test]
async fn an_extraction_that_hangs_ends_at_the_run_timeout_and_leaves_no_container() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = setup();
    // An edit of an existing file: the fuzzy type must read it from the instance container.
    let raw = "diff --git a/tests/test_ops.py b/tests/test_ops.py\n--- a/tests/test_ops.py\n+++ b/tests/test_ops.py\n@@ -1,2 +1,3 @@\n def test_add():\n     assert add(1, 2) == 3\n+    assert add(2, 2) == 4\n";
    s.predictions = BTreeMap::from([prediction("acme__calc-1", Some(raw))]);
    let mut st = settings(dir.path());
    st.patch_types = vec![swtbench_extract::PatchType::Fuzzy];
    st.exec.timeout = Duration::from_secs(2);
    let fake = fake_engine();
    // Reading a file in the container never answers (until the container goes away).
    fake.on_exec_with(|ctx| {
        (ctx.request.cmd.first().map(String::as_str) == Some("/bin/sh"))
            .then(|| FakeExec::hanging(Vec::new()))
    });
    let sink = Arc::new(RecordingSink::default());
    let started = std::time::Instant::now();
    let eval = evaluation(&fake, &s, &st).await;
    let out = swtbench_runner::run(fake.clone(), eval, sink, Cancel::new()).await;
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    let r = &out.results[0];
    match &r.outcome {
        InstanceOutcome::Error { reason } => {
            assert!(
                reason.to_string().contains("did not finish within 2 s"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert!(fake.containers().is_empty(), "no container is left");
}

#[tokio::test]
async fn plain_shared_dirs_of_an_older_tree_are_reused_only_when_they_are_of_the_same_variant() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = setup();
    s.predictions.retain(|k, _| k.as_str() == "acme__calc-1");
    let fake = fake_engine();
    let sink = Arc::new(RecordingSink::default());
    let mut repro = settings(dir.path());
    repro.eval.exec_mode = swtbench_spec::ExecMode::ReproductionScript("repro.py".into());
    let first = run_to_end(&fake, &s, &repro, &sink).await;
    assert_eq!(first.stats.runs_executed, 6);
    // Make it a tree of the original: shared runs in plain `<hash>` directories, without keys.
    let logs = dir.path().join("run_instance_swt_logs");
    for kind in ["gold_pre", "gold_post", "base_pre", "base_post"] {
        let parent = logs.join(kind).join("acme__calc-1");
        for e in std::fs::read_dir(&parent).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            let (hash, suffix) = name.split_once('.').unwrap();
            assert_eq!(suffix, "repro-nocov");
            std::fs::remove_file(p.join("swtbench_key.json")).unwrap();
            std::fs::rename(&p, parent.join(hash)).unwrap();
        }
    }
    let shared_dirs = |plan: &Plan| -> Vec<String> {
        plan.instances[0]
            .runs
            .iter()
            .filter(|r| r.kind.is_shared())
            .map(|r| r.dir.file_name().unwrap().to_str().unwrap().to_string())
            .collect()
    };
    // Not asked to reuse unkeyed outputs: the variant's own directories, executed.
    let eval = evaluation(&fake, &s, &repro).await;
    assert!(shared_dirs(&eval.plan)
        .iter()
        .all(|d| d.ends_with(".repro-nocov")));
    // (The pred runs keep their keyed outputs.)
    assert_eq!(eval.plan.counts.runs_execute, 4);
    // --reuse-unkeyed-outputs and --skip-eval take the plain directories of the same variant.
    for flag in ["reuse_unkeyed", "skip_eval"] {
        let mut st = repro.clone();
        st.reuse_unkeyed = flag == "reuse_unkeyed";
        st.skip_eval = flag == "skip_eval";
        let eval = evaluation(&fake, &s, &st).await;
        assert!(
            shared_dirs(&eval.plan).iter().all(|d| !d.contains('.')),
            "{flag}: {:?}",
            shared_dirs(&eval.plan)
        );
        assert_eq!(eval.plan.counts.runs_execute, 0, "{flag}");
    }
    // … but never those of another variant: a unit-test run does not reuse them.
    let mut unit = settings(dir.path());
    unit.reuse_unkeyed = true;
    unit.eval.coverage = false;
    let eval = evaluation(&fake, &s, &unit).await;
    assert!(shared_dirs(&eval.plan)
        .iter()
        .all(|d| d.ends_with(".nocov")));
    assert_eq!(eval.plan.counts.runs_execute, 6);
    // The default variant (unit tests under the tracer) uses the original's plain names.
    unit.eval.coverage = true;
    let eval = evaluation(&fake, &s, &unit).await;
    let dirs = shared_dirs(&eval.plan);
    assert_eq!(dirs.len(), 4);
    assert!(
        dirs.iter().all(|d| d.len() == 64 && !d.contains('.')),
        "{dirs:?}"
    );
}

/// The fake's cgroup counters: the OOM killer ended a process in the runs named.
fn oom_in(fake: &FakeBackend, runs: &'static [&'static str]) {
    fake.on_exec_with(move |ctx| {
        if !ctx.command_line().contains("memory.oom_control") {
            return None;
        }
        let run = ctx.spec.labels.get(swtbench_backend::labels::RUN)?;
        let kills = u32::from(runs.contains(&run.as_str()));
        Some(FakeExec::ok(format!(
            "== /sys/fs/cgroup/memory.events\noom {kills}\noom_kill {kills}\n== /sys/fs/cgroup/pids.events\nmax 0\n"
        )))
    });
}

#[tokio::test]
async fn a_limit_hit_is_the_predictions_outcome_but_a_retried_error_in_a_gold_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = setup();
    s.predictions.retain(|k, _| k.as_str() == "acme__calc-1");
    let mut st = settings(dir.path());
    st.exec.limits.memory_bytes = Some(1 << 30);
    st.exec.limits.pids = Some(512);

    // The model's test reaches the memory limit after the fix: graded, with the reason.
    let fake = Arc::new(FakeBackend::new());
    fake.add_image("acme-base:1", BTreeMap::new());
    oom_in(&fake, &["pred_post"]);
    pytest_like(&fake);
    let sink = Arc::new(RecordingSink::default());
    let out = run_to_end(&fake, &s, &st, &sink).await;
    let r = &out.results[0];
    assert!(
        matches!(
            r.outcome,
            InstanceOutcome::Resolved | InstanceOutcome::Unresolved { .. }
        ),
        "graded: {:?}",
        r.outcome
    );
    assert!(r.report.is_some());
    assert_eq!(out.stats.runs_limited, 1);
    assert!(
        r.reasons.iter().any(|x| x.contains(
            "pred_post reached the memory limit (the OOM killer ended a process): 1 GiB"
        )),
        "{:?}",
        r.reasons
    );
    let report = out.run_report.as_ref().unwrap().to_value();
    assert_eq!(
        report["limit_hits"],
        json!({"acme__calc-1": ["pred_post: memory"]})
    );
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            dir.path()
                .join("run_instance_swt_logs/r1/org__model/acme__calc-1/swtbench_instance.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        summary["limit_hits"],
        json!([{"run": "pred_post", "limit": "memory"}])
    );
    let key = std::fs::read_to_string(
        dir.path()
            .join("run_instance_swt_logs/r1/pred_post__org__model/acme__calc-1/swtbench_key.json"),
    )
    .unwrap();
    assert!(key.contains(r#""limit": "memory""#), "{key}");

    // The same again: the prediction's limit hit is reused like any output.
    let again = run_to_end(&fake, &s, &st, &Arc::new(RecordingSink::default())).await;
    assert_eq!(again.stats.runs_executed, 0, "{:?}", again.stats);
    assert_eq!(again.results[0].outcome, r.outcome);

    // More memory: the run that reached the limit executes again; the others, which reached
    // none, stand for the more generous limits too.
    let mut more = st.clone();
    more.exec.limits.memory_bytes = Some(2 << 30);
    let other = run_to_end(&fake, &s, &more, &Arc::new(RecordingSink::default())).await;
    assert_eq!(
        (other.stats.runs_executed, other.stats.runs_reused),
        (1, 5),
        "{:?}",
        other.stats
    );
    // Tighter limits may change any run: all six execute again.
    let mut less = more.clone();
    less.exec.limits.pids = Some(256);
    let tighter = run_to_end(&fake, &s, &less, &Arc::new(RecordingSink::default())).await;
    assert_eq!(tighter.stats.runs_executed, 6, "{:?}", tighter.stats);

    // A gold run at the limit is the harness's problem: an error with a hint, no grade, and
    // tried again next time.
    let dir2 = tempfile::tempdir().unwrap();
    let st2 = RunSettings {
        exec: st.exec.clone(),
        ..settings(dir2.path())
    };
    let fake2 = Arc::new(FakeBackend::new());
    fake2.add_image("acme-base:1", BTreeMap::new());
    oom_in(&fake2, &["gold_pre"]);
    pytest_like(&fake2);
    let out = run_to_end(&fake2, &s, &st2, &Arc::new(RecordingSink::default())).await;
    let InstanceOutcome::Error { reason } = &out.results[0].outcome else {
        panic!("{:?}", out.results[0].outcome)
    };
    assert_eq!(
        reason.to_string(),
        "gold_pre: reached the memory limit (the OOM killer ended a process): 1 GiB"
    );
    assert!(
        reason.hint().unwrap().contains("--memory"),
        "{:?}",
        reason.hint()
    );
    assert_eq!(out.results[0].limit_hits.len(), 1);
    let calls_before = fake2.calls().len();
    let again = run_to_end(&fake2, &s, &st2, &Arc::new(RecordingSink::default())).await;
    // The runs side by side with gold_pre finished (and are reused now) or did not start.
    assert!(
        again.stats.runs_reused >= 2 && again.stats.runs_failed == 1,
        "the prediction runs are reused, the gold run is executed again (and fails again): {:?}",
        again.stats
    );
    let runs_created: Vec<String> = fake2
        .calls()
        .into_iter()
        .skip(calls_before)
        .filter_map(|c| match c {
            FakeCall::ContainerCreate { spec, .. } => {
                spec.labels.get(swtbench_backend::labels::RUN).cloned()
            }
            _ => None,
        })
        .collect();
    assert!(
        runs_created.contains(&"gold_pre".to_string())
            && !runs_created.iter().any(|r| r.starts_with("pred_")),
        "{runs_created:?}"
    );
    assert!(matches!(
        again.results[0].outcome,
        InstanceOutcome::Error { .. }
    ));
}

#[tokio::test(start_paused = true)]
async fn transient_engine_and_network_failures_are_retried_before_they_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = setup();
    s.predictions.retain(|k, _| k.as_str() == "acme__calc-1");
    let st = settings(dir.path());

    // Two creations answered with HTTP 500: the run waits and tries again.
    let fake = fake_engine();
    fake.fail_next_creates(2);
    let out = run_to_end(&fake, &s, &st, &Arc::new(RecordingSink::default())).await;
    assert_eq!(out.results[0].outcome, InstanceOutcome::Resolved);
    assert_eq!(out.stats.runs_failed, 0);
    assert_eq!(
        fake.count_calls(|c| matches!(c, FakeCall::ContainerCreate { .. })),
        6 + 2,
        "six runs, two creations tried again"
    );
    let log = std::fs::read_to_string(
        dir.path()
            .join("run_instance_swt_logs/r1/pred_pre__org__model/acme__calc-1/run_instance.log"),
    )
    .unwrap();
    assert!(
        log.contains("creating the container failed") && log.contains("trying again in 1s"),
        "{log}"
    );

    // Four in a row: the run fails after the last retry (one container at a time, so that the
    // four are one run's).
    let dir2 = tempfile::tempdir().unwrap();
    let fake = fake_engine();
    fake.fail_next_creates(4);
    let one_at_a_time = RunSettings {
        max_workers: 1,
        ..settings(dir2.path())
    };
    let out = run_to_end(
        &fake,
        &s,
        &one_at_a_time,
        &Arc::new(RecordingSink::default()),
    )
    .await;
    assert!(
        matches!(&out.results[0].outcome, InstanceOutcome::Error { reason } if reason.to_string().contains("HTTP 500") && reason.cause() == "engine"),
        "{:?}",
        out.results[0].outcome
    );

    // A build that could not reach the package index is tried once more, then fails.
    let dir3 = tempfile::tempdir().unwrap();
    let fake = fake_engine();
    let spec = specs(&s.instances, &s.table)
        .remove("acme__calc-1")
        .unwrap()
        .unwrap();
    fake.fail_builds(
        &regex_escape(&spec.keys.env),
        "pip install: Could not fetch URL https://pypi.org/simple/pytest/: connection refused",
    );
    let sink = Arc::new(RecordingSink::default());
    let out = run_to_end(&fake, &s, &settings(dir3.path()), &sink).await;
    assert!(matches!(
        &out.results[0].outcome,
        InstanceOutcome::Error {
            reason: InstanceError::Images(ImageError::Build(_))
        }
    ));
    assert_eq!(fake.builds_of(&spec.keys.env), 2, "one retry");
    let InstanceOutcome::Error { reason } = &out.results[0].outcome else {
        unreachable!()
    };
    assert_eq!(reason.cause(), "image_build_network");
    assert!(reason.is_environment());
    assert!(out
        .warnings
        .iter()
        .any(|w| w.contains("trying the build once more in 10 s")));
    // The failure's whole text (its log line, the hint) is said once, by the image's event; the
    // retry's warning names the cause in short.
    let hint = match reason {
        InstanceError::Images(ImageError::Build(b)) => b.hint(),
        _ => unreachable!(),
    };
    let said: Vec<String> = sink
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::Warning { message } => Some(message.clone()),
            Event::ImageReady {
                outcome: swtbench_runner::events::ImageOutcome::Failed { reason },
                ..
            } => Some(reason.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        said.iter().filter(|t| t.contains(&hint)).count(),
        1,
        "{said:#?}"
    );
    // Nothing was graded: no run report, whose zeros would read as a result.
    assert!(out.evaluated_nothing());
    assert!(out.run_report.is_none() && out.run_report_path.is_none());
    let results = settings(dir3.path()).outputs.results;
    let written = std::fs::read_dir(&results).map_or(0, |d| d.count());
    assert_eq!(written, 0, "{}", results.display());
}

/// Containers of the run that the clean-up could not remove, named in a warning with the way out.
fn names_the_containers_left(warnings: &[String]) -> bool {
    warnings.iter().any(|w| {
        w.contains("could not be removed")
            && w.contains("does not answer")
            && w.contains("swtbench.run_id=r1")
            && w.contains("swtbench clean --run-id r1")
    })
}

#[tokio::test(start_paused = true)]
async fn an_engine_that_hangs_during_a_silent_script_stops_the_run_within_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let (s, mut st, fake) = hanging_scripts(dir.path());
    st.max_workers = 1;
    let eval = evaluation(&fake, &s, &st).await;
    // The engine hangs while calc-1's script runs; every call then fails after 5 s, as the Docker
    // backend's calls do on a lost engine.
    let (watched, switch) = (fake.clone(), fake.clone());
    let hung_at = tokio::spawn(async move {
        while watched.hanging_execs() == 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
        switch.set_hung(Some(Duration::from_secs(5)));
        tokio::time::Instant::now()
    });
    let out = swtbench_runner::run(
        fake.clone(),
        eval,
        Arc::new(RecordingSink::default()),
        Cancel::new(),
    )
    .await;
    let took = hung_at.await.unwrap().elapsed();
    // The command (5 s), the removal of its container (5 s), one ping (5 s, not retried), the
    // clean-up's probe (3 s).
    assert!(
        took <= Duration::from_secs(20),
        "ended {took:?} after the hang"
    );
    let why = out.aborted.clone().expect("aborted");
    assert!(matches!(why, AbortReason::EngineGone(_)), "{why:?}");
    assert!(why.to_string().contains("stopped answering"), "{why}");
    assert_eq!(
        fake.count_calls(|c| matches!(c, FakeCall::EngineInfo)),
        0,
        "no ping was answered"
    );
    assert!(
        names_the_containers_left(&out.warnings),
        "{:?}",
        out.warnings
    );
    assert!(out.run_report_path.is_some(), "partial reports are written");
    assert_eq!(out.results.len(), 2);
    fake.set_hung(None);
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_on_a_hung_engine_ends_the_run_within_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let (s, st, fake) = hanging_scripts(dir.path());
    let eval = evaluation(&fake, &s, &st).await;
    let cancel = Cancel::new();
    let watched = fake.clone();
    // The engine hangs (calls would wait out the default 60 s deadline) and, a second later, the
    // user presses Ctrl-C.
    let switch = fake.clone();
    let cancelled_at = cancel_when(
        &cancel,
        move || {
            let hanging = watched.hanging_execs() > 0;
            if hanging {
                switch.set_hung(Some(Duration::from_secs(60)));
            }
            hanging
        },
        Duration::from_secs(1),
        &[CancelReason::Interrupt],
    );
    let out = swtbench_runner::run(
        fake.clone(),
        eval,
        Arc::new(RecordingSink::default()),
        cancel,
    )
    .await;
    let took = cancelled_at.await.unwrap().elapsed();
    // The first removal is slow (3 s), the probe gets no answer (3 s), the rest is skipped.
    assert!(
        took <= Duration::from_secs(8),
        "the run ended {took:?} after the interrupt"
    );
    assert_eq!(out.cancelled, Some(CancelReason::Interrupt));
    assert_eq!(out.aborted, None);
    assert!(
        names_the_containers_left(&out.warnings),
        "{:?}",
        out.warnings
    );
    let report = out.run_report.expect("run report");
    assert!(!report.unstopped_containers.is_empty(), "{report:?}");
    assert!(out.run_report_path.is_some());
    fake.set_hung(None);
}

/// The eval-script execs in the order they started: (instance, run).
fn eval_order(fake: &FakeBackend, from_call: usize) -> Vec<(String, String)> {
    let calls = fake.calls();
    let mut labels: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut order = Vec::new();
    for c in calls.into_iter().skip(from_call) {
        match c {
            FakeCall::ContainerCreate { id, spec } => {
                let get = |k: &str| spec.labels.get(k).cloned().unwrap_or_default();
                labels.insert(
                    id,
                    (
                        get(swtbench_backend::labels::INSTANCE_ID),
                        get(swtbench_backend::labels::RUN),
                    ),
                );
            }
            FakeCall::Exec { id, cmd, .. } if cmd.join(" ").contains("eval.sh") => {
                if let Some(l) = labels.get(&id) {
                    order.push(l.clone());
                }
            }
            _ => {}
        }
    }
    order
}

#[tokio::test(start_paused = true)]
async fn the_runs_of_an_instance_run_side_by_side_and_the_longest_expected_starts_first() {
    let dir = tempfile::tempdir().unwrap();
    // Two instances of different commits: nothing is shared between them.
    let other = Instance::from_row(
        &json!({
            "instance_id": "acme__calc-7", "repo": "acme/calc", "version": "1.0",
            "base_commit": "fedcba9876543210fedcba9876543210fedcba98",
            "patch": CODE, "test_patch": GOLD_TESTS,
        }),
        PatchLayout::Swebench,
    )
    .unwrap();
    let s = Setup {
        instances: vec![other, instance("acme__calc-1", "acme/calc", "1.0")],
        predictions: BTreeMap::from([
            prediction("acme__calc-1", Some(MODEL_TESTS)),
            prediction("acme__calc-7", Some(MODEL_TESTS)),
        ]),
        table: table(),
    };
    let fake = Arc::new(FakeBackend::new());
    fake.add_image("acme-base:1", BTreeMap::new());
    // calc-1's prediction runs are slow; everything else takes a second.
    pytest_like_taking(&fake, |instance, run| {
        if instance == "acme__calc-1" && run.starts_with("pred_") {
            Duration::from_secs(60)
        } else {
            Duration::from_secs(1)
        }
    });
    let mut st = settings(dir.path());
    st.exec.timeout = Duration::from_secs(100);
    st.max_workers = 4;
    let started = tokio::time::Instant::now();
    let out = run_to_end(&fake, &s, &st, &Arc::new(RecordingSink::default())).await;
    let wall = started.elapsed();
    assert!(
        out.results.iter().all(|r| r.report.is_some()),
        "{:?}",
        out.results
    );
    assert_eq!(out.stats.runs_executed, 12);
    // One after the other, calc-1 alone would take 2 × 60 s + 4 × 1 s.
    assert!(
        wall < Duration::from_secs(70),
        "the two 60 s runs ran side by side: {wall:?}"
    );

    // Again with another timeout (new keys, so everything executes again), one container at a
    // time: the durations the first run recorded put the slow runs first.
    let calls_before = fake.calls().len();
    st.exec.timeout = Duration::from_secs(200);
    st.max_workers = 1;
    let eval = evaluation(&fake, &s, &st).await;
    let planned = eval.plan.clone();
    assert_eq!(
        planned.order,
        ["acme__calc-1", "acme__calc-7"],
        "the slow one first, though the dataset has it second"
    );
    let calc1 = planned.instance("acme__calc-1").unwrap();
    let pred_pre = calc1
        .runs
        .iter()
        .find(|r| r.kind == RunKind::PredPre)
        .unwrap();
    let expected = pred_pre.expected.expect("an estimate");
    assert_eq!(expected.basis, swtbench_plan::schedule::Basis::Recorded);
    assert!(expected.ms >= 60_000, "{expected:?}");
    let text = planned.to_text();
    assert!(
        text.contains("schedule: 1 container(s) at once (--max-workers); longest expected first")
            && text.contains(
                "1. acme__calc-1: ~3 min 35 s: builds ~2 min 30 s, longest run pred_pre ~1 min 5 s \
                 (recorded), ~2 min 34 s of runs in all"
            ),
        "{text}"
    );
    let sink = Arc::new(RecordingSink::default());
    let out = swtbench_runner::run(fake.clone(), eval, sink, Cancel::new()).await;
    assert_eq!(out.stats.runs_executed, 12);
    let order = eval_order(&fake, calls_before);
    let first_two: Vec<&str> = order[..2].iter().map(|(_, r)| r.as_str()).collect();
    assert_eq!(order[0].0, "acme__calc-1");
    assert_eq!(first_two, ["pred_pre", "pred_post"], "{order:?}");
    assert_eq!(order.len(), 12);
}

#[tokio::test(start_paused = true)]
async fn no_more_containers_run_at_once_than_the_hosts_memory_holds_at_their_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = setup();
    s.predictions.retain(|k, _| k.as_str() == "acme__calc-1");
    let fake = Arc::new(FakeBackend::new());
    fake.add_image("acme-base:1", BTreeMap::new());
    pytest_like_taking(&fake, |_, _| Duration::from_secs(10));
    let mut st = settings(dir.path());
    st.max_workers = 6;
    let wall = |st: RunSettings| {
        let (fake, s) = (fake.clone(), &s);
        async move {
            let started = tokio::time::Instant::now();
            let out = run_to_end(&fake, s, &st, &Arc::new(RecordingSink::default())).await;
            assert_eq!(out.results[0].outcome, InstanceOutcome::Resolved);
            (started.elapsed(), out)
        }
    };
    // Six runs of 10 s, six workers: all at once.
    let (all_at_once, _) = wall(st.clone()).await;
    assert!(all_at_once < Duration::from_secs(15), "{all_at_once:?}");
    // The same with a 1 GiB limit each on a 2 GiB host: two at a time, three rounds.
    st.exec.timeout = Duration::from_secs(21); // new keys: everything runs again
    st.exec.limits.memory_bytes = Some(1 << 30);
    st.memory_budget = Some(2 << 30);
    let planned = make_plan(&s, &st, &base_image_inventory(), &DiskOutputs);
    assert_eq!(planned.concurrency.containers, 2);
    assert!(
        planned.to_text().contains(
            "schedule: 2 container(s) at once: 6 workers, but 2 × 1 GiB of memory limit is what \
             the host's 2 GiB hold"
        ),
        "{}",
        planned.to_text()
    );
    let (bounded, out) = wall(st).await;
    assert_eq!(out.stats.runs_executed, 6);
    assert!(
        bounded >= Duration::from_secs(30) && bounded < Duration::from_secs(40),
        "{bounded:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn two_evaluations_on_one_output_directory_execute_each_shared_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = setup();
    s.predictions.retain(|k, _| k.as_str() == "acme__calc-1");
    let fake = Arc::new(FakeBackend::new());
    fake.add_image("acme-base:1", BTreeMap::new());
    pytest_like_taking(&fake, |_, _| Duration::from_secs(10));
    // Two seeds of one model: their own prediction runs, the same gold and base runs.
    let first = settings(dir.path());
    let second = RunSettings {
        run_id: "r2".into(),
        ..settings(dir.path())
    };
    let (sink1, sink2) = (
        Arc::new(RecordingSink::default()),
        Arc::new(RecordingSink::default()),
    );
    let (a, b) = tokio::join!(
        run_to_end(&fake, &s, &first, &sink1),
        run_to_end(&fake, &s, &second, &sink2)
    );
    for out in [&a, &b] {
        assert_eq!(
            out.results[0].outcome,
            InstanceOutcome::Resolved,
            "{:?}",
            out.results
        );
    }
    let shared_execs = eval_order(&fake, 0)
        .into_iter()
        .filter(|(_, run)| !run.starts_with("pred_"))
        .count();
    assert_eq!(shared_execs, 4, "each shared run once");
    assert_eq!(a.stats.runs_executed + b.stats.runs_executed, 2 + 2 + 4);
    let waited = |sink: &RecordingSink| {
        sink.events()
            .iter()
            .filter(|e| matches!(e, Event::RunWaiting { .. }))
            .count()
    };
    assert!(
        waited(&sink1) + waited(&sink2) >= 1,
        "one waited for the other"
    );
    let report = |run_id: &str| {
        std::fs::read(dir.path().join(format!(
            "run_instance_swt_logs/{run_id}/org__model/acme__calc-1/report.json"
        )))
        .unwrap()
    };
    assert_eq!(
        report("r1"),
        report("r2"),
        "the same grade from the same runs"
    );
}

/// Every file under `dir`, by path, in a tree the re-grading reads.
fn memory_tree(dir: &Path) -> swtbench_grade::tree::MemoryTree {
    let mut tree = swtbench_grade::tree::MemoryTree::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                tree.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    tree
}

/// `run` and `grade` take one grading path: re-grading a run's tree gives the same `report.json`
/// bytes and the same integrity record as the run wrote, plain and strict, with a flaky list.
#[tokio::test]
async fn run_and_regrade_write_the_same_reports_for_the_same_outputs() {
    for (strict, flaky) in [(false, false), (true, false), (false, true)] {
        let dir = tempfile::tempdir().unwrap();
        let mut s = setup();
        // The model's tests of calc-5 pass before the fix too: unresolved, with a P2P test.
        s.predictions.insert(
            InstanceId("acme__calc-5".into()),
            prediction("acme__calc-5", Some(MODEL_TESTS)).1,
        );
        let mut st = settings(dir.path());
        st.strict_results = strict;
        if flaky {
            st.flaky = BTreeMap::from([(
                "acme__calc-1".to_string(),
                std::collections::BTreeSet::from([
                    "tests/test_model.py::test_model_sub".to_string()
                ]),
            )]);
        }
        let fake = fake_engine();
        let sink = Arc::new(RecordingSink::default());
        let out = run_to_end(&fake, &s, &st, &sink).await;
        let graded: Vec<&str> = out
            .results
            .iter()
            .filter(|r| r.report.is_some())
            .map(|r| r.instance_id.as_str())
            .collect();
        assert!(graded.len() >= 3, "{graded:?}");

        let logs = dir.path().join("run_instance_swt_logs");
        let tree = memory_tree(dir.path());
        let root = swtbench_core::layout::LogsRoot::new(&logs);
        let rules = swtbench_grade::tree::ReadRules {
            parsers: BTreeMap::from([("acme/calc".to_string(), swtbench_grade::Parser::Pytest)]),
            ..Default::default()
        };
        let flaky_list = st.flaky.clone();
        let regraded = swtbench_grade::tree::regrade(
            &tree,
            &swtbench_grade::tree::RegradeRequest {
                logs_root: &root,
                run_id: "r1",
                model_dir: "org__model",
                instances: &s.instances,
                rewrite: true,
                options: swtbench_grade::report::GradeOptions {
                    strict_results: strict,
                    ..Default::default()
                },
                threads: 1,
                rules: &rules,
                empty_patches: None,
                flaky: flaky.then_some(&flaky_list),
            },
        );
        let mut with_integrity = 0;
        for id in &graded {
            let path = logs.join("r1/org__model").join(id).join("report.json");
            let written = std::fs::read_to_string(&path).unwrap();
            let (_, again) = regraded
                .writes
                .iter()
                .find(|(p, _)| p == &path)
                .unwrap_or_else(|| panic!("{id} was not re-graded: {:?}", regraded.warnings));
            assert_eq!(&written, again, "{id} (strict {strict}, flaky {flaky})");
            let summary: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(path.with_file_name("swtbench_instance.json")).unwrap(),
            )
            .unwrap();
            // Instances graded without running (an empty patch) have no integrity record.
            assert_eq!(
                summary.get("integrity").cloned(),
                regraded.integrity.get(*id).map(|i| i.to_json()),
                "{id} (strict {strict}, flaky {flaky}): {summary}"
            );
            with_integrity += usize::from(summary.get("integrity").is_some());
        }
        assert!(
            with_integrity >= 2,
            "integrity records compared: {with_integrity}"
        );
    }
}
