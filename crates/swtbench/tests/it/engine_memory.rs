//! Memory on the real engine: a run whose test prints far more than it should keep in memory
//! (64 MiB, `--max-output 0`) ends with the whole output on disk, byte for byte what the test
//! printed, its hash in the key file, the instance graded, no container left, and the `swtbench`
//! process's peak resident set size (the kernel's `VmHWM` high-water mark) well below the
//! output's size: the
//! output goes to disk while the script prints, and grading and the HTML page read it piece by
//! piece.
//!
//! Needs Docker and the fixture base image (`scripts/base-image`); without them it says why and
//! passes. The fixture images are built once for all engine tests and kept (see
//! `engine_run.rs`). The bench `benches/memory.rs` measures the same at 500 MB and a 50 MB patch.

use std::path::PathBuf;

use crate::engine_fixture::{bin, containers_of, Fixture};
use crate::support::memory;

const OUTPUT_BYTES: usize = 64 << 20;

#[test]
fn engine_a_loud_test_keeps_its_whole_output_on_disk_and_out_of_memory() {
    require_engine!();
    let bin = PathBuf::from(bin());
    let fx = Fixture::new();
    let tmp = &fx.root;
    let predictions = memory::loud_prediction(&fx, OUTPUT_BYTES);
    let run_id = format!("engine-memory-{}", std::process::id());
    let out_dir = tmp.join("out");
    let (code, peak) = memory::run_measured(
        &bin,
        &fx,
        &predictions,
        &run_id,
        &out_dir,
        &["--max-output", "0"],
    );
    assert!(containers_of(&run_id).is_empty(), "containers left");
    assert_eq!(code, 0, "swtbench run failed");

    let logs = out_dir.join("run_instance_swt_logs").join(&run_id);
    let line = format!("{}\n", memory::loud_line());
    let printed = memory::loud_chunks(OUTPUT_BYTES) * memory::LOUD_CHUNK_LINES;
    for run in ["pred_pre", "pred_post"] {
        let dir = logs
            .join(format!("{run}__swtbench-fixture-model"))
            .join(memory::INSTANCE);
        let output = std::fs::read(dir.join("test_output.txt")).unwrap();
        let text = String::from_utf8(output.clone()).unwrap();
        // pytest shows the captured output once, in one piece, in its -rA summary.
        let block = line.repeat(printed);
        assert!(
            text.contains(&block),
            "{run}: the {} bytes printed are not all there (file of {} bytes)",
            block.len(),
            output.len()
        );
        assert_eq!(text.matches(line.as_str()).count(), printed, "{run}");
        assert!(!text.contains("bytes of output omitted]"), "{run}: cut");
        let key: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("swtbench_key.json")).unwrap()).unwrap();
        assert_eq!(
            key["output_sha256"].as_str().unwrap(),
            swtbench_core::hash::sha256_hex(&output),
            "{run}: the key file's hash is the output's"
        );
        assert_eq!(key["result"]["omitted_bytes"], 0, "{run}");
    }
    let report: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            logs.join("swtbench-fixture-model")
                .join(memory::INSTANCE)
                .join("report.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let r = &report[memory::INSTANCE];
    assert_eq!(r["patch_successfully_applied"], true, "{report}");
    let p2p = r["tests_pred"]["PASS_TO_PASS"].as_array().unwrap();
    assert!(
        p2p.iter()
            .any(|t| t == "tests/test_model_loud.py::test_loud"),
        "the loud test was graded: {report}"
    );
    eprintln!(
        "peak RSS {:.1} MB for {} MB of output per run",
        peak as f64 / f64::from(1 << 20),
        OUTPUT_BYTES >> 20
    );
    // What is held is bounded, not the output: the process itself (~17 MB), the runtime, the
    // 1 MiB read buffers of the streamed grading and the integrity checks' window of the
    // output's last 2 MiB (swtbench_grade::instance::CHECKED_TAIL_BYTES).
    assert!(
        peak < OUTPUT_BYTES as u64,
        "peak RSS {peak} bytes is not below the {OUTPUT_BYTES} bytes printed"
    );
}
