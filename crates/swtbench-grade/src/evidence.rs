//! Structured evidence: what the test runner itself reported, collected beside the log by
//! swtbench's evidence hook (`assets/evidence/hook.py`) and checked against the log.
//!
//! During a run the hook appends the runner's own results (pytest's phase reports, unittest's
//! outcomes for Django's runner) and the coverage tracer's data to a file the tests cannot name
//! in advance. Every line carries an HMAC-SHA256 under a secret the hook read and deleted before
//! the first test module was imported, chained over the previous line's MAC, so lines written by
//! anything without the secret, and lines removed from the middle, are told apart. After the run
//! the harness copies the file out of the container into the run directory
//! ([`EVIDENCE_FILE`]) with a record of how it was collected ([`EVIDENCE_META_FILE`]).
//!
//! [`read_evidence`] verifies and decodes the file; [`check_evidence`] compares it with the log's
//! status map and coverage dump and returns [`Reason`]s; [`Evidence::status_map`] is the status
//! map the runner reported, named as the run's log parser names tests (strict grading uses it).
//!
//! Pure: bytes in, data out.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use swtbench_core::{RunKind, StatusMap, TestStatus};

use crate::coverage::CoverageMap;
use crate::integrity::Reason;
use crate::parsers::Parser;

/// The evidence file in a run directory (the hook's output, byte for byte).
pub const EVIDENCE_FILE: &str = "test_evidence.jsonl";
/// How the evidence of a run was collected ([`EvidenceMeta`]).
pub const EVIDENCE_META_FILE: &str = "swtbench_evidence.json";
/// Version of [`EvidenceMeta`] and of the hook's record format.
pub const EVIDENCE_FORMAT: u32 = 1;
/// The largest evidence file the harness copies out of a container.
pub const EVIDENCE_LIMIT: u64 = 64 << 20;

/// What collecting a run's evidence found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceState {
    /// The hook wrote the evidence file; it is in the run directory.
    Collected,
    /// The image has no Python environment the hook could be put into (none of the known
    /// site-packages places exist): no evidence, nothing to check.
    NotInstrumented,
    /// The secret was still there after the run: no test runner the hook knows started (another
    /// runner, or the tests never ran). No evidence, nothing to check.
    NotTaken,
    /// The hook took the secret, but the evidence file was gone after the run.
    Missing,
    /// The evidence file was larger than [`EVIDENCE_LIMIT`].
    Oversized,
}

impl EvidenceState {
    pub fn as_str(self) -> &'static str {
        match self {
            EvidenceState::Collected => "collected",
            EvidenceState::NotInstrumented => "not_instrumented",
            EvidenceState::NotTaken => "not_taken",
            EvidenceState::Missing => "missing",
            EvidenceState::Oversized => "oversized",
        }
    }
}

/// `swtbench_evidence.json`: how a run's evidence was collected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceMeta {
    pub format: u32,
    pub state: EvidenceState,
    /// The run's secret (hex), to verify the MACs again later.
    pub secret: String,
    /// SHA-256 of [`EVIDENCE_FILE`] when collected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default)]
    pub bytes: u64,
    /// The site-packages directories the hook was put into.
    #[serde(default)]
    pub sites: Vec<String>,
}

impl EvidenceMeta {
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    pub fn from_json(text: &str) -> Result<EvidenceMeta, EvidenceFileError> {
        serde_json::from_str(text).map_err(|e| EvidenceFileError::Meta(e.to_string()))
    }
}

/// HMAC-SHA256 (RFC 2104), hex.
pub fn hmac_sha256_hex(key: &[u8], message: &[u8]) -> String {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(k.map(|b| b ^ 0x36));
    inner.update(message);
    let mut outer = Sha256::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    hex::encode(outer.finalize())
}

/// One pytest phase report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseReport {
    pub nodeid: String,
    /// The node id relative to the invocation directory (as pytest's summary prints it).
    pub rid: String,
    pub when: String,
    pub outcome: String,
    /// The test was marked xfail.
    pub xfail: bool,
}

/// A verified evidence file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Evidence {
    /// `pytest` or `unittest`.
    pub runner: Option<String>,
    /// The runner reached its end (pytest's session finished; the unittest process exited).
    pub complete: bool,
    /// The runner started processes (their coverage is not in the evidence).
    pub children: bool,
    /// Non-loopback addresses (`host:port`) the runner's process connected to, in order, each
    /// once (the hook keeps at most 16).
    pub network: Vec<String>,
    pub reports: Vec<PhaseReport>,
    /// Node ids whose collection failed.
    pub collect_errors: Vec<String>,
    /// unittest results: (the test's `str()`, outcome word as unittest prints it).
    pub unittest: Vec<(String, String)>,
    /// What the coverage tracer of the runner's process appended to its cover file.
    pub coverage: String,
    /// Lines that failed verification: (1-based line, what is wrong).
    pub problems: Vec<(usize, String)>,
}

/// Verifies and decodes an evidence file written under `secret`. Lines that fail verification
/// are left out of the data and listed in `problems`.
pub fn read_evidence(raw: &[u8], secret: &[u8]) -> Evidence {
    let mut ev = Evidence::default();
    let mut previous = String::new();
    let text = String::from_utf8_lossy(raw);
    for (i, line) in text.split('\n').enumerate() {
        let n = i + 1;
        if line.is_empty() {
            continue;
        }
        let Some((json, mac)) = line.rsplit_once('\t') else {
            ev.problems.push((n, "a line without a MAC".into()));
            continue;
        };
        let mut message = previous.clone().into_bytes();
        message.extend_from_slice(json.as_bytes());
        let expected = hmac_sha256_hex(secret, &message);
        // Whatever comes next chains over this line's claimed MAC.
        previous = mac.to_string();
        if expected != mac {
            ev.problems.push((
                n,
                "its MAC does not match (written without the run's secret, or a line before it \
                 was removed or changed)"
                    .into(),
            ));
            continue;
        }
        let Ok(serde_json::Value::Object(rec)) = serde_json::from_str::<serde_json::Value>(json)
        else {
            ev.problems.push((n, "not a JSON object".into()));
            continue;
        };
        let s = |k: &str| rec.get(k).and_then(|v| v.as_str()).map(str::to_string);
        match s("t").as_deref() {
            Some("start") if n == 1 => ev.runner = s("runner"),
            Some("start") => ev.problems.push((n, "a second start record".into())),
            Some("r") => {
                let nodeid = s("id").unwrap_or_default();
                ev.reports.push(PhaseReport {
                    rid: s("rid").unwrap_or_else(|| nodeid.clone()),
                    nodeid,
                    when: s("when").unwrap_or_default(),
                    outcome: s("o").unwrap_or_default(),
                    xfail: rec.get("x").and_then(|v| v.as_bool()).unwrap_or(false),
                })
            }
            Some("c") => ev.collect_errors.push(s("id").unwrap_or_default()),
            Some("u") => ev
                .unittest
                .push((s("name").unwrap_or_default(), s("o").unwrap_or_default())),
            Some("child") => ev.children = true,
            Some("net") => {
                let addr = s("addr").unwrap_or_default();
                if !ev.network.contains(&addr) {
                    ev.network.push(addr);
                }
            }
            Some("cov") => ev.coverage.push_str(&s("text").unwrap_or_default()),
            Some("end") => ev.complete = true,
            _ => ev.problems.push((n, "an unknown record".into())),
        }
        if n == 1 && ev.runner.is_none() {
            ev.problems
                .push((n, "the first record is not the hook's start record".into()));
        }
    }
    if ev.runner.is_none() && ev.problems.is_empty() {
        ev.problems.push((1, "no start record".into()));
    }
    ev
}

impl Evidence {
    /// The status map the runner reported, with tests named as `parser` names them in a log:
    /// the results are rendered as the runner's summary would print them and parsed with the
    /// same parser, so its quirks (names cut at a space, Django's status of the next test, …)
    /// apply alike. `None` for a parser without an evidence form (sympy, reproduction scripts).
    pub fn status_map(&self, parser: Parser) -> Option<StatusMap> {
        match parser {
            Parser::Pytest
            | Parser::PytestOptions
            | Parser::PytestV2
            | Parser::Matplotlib
            | Parser::Seaborn => Some(parser.parse(&self.pytest_summary())),
            Parser::Django => Some(parser.parse(&self.unittest_text())),
            Parser::Sympy | Parser::Sympy12 | Parser::ReproductionScript => None,
        }
    }

    /// pytest's short test summary as `-rA` prints it for these results (PASSED lines, then
    /// ERROR, then FAILED: the parser keeps the last status of a name, as it does in the log).
    pub fn pytest_summary(&self) -> String {
        let mut order: Vec<&str> = Vec::new();
        let mut phases: BTreeMap<&str, Vec<&PhaseReport>> = BTreeMap::new();
        for r in &self.reports {
            let e = phases.entry(r.rid.as_str()).or_default();
            if e.is_empty() {
                order.push(&r.rid);
            }
            e.push(r);
        }
        let (mut passed, mut errors, mut failed) = (Vec::new(), Vec::new(), Vec::new());
        for id in order {
            let reports = &phases[id];
            let call_failed = reports
                .iter()
                .any(|r| r.when == "call" && r.outcome == "failed");
            let other_failed = reports
                .iter()
                .any(|r| r.when != "call" && r.outcome == "failed");
            let call_passed = reports
                .iter()
                .any(|r| r.when == "call" && r.outcome == "passed" && !r.xfail);
            if call_passed {
                passed.push(id);
            }
            if other_failed {
                errors.push(id);
            }
            if call_failed {
                failed.push(id);
            }
        }
        errors.extend(self.collect_errors.iter().map(String::as_str));
        let mut out = String::new();
        for (word, ids) in [("PASSED", passed), ("ERROR", errors), ("FAILED", failed)] {
            for id in ids {
                out.push_str(word);
                out.push(' ');
                out.push_str(id);
                out.push('\n');
            }
        }
        out
    }

    /// unittest's verbose lines for these results (`name ... ok`), then the `FAIL:`/`ERROR:`
    /// headers of the failure report, as Django's runner prints them.
    pub fn unittest_text(&self) -> String {
        let mut out = String::new();
        let mut headers = String::new();
        for (name, outcome) in &self.unittest {
            match outcome.as_str() {
                "FAIL" | "subtest failed" => headers.push_str(&format!("FAIL: {name}\n")),
                "ERROR" => headers.push_str(&format!("ERROR: {name}\n")),
                _ => {}
            }
            if outcome != "subtest failed" {
                out.push_str(&format!("{name} ... {outcome}\n"));
            }
        }
        out.push_str(&headers);
        out
    }

    /// The coverage the evidence holds, summed per file and line as the dump's parser sums it.
    pub fn coverage_map(&self) -> CoverageMap {
        let mut text = String::from("+ cat coverage.cover\n");
        text.push_str(&self.coverage);
        crate::coverage::parse_dump_text(&text)
    }
}

/// One run's evidence as the grading reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RunEvidence {
    /// No evidence was collected and none was expected (older outputs, runners and images the
    /// hook does not serve).
    #[default]
    None,
    /// Expected but missing or unreadable: the state says why.
    Lost(EvidenceState),
    Collected(Evidence),
}

/// What is wrong with a run's evidence files themselves (the caller says which run).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceFileError {
    /// The meta file is not the hook's JSON.
    #[error("{0}")]
    Meta(String),
    #[error("evidence format {0} (this swtbench reads {EVIDENCE_FORMAT})")]
    Format(u32),
    #[error("{EVIDENCE_FILE} is missing")]
    RawMissing,
    #[error(
        "{EVIDENCE_FILE} is not the file collected (SHA-256 {found}, recorded {})",
        recorded.as_deref().unwrap_or("none")
    )]
    NotCollected {
        found: String,
        recorded: Option<String>,
    },
    #[error("secret: {0}")]
    Secret(String),
}

impl RunEvidence {
    /// The evidence of a run from its two files (`meta` = [`EVIDENCE_META_FILE`], `raw` =
    /// [`EVIDENCE_FILE`]); problems with the files themselves are `Err` (the caller says where).
    pub fn from_files(
        meta: Option<&str>,
        raw: Option<&[u8]>,
    ) -> Result<RunEvidence, EvidenceFileError> {
        let Some(meta) = meta else {
            return Ok(RunEvidence::None);
        };
        let meta = EvidenceMeta::from_json(meta)?;
        if meta.format != EVIDENCE_FORMAT {
            return Err(EvidenceFileError::Format(meta.format));
        }
        match meta.state {
            EvidenceState::NotInstrumented | EvidenceState::NotTaken => Ok(RunEvidence::None),
            EvidenceState::Missing | EvidenceState::Oversized => Ok(RunEvidence::Lost(meta.state)),
            EvidenceState::Collected => {
                let raw = raw.ok_or(EvidenceFileError::RawMissing)?;
                let sha = swtbench_core::hash::sha256_hex(raw);
                if meta.sha256.as_deref() != Some(sha.as_str()) {
                    return Err(EvidenceFileError::NotCollected {
                        found: sha,
                        recorded: meta.sha256.clone(),
                    });
                }
                let secret = hex::decode(&meta.secret)
                    .map_err(|e| EvidenceFileError::Secret(e.to_string()))?;
                Ok(RunEvidence::Collected(read_evidence(raw, &secret)))
            }
        }
    }

    pub fn collected(&self) -> Option<&Evidence> {
        match self {
            RunEvidence::Collected(e) if e.problems.is_empty() => Some(e),
            _ => None,
        }
    }
}

fn passes(s: &TestStatus) -> bool {
    matches!(s, TestStatus::Passed)
}

fn decisive(s: &TestStatus) -> bool {
    matches!(
        s,
        TestStatus::Passed | TestStatus::Failed | TestStatus::Error
    )
}

/// Compares one run's log with its evidence. `log` is the run's parsed status map, `dump` its
/// parsed coverage dump (`None`: the log has no dump section), `selected` its test directives
/// (for results the runner never reported).
pub fn check_evidence(
    kind: RunKind,
    parser: Parser,
    log: &StatusMap,
    dump: Option<&CoverageMap>,
    evidence: &RunEvidence,
    selected: Option<&[String]>,
) -> Vec<Reason> {
    let ev = match evidence {
        RunEvidence::None => return Vec::new(),
        RunEvidence::Lost(state) => {
            return vec![Reason::EvidenceLost {
                run: kind,
                state: state.as_str().to_string(),
            }]
        }
        RunEvidence::Collected(ev) => ev,
    };
    let mut reasons = Vec::new();
    if let Some((line, problem)) = ev.problems.first() {
        reasons.push(Reason::EvidenceTampered {
            run: kind,
            evidence_line: *line,
            problem: if ev.problems.len() > 1 {
                format!("{problem} (and {} more line(s))", ev.problems.len() - 1)
            } else {
                problem.clone()
            },
        });
        return reasons;
    }
    if let Some(map) = ev.status_map(parser) {
        for (test, status) in log {
            if !decisive(status) {
                continue;
            }
            match map.get(test) {
                Some(reported) if decisive(reported) && passes(reported) != passes(status) => {
                    reasons.push(Reason::EvidenceDisagrees {
                        run: kind,
                        test: test.clone(),
                        log: status.as_str().to_string(),
                        evidence: reported.as_str().to_string(),
                    })
                }
                None if ev.complete
                    && passes(status)
                    && parser != Parser::Django
                    && test.split_once("::").is_some_and(|(file, _)| {
                        selected.is_none_or(|s| s.is_empty() || crate::integrity::selects(s, file))
                    }) =>
                {
                    reasons.push(Reason::EvidenceUnknownTest {
                        run: kind,
                        test: test.clone(),
                    })
                }
                _ => {}
            }
        }
    }
    if let Some(dump) = dump {
        let traced = ev.coverage_map();
        let mut files: BTreeSet<&String> = BTreeSet::new();
        for (file, lines) in &traced {
            let in_dump = dump.get(file);
            if lines
                .iter()
                .any(|(l, n)| in_dump.and_then(|d| d.get(l)).is_none_or(|m| m < n))
            {
                files.insert(file);
            }
        }
        if !ev.children && !traced.is_empty() {
            for (file, lines) in dump {
                let t = traced.get(file);
                if lines
                    .iter()
                    .any(|(l, n)| *n > 0 && t.and_then(|t| t.get(l)).is_none_or(|m| m < n))
                {
                    files.insert(file);
                }
            }
        }
        for file in files {
            reasons.push(Reason::CoverageFileDisagrees {
                run: kind,
                file: file.clone(),
            });
        }
    }
    reasons
}

/// A run's evidence from its two files, with the reason to give when they cannot be read as
/// collected (edited after the run, another format).
pub fn load(
    kind: RunKind,
    meta: Option<&[u8]>,
    raw: Option<&[u8]>,
) -> (RunEvidence, Option<Reason>) {
    let meta = meta.map(String::from_utf8_lossy);
    match RunEvidence::from_files(meta.as_deref(), raw) {
        Ok(ev) => (ev, None),
        Err(problem) => (
            RunEvidence::None,
            Some(Reason::EvidenceTampered {
                run: kind,
                evidence_line: 0,
                problem: problem.to_string(),
            }),
        ),
    }
}

/// [`check_evidence`] for the six runs of a graded instance (logs and coverage dumps in
/// [`RunKind::ALL`] order), with the selections the log checks use.
pub fn check_instance(
    ctx: &crate::integrity::CheckContext<'_>,
    logs: &[StatusMap; 6],
    dumps: &[CoverageMap; 6],
    evidence: &[RunEvidence; 6],
) -> Vec<Reason> {
    if evidence.iter().all(|e| *e == RunEvidence::None) {
        return Vec::new();
    }
    let selections = crate::integrity::Selections::of(ctx);
    let mut reasons = Vec::new();
    for (i, kind) in RunKind::ALL.into_iter().enumerate() {
        let selected = selections.of_run(kind);
        let dump = (!dumps[i].is_empty()).then_some(&dumps[i]);
        reasons.extend(check_evidence(
            kind,
            ctx.parser,
            &logs[i],
            dump,
            &evidence[i],
            selected,
        ));
    }
    reasons
}

/// The runs whose test runner connected to the network, with the addresses
/// (`run: host:port, …`), in [`RunKind::ALL`] order: a verdict that depended on the internet.
pub fn network_use(evidence: &[RunEvidence; 6]) -> Vec<String> {
    RunKind::ALL
        .into_iter()
        .zip(evidence)
        .filter_map(|(k, e)| {
            let ev = e.collected()?;
            (!ev.network.is_empty()).then(|| format!("{}: {}", k.as_str(), ev.network.join(", ")))
        })
        .collect()
}

/// The runs (in [`RunKind::ALL`] order) without verified evidence.
pub fn without_evidence(evidence: &[RunEvidence; 6]) -> Vec<RunKind> {
    RunKind::ALL
        .into_iter()
        .zip(evidence)
        .filter(|(_, e)| e.collected().is_none())
        .map(|(k, _)| k)
        .collect()
}

/// The status maps strict grading uses: a run's evidence map where its evidence was collected
/// and verified, else its log's.
pub fn strict_maps(
    parser: Parser,
    logs: &[StatusMap; 6],
    evidence: &[RunEvidence; 6],
) -> [StatusMap; 6] {
    std::array::from_fn(|i| {
        evidence[i]
            .collected()
            .and_then(|e| e.status_map(parser))
            .unwrap_or_else(|| logs[i].clone())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef";

    fn write(records: &[&str]) -> String {
        let mut prev = String::new();
        let mut out = String::new();
        for r in records {
            let mut m = prev.clone().into_bytes();
            m.extend_from_slice(r.as_bytes());
            let mac = hmac_sha256_hex(SECRET, &m);
            out.push_str(&format!("{r}\t{mac}\n"));
            prev = mac;
        }
        out
    }

    fn honest() -> String {
        write(&[
            r#"{"pid":7,"runner":"pytest","t":"start"}"#,
            r#"{"id":"tests/t.py::test_a","o":"passed","rid":"tests/t.py::test_a","t":"r","when":"setup","x":false}"#,
            r#"{"id":"tests/t.py::test_a","o":"passed","rid":"tests/t.py::test_a","t":"r","when":"call","x":false}"#,
            r#"{"id":"tests/t.py::test_b[a b]","o":"failed","rid":"tests/t.py::test_b[a b]","t":"r","when":"call","x":false}"#,
            r#"{"id":"tests/t.py::test_c","o":"passed","rid":"tests/t.py::test_c","t":"r","when":"call","x":false}"#,
            r#"{"id":"tests/t.py::test_c","o":"failed","rid":"tests/t.py::test_c","t":"r","when":"teardown","x":false}"#,
            r#"{"id":"tests/t.py::test_x","o":"skipped","rid":"tests/t.py::test_x","t":"r","when":"call","x":true}"#,
            r#"{"exit":1,"t":"end"}"#,
            r#"{"t":"cov","text":"{\"/testbed/m.py\": {\"1\": 1, \"2\": 0}}\n"}"#,
        ])
    }

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        assert_eq!(
            hmac_sha256_hex(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // A key longer than a block is hashed first (RFC 4231 case 6).
        assert_eq!(
            hmac_sha256_hex(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            ),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn network_records_name_the_runs_and_addresses_that_used_the_network() {
        let with_net = write(&[
            r#"{"pid":7,"runner":"pytest","t":"start"}"#,
            r#"{"addr":"1.1.1.1:80","t":"net"}"#,
            r#"{"addr":"[2606:4700::1111]:443","t":"net"}"#,
            r#"{"addr":"1.1.1.1:80","t":"net"}"#,
            r#"{"exit":0,"t":"end"}"#,
        ]);
        let ev = read_evidence(with_net.as_bytes(), SECRET);
        assert_eq!(ev.problems, vec![]);
        assert_eq!(ev.network, ["1.1.1.1:80", "[2606:4700::1111]:443"]);
        assert!(read_evidence(honest().as_bytes(), SECRET)
            .network
            .is_empty());
        let none = || RunEvidence::Collected(read_evidence(honest().as_bytes(), SECRET));
        let used = RunEvidence::Collected(ev);
        let runs = [none(), used, none(), none(), none(), none()];
        assert_eq!(
            network_use(&runs),
            ["pred_post: 1.1.1.1:80, [2606:4700::1111]:443"]
        );
        let quiet = [none(), none(), none(), none(), none(), none()];
        assert!(network_use(&quiet).is_empty());
    }

    #[test]
    fn an_honest_file_reads_back_as_the_runner_reported() {
        let ev = read_evidence(honest().as_bytes(), SECRET);
        assert_eq!(ev.problems, vec![]);
        assert_eq!(ev.runner.as_deref(), Some("pytest"));
        assert!(ev.complete && !ev.children);
        let map = ev.status_map(Parser::Pytest).unwrap();
        assert_eq!(map.get("tests/t.py::test_a"), Some(&TestStatus::Passed));
        // Cut at the space, as the log parser cuts the summary line.
        assert_eq!(map.get("tests/t.py::test_b[a"), Some(&TestStatus::Failed));
        // Passed, then an error in teardown: the summary's ERROR line comes later.
        assert_eq!(map.get("tests/t.py::test_c"), Some(&TestStatus::Error));
        assert_eq!(
            map.get("tests/t.py::test_x"),
            None,
            "xfail is no status word"
        );
        assert_eq!(ev.coverage_map()["m.py"][&1], 1);
    }

    #[test]
    fn a_forged_or_removed_line_breaks_the_chain() {
        let good = honest();
        let mut forged = good.clone();
        forged.push_str("{\"id\":\"tests/t.py::test_z\",\"o\":\"passed\",\"t\":\"r\",\"when\":\"call\"}\tdeadbeef\n");
        let ev = read_evidence(forged.as_bytes(), SECRET);
        assert_eq!(ev.problems.len(), 1);
        assert_eq!(ev.problems[0].0, 10);
        assert!(!ev
            .status_map(Parser::Pytest)
            .unwrap()
            .contains_key("tests/t.py::test_z"));

        let lines: Vec<&str> = good.lines().collect();
        let removed = format!("{}\n{}\n", lines[0], lines[2..].join("\n"));
        let ev = read_evidence(removed.as_bytes(), SECRET);
        assert_eq!(ev.problems[0].0, 2, "{:?}", ev.problems);

        let ev = read_evidence(good.as_bytes(), b"another secret");
        assert!(!ev.problems.is_empty());
        let ev = read_evidence(b"", SECRET);
        assert!(!ev.problems.is_empty(), "an empty file has no start record");
    }

    fn log(lines: &[(&str, TestStatus)]) -> StatusMap {
        lines
            .iter()
            .map(|(t, s)| (t.to_string(), s.clone()))
            .collect()
    }

    #[test]
    fn the_log_is_checked_against_the_evidence() {
        let ev = RunEvidence::Collected(read_evidence(honest().as_bytes(), SECRET));
        let sel = vec!["tests/t.py".to_string()];
        let kind = RunKind::PredPost;
        let honest_log = log(&[
            ("tests/t.py::test_a", TestStatus::Passed),
            ("tests/t.py::test_b[a", TestStatus::Failed),
            ("tests/t.py::test_c", TestStatus::Error),
            ("[1]", TestStatus::Skipped),
        ]);
        let dump: CoverageMap = [("m.py".to_string(), [(1, 1), (2, 0)].into_iter().collect())]
            .into_iter()
            .collect();
        assert_eq!(
            check_evidence(
                kind,
                Parser::Pytest,
                &honest_log,
                Some(&dump),
                &ev,
                Some(&sel)
            ),
            vec![]
        );
        let mut forged = honest_log.clone();
        forged.insert("tests/t.py::test_b[a".into(), TestStatus::Passed);
        forged.insert("tests/t.py::test_ghost".into(), TestStatus::Passed);
        forged.insert("elsewhere.py::test_inner".into(), TestStatus::Passed);
        let mut more = dump.clone();
        more.get_mut("m.py").unwrap().insert(2, 5);
        let reasons = check_evidence(kind, Parser::Pytest, &forged, Some(&more), &ev, Some(&sel));
        let checks: Vec<(&str, Option<&str>)> =
            reasons.iter().map(|r| (r.check(), r.test())).collect();
        assert_eq!(
            checks,
            vec![
                ("evidence_disagrees", Some("tests/t.py::test_b[a")),
                ("evidence_unknown_test", Some("tests/t.py::test_ghost")),
                ("coverage_file_disagrees", None),
            ]
        );
        // Coverage the tracer wrote that the dump lacks.
        let reasons = check_evidence(
            kind,
            Parser::Pytest,
            &honest_log,
            Some(&CoverageMap::new()),
            &ev,
            Some(&sel),
        );
        assert_eq!(reasons.len(), 1, "{reasons:?}");
        assert_eq!(
            check_evidence(
                kind,
                Parser::Pytest,
                &forged,
                None,
                &RunEvidence::None,
                None
            ),
            vec![]
        );
        assert_eq!(
            check_evidence(
                kind,
                Parser::Pytest,
                &forged,
                None,
                &RunEvidence::Lost(EvidenceState::Missing),
                None
            )[0]
            .check(),
            "evidence_lost"
        );
    }

    #[test]
    fn django_results_render_through_the_django_parser() {
        let ev = read_evidence(
            write(&[
                r#"{"pid":7,"runner":"unittest","t":"start"}"#,
                r#"{"name":"test_a (app.tests.T)","o":"ok","t":"u"}"#,
                r#"{"name":"test_b (app.tests.T)","o":"FAIL","t":"u"}"#,
                r#"{"name":"test_c (app.tests.T)","o":"ERROR","t":"u"}"#,
                r#"{"atexit":true,"exit":null,"t":"end"}"#,
            ])
            .as_bytes(),
            SECRET,
        );
        let map = ev.status_map(Parser::Django).unwrap();
        assert_eq!(map.get("test_a (app.tests.T)"), Some(&TestStatus::Passed));
        assert_eq!(map.get("test_b (app.tests.T)"), Some(&TestStatus::Failed));
        assert_eq!(map.get("test_c (app.tests.T)"), Some(&TestStatus::Error));
    }

    #[test]
    fn meta_round_trips_and_a_changed_file_is_refused() {
        let raw = honest();
        let meta = EvidenceMeta {
            format: EVIDENCE_FORMAT,
            state: EvidenceState::Collected,
            secret: hex::encode(SECRET),
            sha256: Some(swtbench_core::hash::sha256_hex(&raw)),
            bytes: raw.len() as u64,
            sites: vec!["/opt/swtbench-venv/lib/python3.11/site-packages".into()],
        };
        let text = meta.to_json();
        assert_eq!(EvidenceMeta::from_json(&text).unwrap(), meta);
        let ev = RunEvidence::from_files(Some(&text), Some(raw.as_bytes())).unwrap();
        assert!(ev.collected().is_some());
        let err = RunEvidence::from_files(Some(&text), Some(b"x")).unwrap_err();
        assert!(
            matches!(err, EvidenceFileError::NotCollected { .. })
                && err.to_string().contains("not the file collected"),
            "{err}"
        );
        assert_eq!(
            RunEvidence::from_files(None, None).unwrap(),
            RunEvidence::None
        );
    }
}
