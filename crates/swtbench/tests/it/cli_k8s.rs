//! `swtbench k8s manifest`: the objects it prints parse as YAML and as a JSON v1 List, with the
//! run flags in every pod's command, the shard from the completion index, the claim, the
//! sized engine and the merge's wait; flags it sets itself are refused. No cluster is involved.

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
