//! `run --repeat` on the real engine with a fixture instance: a deliberately flaky test (its
//! verdict comes from a counter on the host, outside the test's tree, that it reads over the
//! network: it fails in repeats 1 and 3 and passes in 2 and 4) is found flaky by `--repeat 4`;
//! the stable test next to it is not, and the instance is resolved in 0 of 4 repeats either way.
//!
//! Needs what engine_run.rs needs (Docker, the fixture base image).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::engine_fixture::{
    self, containers_of, new_file_patch, unique_run_id, Fixture, MODEL_DIR,
};
use serde_json::Value;

/// The host's address on the engine's default bridge, as containers see it.
fn bridge_gateway() -> String {
    let out = Command::new("ip")
        .args(["-4", "-o", "addr", "show", "docker0"])
        .output();
    out.ok()
        .and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            let addr = text
                .split_whitespace()
                .skip_while(|w| *w != "inet")
                .nth(1)?;
            Some(addr.split('/').next()?.to_string())
        })
        .unwrap_or_else(|| "172.17.0.1".into())
}

/// A counter on the host: every HTTP request gets the next number (from 1).
fn counter() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut buf = [0u8; 1024];
            let _ = conn.read(&mut buf);
            let n = h.fetch_add(1, Ordering::SeqCst) + 1;
            let body = n.to_string();
            let _ = write!(
                conn,
                "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, hits)
}

#[test]
fn engine_repeat_finds_a_flaky_test_and_not_a_stable_one() {
    require_engine!();
    let fx = Fixture::new();
    let (port, hits) = counter();
    let gateway = bridge_gateway();
    let lines: Vec<String> = [
        "import urllib.request".to_string(),
        "from calc.ops import add".into(),
        String::new(),
        String::new(),
        "def test_flaky_counter():".into(),
        format!(
            "    n = int(urllib.request.urlopen('http://{gateway}:{port}/', timeout=20).read())"
        ),
        // Counts 1, 2 (repeat 1: pre and post) fail, 3, 4 pass, 5, 6 fail, 7, 8 pass.
        "    assert n % 4 in (0, 3)".into(),
        String::new(),
        String::new(),
        "def test_stable():".into(),
        "    assert add(1, 1) == 2".into(),
    ]
    .to_vec();
    let patch = new_file_patch("test_model_flaky.py", &lines);
    let predictions = fx.root.join("flaky.jsonl");
    let record = serde_json::json!({
        "instance_id": "swtfix__calc-1",
        "model_name_or_path": MODEL_DIR,
        "model_patch": patch,
    });
    std::fs::write(&predictions, format!("{record}\n")).unwrap();
    let (run_id, out) = (unique_run_id("repeat"), fx.root.join("out"));
    let mut args = fx.run_args(
        &run_id,
        &out,
        "predictions.jsonl",
        &[
            "--repeat",
            "4",
            "--allow-network",
            "--instance-ids",
            "swtfix__calc-1",
        ],
    );
    let p = args.iter().position(|a| a == "--predictions").unwrap();
    args[p + 1] = predictions.display().to_string();
    let o = engine_fixture::run(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        hits.load(Ordering::SeqCst),
        8,
        "two model runs in each of 4 repeats"
    );

    let results = out.join("evaluation_results");
    let read = |name: &str| -> Value {
        let path = results.join(format!("{MODEL_DIR}.{run_id}.{name}.json"));
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    };
    let stability = read("stability");
    eprintln!("{stability:#}");
    let inst = &stability["instances"]["swtfix__calc-1"];
    assert_eq!(stability["repeats"], 4);
    assert_eq!(inst["graded"], 4);
    let flaky: Vec<&str> = inst["flaky"]["pred"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(flaky.len(), 1, "{flaky:?}");
    assert!(flaky[0].contains("test_flaky_counter"), "{flaky:?}");
    assert!(inst["flaky"].get("gold").is_none() && inst["flaky"].get("base").is_none());
    let list = read("flaky");
    let listed: Vec<&str> = list["swtfix__calc-1"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(listed, flaky, "the flaky list holds the flaky test only");
    // Every repeat executed its runs (nothing reused across repeats).
    for k in 2..=4 {
        let dir = out.join("repeats").join(&run_id).join(k.to_string());
        assert!(dir
            .join("run_instance_swt_logs")
            .join(&run_id)
            .join(MODEL_DIR)
            .join("swtfix__calc-1")
            .join("report.json")
            .is_file());
    }
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("1 flaky test(s) in 1 instance(s)"),
        "{stderr}"
    );
    // The flaky list, given back: the flaky test is in no transition, the stable one is.
    let flaky_file = results.join(format!("{MODEL_DIR}.{run_id}.flaky.json"));
    let mut regrade = args.clone();
    let r = regrade.iter().position(|a| a == "--repeat").unwrap();
    regrade.drain(r..r + 2);
    regrade.extend(["--skip-eval".to_string(), "--flaky-list".into()]);
    regrade.push(flaky_file.display().to_string());
    let o = engine_fixture::run(&regrade);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = std::fs::read_to_string(
        engine_fixture::report_dir(&out, &run_id)
            .join("swtfix__calc-1")
            .join("report.json"),
    )
    .unwrap();
    assert!(!report.contains("test_flaky_counter"), "{report}");
    assert!(report.contains("test_stable"), "{report}");
    let run_report = read_run_report(&results, &run_id);
    assert!(
        run_report["run_parameters"]["flaky list"]
            .as_str()
            .is_some_and(|t| t.starts_with("1 test(s) of 1 instance(s)")),
        "{run_report}"
    );
    assert!(containers_of(&run_id).is_empty());
}

fn read_run_report(results: &std::path::Path, run_id: &str) -> Value {
    let path = results.join(format!("{MODEL_DIR}.{run_id}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
