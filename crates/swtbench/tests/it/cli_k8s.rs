//! `swtbench k8s manifest`: the objects it prints parse as YAML and as a JSON v1 List, with the
//! run flags in every pod's command, the shard from the completion index, the claim, the
//! sized engine and the merge's wait; flags it sets itself are refused. `k8s service`: the
//! Service, Deployment and DaemonSet, their commands, probes, Secrets and engines. No cluster is
//! involved.

use serde_json::Value;

fn swtbench(args: &[&str]) -> std::process::Output {
    crate::support::binary::command()
        .args(args)
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap()
}

const RUN_FLAGS: [&str; 10] = [
    "--dataset",
    "data/swt full.jsonl",
    "--predictions",
    "preds/model.jsonl",
    "--run-id",
    "Full_1",
    "--max-workers",
    "6",
    "--memory",
    "3g",
];

fn manifest(extra: &[&str]) -> std::process::Output {
    let mut args = vec!["k8s", "manifest"];
    args.extend(RUN_FLAGS);
    args.extend(["--shards", "16", "--image", "ghcr.io/acme/swtbench:0.1"]);
    args.extend(extra);
    swtbench(&args)
}

fn job<'a>(objects: &'a [Value], name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == "Job" && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no Job {name}"))
}

fn check(objects: &[Value]) {
    let shards = job(objects, "swtbench-full-1-shards");
    assert_eq!(shards["spec"]["completionMode"], "Indexed");
    assert_eq!(shards["spec"]["completions"], 16);
    assert_eq!(shards["spec"]["parallelism"], 4);
    let pod = &shards["spec"]["template"]["spec"];
    let cmd = pod["containers"][0]["command"][2].as_str().unwrap();
    assert_eq!(
        cmd,
        "exec swtbench run --dataset 'data/swt full.jsonl' --predictions preds/model.jsonl \
         --run-id Full_1 --max-workers 6 --memory 3g --cpus 2 \
         --shard \"$(( JOB_COMPLETION_INDEX + 1 ))/16\"",
        "the run flags as given, without manifest's own"
    );
    assert_eq!(pod["containers"][0]["workingDir"], "/data");
    assert_eq!(
        pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "evals"
    );
    let engine = &pod["initContainers"][0];
    assert_eq!(engine["restartPolicy"], "Always");
    assert_eq!(engine["securityContext"]["privileged"], true);
    // 6 × 3 GiB + 2 builds × 2 GiB + 512 MiB; 6 × 2 CPUs.
    assert_eq!(engine["resources"]["limits"]["memory"], "23040Mi");
    assert_eq!(engine["resources"]["limits"]["cpu"], "12000m");
    let merge = job(objects, "swtbench-full-1-merge");
    let pod = &merge["spec"]["template"]["spec"];
    assert!(pod["containers"][0]["command"][2]
        .as_str()
        .unwrap()
        .ends_with("--cpus 2 --merge"));
    assert_eq!(
        pod["initContainers"][0]["command"][4],
        "job/swtbench-full-1-shards"
    );
    assert!(objects.iter().any(|o| o["kind"] == "Role"));
    assert!(objects.iter().any(|o| o["kind"] == "RoleBinding"));
    assert!(objects.iter().any(|o| o["kind"] == "ServiceAccount"));
}

const OWN: [&str; 8] = [
    "--parallelism",
    "4",
    "--volume-claim=evals",
    "--mount-path",
    "/data",
    "--cpus",
    "2",
    "--namespace=bench",
];

#[test]
fn the_manifest_parses_as_yaml_and_as_a_json_list() {
    let out = manifest(&OWN);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let docs: Vec<Value> = text
        .split("\n---\n")
        .map(|d| d.trim_start_matches("---\n"))
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_yaml_ng::from_str(d).unwrap())
        .collect();
    assert_eq!(docs.len(), 5);
    check(&docs);
    assert!(docs.iter().all(|d| d["metadata"]["namespace"] == "bench"));

    let mut json_flags = OWN.to_vec();
    json_flags.extend(["--format", "json"]);
    let out = manifest(&json_flags);
    assert!(out.status.success());
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"].as_array().unwrap(), &docs);
}

#[test]
fn written_to_a_file_with_out() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("eval.yaml");
    let out = manifest(&["--out", file.to_str().unwrap(), "--engine", "socket"]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty(), "nothing on stdout");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("kubectl apply -f"), "{stderr}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("path: /var/run/docker.sock"), "{text}");
    assert!(!text.contains("privileged: true"));
}

#[test]
fn flags_the_manifest_sets_itself_and_a_missing_memory_are_refused() {
    for flag in [["--shard", "1/2"], ["--dry-run", "--json"]] {
        let out = manifest(&flag);
        assert_eq!(out.status.code(), Some(2), "{flag:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("{} is set by `k8s manifest`", flag[0])),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
    }
    let out = swtbench(&[
        "k8s",
        "manifest",
        "--dataset",
        "lite",
        "--predictions",
        "gold",
        "--run-id",
        "r",
        "--shards",
        "2",
        "--image",
        "x",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs --memory"));
    let out = manifest(&["--name", "Bad_Name"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--name Bad_Name"));
}

#[test]
fn a_path_off_the_volume_is_warned_about() {
    let out = swtbench(&[
        "k8s",
        "manifest",
        "--dataset",
        "/home/me/d.jsonl",
        "--predictions",
        "gold",
        "--run-id",
        "r",
        "--memory",
        "2g",
        "--shards",
        "2",
        "--image",
        "x",
    ]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--dataset /home/me/d.jsonl is not under --mount-path /work"),
        "{stderr}"
    );
}

/// `k8s service` with `extra` flags before `--` and the run flags after it.
fn service(extra: &[&str], run_flags: &[&str]) -> std::process::Output {
    let mut args = vec![
        "k8s",
        "service",
        "--image",
        "ghcr.io/acme/swtbench:0.1",
        "--queue-secret",
        "swtbench-queue:dsn",
        "--token-secret",
        "swtbench-tokens",
    ];
    args.extend(extra);
    args.push("--");
    args.extend(run_flags);
    swtbench(&args)
}

const SERVICE_RUN_FLAGS: [&str; 8] = [
    "--dataset",
    "data/swt full.jsonl",
    "--max-workers",
    "3",
    "--memory",
    "2g",
    "--output-dir",
    "out",
];

fn yaml_docs(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8(stdout.to_vec())
        .unwrap()
        .split("\n---\n")
        .map(|d| d.trim_start_matches("---\n"))
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_yaml_ng::from_str(d).unwrap())
        .collect()
}

fn kind<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {objects:#?}"))
}

#[test]
fn the_service_is_a_deployment_a_service_and_a_daemon_set_of_workers_with_engines() {
    let out = service(
        &[
            "--name",
            "evals",
            "--namespace",
            "bench",
            "--workers",
            "2",
            "--node-selector",
            "swtbench.io/worker=true",
            "--node-selector",
            "pool=eval",
        ],
        &SERVICE_RUN_FLAGS,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs = yaml_docs(&out.stdout);
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["Service", "Deployment", "DaemonSet"], "no database");
    assert!(docs.iter().all(|d| d["metadata"]["namespace"] == "bench"));
    let run_flags = "--dataset 'data/swt full.jsonl' --max-workers 3 --memory 2g --output-dir out";

    let svc = kind(&docs, "Service");
    assert_eq!(svc["metadata"]["name"], "evals");
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert_eq!(svc["spec"]["ports"][0]["port"], 8787);
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], "http");

    let dep = kind(&docs, "Deployment");
    assert_eq!(dep["apiVersion"], "apps/v1");
    assert_eq!(dep["metadata"]["name"], "evals-serve");
    assert_eq!(dep["spec"]["replicas"], 1);
    let labels = &dep["spec"]["template"]["metadata"]["labels"];
    for (k, v) in svc["spec"]["selector"].as_object().unwrap() {
        assert_eq!(&labels[k], v, "the Service selects the serve pod");
    }
    let pod = &dep["spec"]["template"]["spec"];
    let main = &pod["containers"][0];
    assert_eq!(main["image"], "ghcr.io/acme/swtbench:0.1");
    assert_eq!(
        main["command"][2],
        format!(
            "exec swtbench serve --listen 0.0.0.0:8787 --workers 0 --queue \"$SWTBENCH_QUEUE\" \
             --lease 60 --token-file /etc/swtbench/tokens -- {run_flags}"
        )
    );
    assert_eq!(main["ports"][0]["containerPort"], 8787);
    assert_eq!(main["ports"][0]["name"], "http");
    for probe in ["readinessProbe", "livenessProbe", "startupProbe"] {
        assert_eq!(main[probe]["httpGet"]["path"], "/healthz", "{probe}");
        assert_eq!(main[probe]["httpGet"]["port"], "http", "{probe}");
    }
    assert!(main["resources"]["requests"]["memory"].is_string());
    assert!(main["resources"]["limits"]["memory"].is_string());
    let queue = &main["env"][0];
    assert_eq!(queue["name"], "SWTBENCH_QUEUE");
    assert_eq!(queue["valueFrom"]["secretKeyRef"]["name"], "swtbench-queue");
    assert_eq!(queue["valueFrom"]["secretKeyRef"]["key"], "dsn");
    let tokens_mount = main["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["mountPath"] == "/etc/swtbench")
        .unwrap();
    let tokens = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == tokens_mount["name"])
        .unwrap();
    assert_eq!(tokens["secret"]["secretName"], "swtbench-tokens");
    assert_eq!(tokens["secret"]["items"][0]["key"], "tokens");
    assert_eq!(tokens["secret"]["items"][0]["path"], "tokens");
    assert!(pod.get("initContainers").is_none(), "serve runs no engine");

    let ds = kind(&docs, "DaemonSet");
    assert_eq!(ds["metadata"]["name"], "evals-workers");
    let pod = &ds["spec"]["template"]["spec"];
    let main = &pod["containers"][0];
    assert_eq!(
        main["command"][2],
        format!(
            "exec swtbench worker --queue \"$SWTBENCH_QUEUE\" --workers 2 --lease 60 -- {run_flags}"
        )
    );
    let env: Vec<&Value> = main["env"].as_array().unwrap().iter().collect();
    assert!(env.iter().any(|e| e["name"] == "SWTBENCH_QUEUE"
        && e["valueFrom"]["secretKeyRef"]["name"] == "swtbench-queue"));
    assert!(env
        .iter()
        .any(|e| e["name"] == "DOCKER_HOST"
            && e["value"] == "unix:///run/swtbench-engine/docker.sock"));
    let engine = &pod["initContainers"][0];
    assert_eq!(engine["image"], "docker:28-dind");
    assert_eq!(engine["restartPolicy"], "Always");
    assert_eq!(engine["securityContext"]["privileged"], true);
    // 2 jobs × 3 containers × 2 GiB + 2 builds × 2 GiB + 512 MiB of daemon.
    assert_eq!(engine["resources"]["limits"]["memory"], "16896Mi");
    assert_eq!(pod["nodeSelector"]["pool"], "eval");
    assert_eq!(pod["nodeSelector"]["swtbench.io/worker"], "true");
    assert_eq!(pod["terminationGracePeriodSeconds"], 90, "lease 60 + 30");

    // The JSON List says the same.
    let out = service(
        &[
            "--name",
            "evals",
            "--namespace",
            "bench",
            "--workers",
            "2",
            "--node-selector",
            "swtbench.io/worker=true",
            "--node-selector",
            "pool=eval",
            "--format",
            "json",
        ],
        &SERVICE_RUN_FLAGS,
    );
    assert!(out.status.success());
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"].as_array().unwrap(), &docs);
}

#[test]
fn the_service_workers_take_the_engine_given_and_the_lease_sets_their_grace() {
    let out = service(
        &["--engine", "podman", "--lease", "300"],
        &SERVICE_RUN_FLAGS,
    );
    assert!(out.status.success());
    let docs = yaml_docs(&out.stdout);
    let pod = &kind(&docs, "DaemonSet")["spec"]["template"]["spec"];
    assert_eq!(pod["initContainers"][0]["command"][0], "podman");
    assert_eq!(pod["terminationGracePeriodSeconds"], 330);
    assert!(pod.get("nodeSelector").is_none());
    assert!(pod["containers"][0]["command"][2]
        .as_str()
        .unwrap()
        .contains("--workers 1 --lease 300 --"));
    let out = service(&["--engine", "socket"], &SERVICE_RUN_FLAGS);
    let docs = yaml_docs(&out.stdout);
    let pod = &kind(&docs, "DaemonSet")["spec"]["template"]["spec"];
    assert!(pod.get("initContainers").is_none());
    assert!(pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["hostPath"]["path"] == "/var/run/docker.sock"));
}

#[test]
fn bad_service_input_is_refused_naming_the_flag() {
    let cases: [(&[&str], &[&str], &str); 7] = [
        (
            &["--name", "Bad_Name"],
            &SERVICE_RUN_FLAGS,
            "--name Bad_Name",
        ),
        (
            &["--queue-secret", "Queue"],
            &SERVICE_RUN_FLAGS,
            "--queue-secret",
        ),
        (
            &["--token-secret", "tok:a/b"],
            &SERVICE_RUN_FLAGS,
            "--token-secret",
        ),
        (
            &["--node-selector", "pool"],
            &SERVICE_RUN_FLAGS,
            "--node-selector",
        ),
        (
            &[],
            &["--memory", "2g", "--shard", "1/2"],
            "--shard cannot be given",
        ),
        (
            &[],
            &["--memory", "2g", "--no-such-flag"],
            "the run flags after `--`",
        ),
        (&[], &["--dataset", "lite"], "needs --memory"),
    ];
    for (extra, run_flags, says) in cases {
        let out = service(extra, run_flags);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{extra:?} {run_flags:?}: {stderr}"
        );
        assert!(stderr.contains(says), "{extra:?}: {stderr}");
        assert!(out.stdout.is_empty());
    }
}
